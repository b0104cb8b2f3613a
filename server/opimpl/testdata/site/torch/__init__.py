"""A torch-shaped tree for opimpl's tests: the spellings torch uses to put
ops in its compiler-stack tables, each line that does marked with what the
scanner must find there ("want:"), and the first lines of functions named
from elsewhere marked too ("anchor:"). It imports (standard library only),
so the engine's tests can mirror it from a real interpreter."""

from torch.version import __version__ as __version__


class Tensor:
    """A tensor."""

    def add(self, other):
        """Adds other to self."""
        return self

    def mul(self, other):
        return self


def add(input, other, *, alpha=1):
    """Adds other, scaled by alpha, to input."""
    return input


def randn(*size):
    """Random numbers from a normal distribution."""
    return Tensor()
