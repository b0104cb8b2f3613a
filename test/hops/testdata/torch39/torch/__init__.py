"""A small torch-shaped package for Python 3.9, with numpy underneath.

It stands in for an older torch in the bullseye Docker image of the hop
tests: importable, with tensors that do enough arithmetic for the threaded
repro's stand-in workload, and, like torch before 2.0, no torch.compile.
"""

from typing import Optional, Sequence

import numpy as _np

from torch.version import __version__ as __version__
from torch._tensor import Tensor

float32 = _np.float32
float64 = _np.float64

__all__ = ["Tensor", "Generator", "tensor", "ones", "zeros", "randn", "relu", "add", "mul", "matmul",
           "allclose", "equal", "is_tensor", "manual_seed"]


class Generator:
    """A source of pseudo-random numbers with its own seed."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        self._state = _np.random.RandomState(0)

    def manual_seed(self, seed: int) -> "Generator":
        self._state = _np.random.RandomState(seed % (2 ** 32))
        return self


_default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seeds the default generator."""
    return _default_generator.manual_seed(seed)


def tensor(data, dtype=None) -> Tensor:
    """Constructs a tensor from data."""
    return Tensor(data, dtype=dtype)


def ones(*size: int, dtype=float32) -> Tensor:
    """Returns a tensor filled with ones."""
    return _np.ones(_shape(size), dtype=dtype).view(Tensor)


def zeros(*size: int, dtype=float32) -> Tensor:
    """Returns a tensor filled with zeros."""
    return _np.zeros(_shape(size), dtype=dtype).view(Tensor)


def randn(*size: int, generator: Optional[Generator] = None, dtype=float32) -> Tensor:
    """Returns a tensor of normally distributed random numbers."""
    g = generator if generator is not None else _default_generator
    return g._state.standard_normal(_shape(size)).astype(dtype).view(Tensor)


def relu(input: Tensor) -> Tensor:
    """Applies the rectified linear unit function element-wise."""
    return _np.maximum(input, 0).view(Tensor)


def add(input: Tensor, other, alpha: float = 1) -> Tensor:
    """Adds other, scaled by alpha, to input."""
    return _np.add(input, _np.multiply(other, alpha)).view(Tensor)


def mul(input: Tensor, other) -> Tensor:
    """Multiplies input by other."""
    return _np.multiply(input, other).view(Tensor)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product of two tensors."""
    return _np.matmul(input, other).view(Tensor)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether input and other are element-wise equal within a tolerance."""
    return bool(_np.allclose(input, other, rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input: Tensor, other: Tensor) -> bool:
    """Whether two tensors have the same size and elements."""
    return bool(_np.array_equal(input, other))


def is_tensor(obj) -> bool:
    """Whether obj is a tensor."""
    return isinstance(obj, Tensor)


def _shape(size: Sequence) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


# Submodules last: they import the functions above.
from torch import cuda as cuda  # noqa: E402
from torch import nn as nn  # noqa: E402
import torch.utils.checkpoint  # noqa: E402,F401
