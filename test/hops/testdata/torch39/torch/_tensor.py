"""Tensors: numpy arrays with the few methods of torch.Tensor the tests use."""

import numpy as _np


class Tensor(_np.ndarray):
    """A multi-dimensional matrix of elements of a single data type."""

    def __new__(cls, data=(), dtype=None):
        return _np.asarray(data, dtype=dtype).view(cls)

    def to(self, device=None, dtype=None) -> "Tensor":
        """Returns the tensor on device (always the CPU here), as dtype."""
        return self if dtype is None else self.astype(dtype)

    def detach(self) -> "Tensor":
        return self

    def cpu(self) -> "Tensor":
        return self

    def clone(self) -> "Tensor":
        return self.copy()

    def abs(self) -> "Tensor":
        return _np.abs(self)

    def isnan(self) -> "Tensor":
        return _np.isnan(self)

    def numel(self) -> int:
        return int(self.size)

    def dim(self) -> int:
        return self.ndim

    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self.dtype.kind == "c"
