"""A small, importable package shaped like torch.

The fixture mirrors the layout of the real torch package closely enough to
exercise re-exports, star imports, stubs for compiled code and config modules.
"""

import sys
from typing import TYPE_CHECKING, Any, Callable, Optional, overload

from torch.version import __version__ as __version__
from torch import _C as _C
from ._tensor import Tensor

if TYPE_CHECKING:
    # What a type checker sees; the runtime binding above wins.
    from torch._C import TensorBase as Tensor

__all__ = [
    "Tensor",
    "compile",
    "is_grad_enabled",
]

# Bind every "compiled" function of _C._VariableFunctions as a module
# attribute, as torch does; static analysis cannot see these names.
for __name in dir(_C._VariableFunctions):
    if __name.startswith("__"):
        continue
    globals()[__name] = getattr(_C._VariableFunctions, __name)


def is_grad_enabled() -> bool:
    r"""Returns True if grad mode is currently enabled."""
    return _C._is_grad_enabled()


@overload
def compile(model: None = None, *, fullgraph: bool = False) -> Callable[[Callable], Callable]: ...


@overload
def compile(model: Callable, *, fullgraph: bool = False) -> Callable: ...


def compile(
    model: Optional[Callable] = None,
    *,
    fullgraph: bool = False,  # whole graph or nothing
    mode: Optional[str] = None,
    options: Optional[dict] = None,
) -> Any:
    """Optimizes the given model or function.

    Größe ≥ 1 — ü: the summary above is the first paragraph.

    Passing both ``mode`` and ``options`` raises RuntimeError.
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if model is None:
        def decorator(fn: Callable) -> Callable:
            return compile(fn, fullgraph=fullgraph, mode=mode, options=options)
        return decorator
    return model


from torch import cuda as cuda
from torch import nn as nn
from torch import optim as optim
import torch.utils.checkpoint
import torch._inductor.config as inductor_config
