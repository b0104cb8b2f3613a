import importlib


def __getattr__(name):
    return importlib.import_module("." + name, __name__)
