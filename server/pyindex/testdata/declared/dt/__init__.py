from ._tensor import Tensor
