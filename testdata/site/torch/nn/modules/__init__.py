from .module import Module
from .linear import Linear, Identity, NotExported
from .activation import ReLU

# Visible as torch.nn.modules.hidden_helper, but not through `from .modules import *`.
hidden_helper = object()

__all__ = [
    "Module",
    "Linear",
    "Identity",
]
__all__ += ["ReLU"]
