import functools

import torch
from torch._ops import ops as _ops

aten = torch.ops.aten
prims = torch.ops.prims
lowerings = {}


def _register_lowering(aten_fn, decomp_fn, broadcast, lowering_dict):
    lowering_dict[aten_fn] = decomp_fn
    return decomp_fn


def register_lowering(aten_fn, broadcast=False, lowering_dict=lowerings):
    return functools.partial(_register_lowering, aten_fn, broadcast=broadcast, lowering_dict=lowering_dict)


def make_pointwise(fn):
    def inner(*args):
        return fn(*args)

    return inner


def register_pointwise(aten_fn, name=None):
    fn = make_pointwise(name)
    fn = register_lowering(aten_fn)(fn)
    return fn


def register_pointwise_numeric(op):
    return register_pointwise(op)


def make_fallback(op, warn=True):
    def register_fallback(op_overload):
        return register_lowering(op_overload)(None)

    register_fallback(op)


@register_lowering(aten.cat)  # want: lowering | aten.cat | func=cat
def cat(inputs, dim=0):
    return inputs


@register_lowering([aten.mul, prims.mul], broadcast=True)  # anchor: mul  want: lowering | aten.mul | func=mul ;; lowering | prims.mul | func=mul
def mul(a, b):
    return a


add = register_pointwise(aten.add)  # want: lowering | aten.add | def=none
register_pointwise_numeric(aten.exp)  # want: lowering | aten.exp | def=none
register_lowering(aten.clamp_min)(mul)  # want: lowering | aten.clamp_min | def=@mul func=mul
make_fallback(aten.randint)  # want: fallback | aten.randint | def=none
make_fallback(  # want: fallback | aten._cdist_forward.default | def=none
    _ops.aten._cdist_forward.default, warn=False
)
if torch.mtia._is_compiled():
    make_fallback(aten.native_layer_norm)  # want: fallback | aten.native_layer_norm | def=none if=torch.mtia._is_compiled()
