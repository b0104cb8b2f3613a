"""Functional interface — Größe ≥ 1 — ü."""
from typing import Optional

from torch import _C
from torch._tensor import Tensor
from torch._C import _add as add

__all__ = ["relu", "linear", "add"]


def relu(
    input: Tensor,  # the input
    inplace: bool = False,
) -> Tensor:
    r"""relu(input, inplace=False) -> Tensor

    Applies the rectified linear unit function element-wise. Größe ≥ 1 — ü.
    """
    return input


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """Applies a linear transformation."""
    return input


_note = "Größe ≥ 1 — ü"; threshold_ = relu
