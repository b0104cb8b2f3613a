from xr.core import *  # noqa: F403


def c():
    return get_obj(1, 2) + helper()  # noqa: F405
