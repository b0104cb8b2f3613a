"""The Python half of the tensor class."""
from typing import Any

import torch._C as _C_mod


class Tensor(_C_mod.TensorBase):
    """A multi-dimensional array — Größe ≥ 1, ü.

    The second paragraph is not part of the summary.
    """

    __module__ = "torch"

    def __repr__(self) -> str:
        return "tensor(...)"

    def backward(self, gradient: Any = None, retain_graph: Any = None) -> None:
        """Computes the gradient of current tensor w.r.t. graph leaves."""
        return None

    @property
    def grad(self) -> Any:
        """The gradient, or None."""
        return None
