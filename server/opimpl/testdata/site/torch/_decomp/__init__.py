from collections import defaultdict

import torch

global_decomposition_table = defaultdict(dict)
decomposition_table = global_decomposition_table["post_autograd"]
pre_autograd_decomposition_table = global_decomposition_table["pre_autograd"]
meta_table = global_decomposition_table["meta"]


def register_decomposition(aten_op, registry=None, *, type="post_autograd", unsafe=False):
    def decomposition_decorator(fn):
        return fn

    return decomposition_decorator
