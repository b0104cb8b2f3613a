from torch._tensor import Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter."""

    def __new__(cls, data=None, requires_grad=True):
        return super().__new__(cls)
