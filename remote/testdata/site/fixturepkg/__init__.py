"""A small package for torchlsp's remote tests."""

import functools

__version__ = "0.3.1"


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


def plain(a, b=2):
    """Adds two numbers.

    More text that is not part of the summary.
    """
    return a + b


@_logged
@functools.lru_cache(
    maxsize=None,
)
def decorated(x):
    """Doubles x."""
    return 2 * x


class Widget:
    """A widget."""

    def method(self, n: int) -> int:
        return n


def slow(seconds):
    import time

    time.sleep(seconds)
    return seconds
