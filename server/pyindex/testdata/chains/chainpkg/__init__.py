"""Rebinding assignments, as torch.nn.attention re-exports its registry."""
from . import _registry

register = _registry.register
again = register
flag = True
missing = _registry.not_there
Registry = _registry.Registry
