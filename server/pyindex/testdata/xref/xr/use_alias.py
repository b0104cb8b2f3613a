from xr.core import get_obj as go
from xr import core


def a():
    return go(1, 2)


def b():
    return core.get_obj(1, 2)
