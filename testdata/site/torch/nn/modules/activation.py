from .module import Module
from .. import functional as F


class ReLU(Module):
    """Applies the rectified linear unit function element-wise."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)
