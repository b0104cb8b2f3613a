from .modules import *  # noqa: F401,F403
from . import functional as functional
