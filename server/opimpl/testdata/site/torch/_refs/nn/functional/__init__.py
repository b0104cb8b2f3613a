import torch
from torch._decomp import register_decomposition

aten = torch._ops.ops.aten


@register_decomposition(aten.relu)  # want: decomposition | aten.relu | func=relu
def relu(a, inplace=False):
    return a


def softmax(a, dim):
    return a
