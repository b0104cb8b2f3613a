import torch
from torch._decomp import meta_table

aten = torch.ops.aten


def register_meta(op):
    def wrapper(fn):
        return fn

    return wrapper


def out_wrapper():
    return lambda fn: fn


@register_meta([aten.take.default, aten.take.out])  # anchor: take  want: meta | aten.take.default | func=meta_take ;; meta | aten.take.out | func=meta_take
@out_wrapper()
def meta_take(self, index):
    return self


@register_meta(aten._unsafe_view.default)  # anchor: stacked  want: meta | aten._unsafe_view.default | func=stacked
@register_meta(aten.view_stacked)  # want: meta | aten.view_stacked | def=@stacked func=stacked
def stacked(self, size):
    return self


register_meta(aten.zeta)(meta_take)  # want: meta | aten.zeta | def=@take func=meta_take


def _create_unary_float_meta_func(func):
    @register_meta(func)  # anchor: unary
    def _f(x):
        return x

    return _f


_create_unary_float_meta_func(aten.special_airy_ai)  # want: meta | aten.special_airy_ai | def=@unary func=_f


class Registrations:
    def method(self):
        @register_meta(torch.ops.aten.in_method.default)  # want: meta | aten.in_method.default | func=in_method
        def in_method(x):
            return x
