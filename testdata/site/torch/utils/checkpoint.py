"""Activation checkpointing."""
import functools
from typing import Any, Optional

__all__ = ["checkpoint"]


def _disable_dynamo(fn):
    """Wraps fn so that the compiler does not trace it."""

    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner


@_disable_dynamo
def checkpoint(
    function,
    *args,
    use_reentrant: Optional[bool] = None,
    **kwargs: Any,
):
    """Checkpoint a model or part of the model.

    Trades compute for memory.
    """
    return function(*args, **kwargs)
