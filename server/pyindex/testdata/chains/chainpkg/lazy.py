from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chainpkg._registry import register as served

bound = 1


def __getattr__(name):
    if name == "served":
        from chainpkg._registry import register

        return register
    raise AttributeError(name)
