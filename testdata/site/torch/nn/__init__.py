"""Neural network building blocks."""
from .modules import *  # noqa: F403
from .parameter import Parameter as Parameter
from . import functional as functional
from . import modules
