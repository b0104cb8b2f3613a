"""Activation checkpointing, shaped as torch 2.11's: the reentrant variant
recomputes in CheckpointFunction.backward; the non-reentrant one from the
unpack hook, and checks what the recomputation saved (TL019)."""
import functools
from typing import Any, Optional

import torch

__all__ = ["checkpoint", "CheckpointError"]


class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        with torch.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        detached_inputs = ctx.saved_tensors
        with torch.enable_grad():
            outputs = ctx.run_function(*detached_inputs)
        return outputs


# Note: [torch.compile and checkpoint]
# Dynamo wraps checkpoint in a higher-order op when it traces it.
@torch._disable_dynamo
def checkpoint(
    function,
    *args,
    use_reentrant: Optional[bool] = None,
    **kwargs: Any,
):
    if use_reentrant is None:
        use_reentrant = True
    if use_reentrant:
        return CheckpointFunction.apply(function, True, *args)
    return function(*args, **kwargs)


class CheckpointError(RuntimeError):
    pass


class _CheckpointFrame:
    def check_recomputed_tensors_match(self, gid):
        if not len(self.weak_holders) == self.recomp_counter[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved "
                "during the original forward and recomputation."
            )


# Note: does not work when fn is compiled
def _run_fn_with_dynamo_disabled(fn, *args, **kwargs):
    return fn(*args, **kwargs)


def _unpack_hook(frame, args):
    _run_fn_with_dynamo_disabled(frame.recompute_fn, *args)
    frame.check_recomputed_tensors_match(0)
