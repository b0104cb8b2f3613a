import torch
import torch._prims as prims
import torch._prims_common as utils
from torch._decomp import register_decomposition

aten = torch._ops.ops.aten
infer_aten_op = object()


def _make_elementwise_unary_reference(type_promotion_kind, *, aten_op=infer_aten_op):
    def inner(prim):
        nonlocal aten_op

        def _ref(a):
            return prim(a)

        if aten_op is infer_aten_op:
            aten_op = utils.get_aten_op(prim, prim.__name__)
        if aten_op is not None:
            register_decomposition(aten_op)(_ref)
        return _ref

    return inner


def _make_elementwise_binary_reference(prim, *, type_promotion_kind, aten_op=infer_aten_op):
    def _ref(a, b):
        return prim(a, b)

    if aten_op is infer_aten_op:
        aten_op = getattr(torch.ops.aten, prim.__name__.split(".")[0])
    register_decomposition(aten_op)(_ref)
    return _ref


def _make_inplace(fn):
    return fn


@_make_elementwise_unary_reference(0)  # want: decomposition | aten.abs | func=abs
def abs(a):
    return prims.abs(a)


@_make_elementwise_unary_reference(0, aten_op=None)
def no_decomposition(a):
    return a


@_make_elementwise_unary_reference(0, aten_op=aten.special_i0e)  # want: decomposition | aten.special_i0e | func=i0e
def i0e(a):
    return a


atan2 = _make_elementwise_binary_reference(prims.atan2, type_promotion_kind=0)  # want: decomposition | aten.atan2 | def=none


@register_decomposition(aten.add)  # want: decomposition | aten.add | func=add
def add(a, b):
    return a


add_ = _make_inplace(add)


def softmax(a, dim):
    return a
