from .alls import __all__ as _alls_all

__all__ = ["listed"] + _alls_all

listed = 1
unlisted = 2
_private = 3
