"""Functions of the layers."""

from torch import relu as _relu


def relu(input, inplace: bool = False):
    """Applies the rectified linear unit function element-wise."""
    return _relu(input)


def linear(input, weight, bias=None):
    """Applies a linear transformation: y = xA^T + b."""
    out = input @ weight.T
    return out if bias is None else out + bias
