import math

from .module import Module
from .. import functional as F
from ..parameter import Parameter
from ... import _tensor
from ...utils.checkpoint import checkpoint as _checkpoint

__all__ = ["Identity", "Linear"]


class Identity(Module):
    """A placeholder identity operator."""

    def forward(self, input):
        return input


class Linear(Module):
    r"""Applies a linear transformation: y = xA^T + b.

    Größe ≥ 1 — ü: in_features must be at least one.
    """

    __constants__ = ["in_features", "out_features"]
    in_features: int
    out_features: int

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(None)
        self.scale = math.sqrt(in_features)

    def forward(self, input: _tensor.Tensor) -> _tensor.Tensor:
        return F.linear(input, self.weight)

    class Options:
        """A nested class."""
        fused = False


class NotExported(Module):
    """Public, but left out of __all__ in torch/nn/modules/__init__.py."""


class _LinearHelper:
    pass
