"""A fixture module shaped like torch's: decorators, overloads, nesting."""
import functools


def _disable(fn):
    return fn


@_disable
@functools.lru_cache(maxsize=None)
def checkpoint(function, *args):
    """Runs function."""
    if args:
        return function(*args)

    return function()


class Linear:
    """A layer."""

    def __init__(self, n):
        self.n = n

    def forward(self, x):
        return x * self.n


relu = Linear
