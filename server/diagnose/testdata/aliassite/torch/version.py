__version__ = "2.98.0+alias"
