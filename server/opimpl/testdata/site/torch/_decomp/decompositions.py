import functools
from functools import partial

import torch
import torch._prims as prims
from torch._decomp import register_decomposition
from torch._ops import ops

DispatchKey = torch._C.DispatchKey
aten = torch._ops.ops.aten
rng_decompositions = {}
register_rng = functools.partial(register_decomposition, registry=rng_decompositions)
register_meta_decomp = partial(register_decomposition, type="meta")


@register_decomposition(aten.tanh_backward)  # anchor: tanh  want: decomposition | aten.tanh_backward | func=tanh_backward
def tanh_backward(out_grad, y):
    return out_grad * (1 - y * y)


@register_decomposition(  # want: decomposition | aten.hardsigmoid.default | func=hard ;; decomposition | aten.hardswish | func=hard
    [
        aten.hardsigmoid.default,
        ops.aten.hardswish,
    ]
)
def hard(x):
    return x


@functools.lru_cache(None)  # anchor: silu
@register_decomposition(aten.silu)  # want: decomposition | aten.silu | def=@silu func=silu
def silu(x):
    return x


@register_decomposition(aten.empty_like, type="meta")  # want: meta | aten.empty_like | func=empty_like_meta
def empty_like_meta(x):
    return x


@register_decomposition(aten.dropout.default, type="pre_autograd")  # want: pre-autograd decomposition | aten.dropout.default | func=dropout
def dropout(x, p):
    return x


@register_rng(aten.rand_like)  # want: decomposition (rng_decompositions) | aten.rand_like | func=rand_like
def rand_like(x):
    return x


@register_meta_decomp(aten.zeros_like)  # want: meta | aten.zeros_like | func=zeros_like
def zeros_like(x):
    return x


def register_inplace(aten_op, outplace_op):
    @register_decomposition(aten_op)  # anchor: inplace
    def inplace_op(*args, **kwargs):
        return outplace_op(*args, **kwargs)

    return inplace_op


register_inplace(aten.relu_, aten.relu)  # want: decomposition | aten.relu_ | def=@inplace func=inplace_op


@aten.matmul.default.py_impl(DispatchKey.CompositeImplicitAutograd)  # anchor: matmul  want: py_impl CompositeImplicitAutograd | aten.matmul.default | func=matmul
@ops.aten.matmul.out.py_impl(DispatchKey.CompositeImplicitAutograd)  # want: py_impl CompositeImplicitAutograd | aten.matmul.out | def=@matmul func=matmul
def matmul(a, b):
    return a


if torch.cuda.is_available():
    @register_decomposition(aten.cuda_only)  # want: decomposition | aten.cuda_only | func=cuda_only if=torch.cuda.is_available()
    def cuda_only(x):
        return x
else:
    register_decomposition(aten.cpu_only)(tanh_backward)  # want: decomposition | aten.cpu_only | def=@tanh func=tanh_backward if=not (torch.cuda.is_available())

# Not statically nameable: counted as unresolved, never guessed.
register_decomposition(getattr(aten, "abs"))(tanh_backward)
# torch._prims is a module of Python objects, not torch.ops.prims.
register_decomposition(prims.add)(tanh_backward)


def local_names(x):
    aten = x  # a local that happens to be called aten
    return aten.add
