from .module import Module
from .linear import Linear, Identity

__all__ = ["Module", "Linear", "Identity"]
