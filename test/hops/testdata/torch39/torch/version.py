"""The version of this torch-shaped package."""

__version__ = "1.10.2+torch39"
git_version = None
