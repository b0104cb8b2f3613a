from .core import get_obj, Manager
from .core import *  # noqa: F403
from . import core as core_mod

__all__ = ["get_obj", "Manager", "helper", "core_mod"]
