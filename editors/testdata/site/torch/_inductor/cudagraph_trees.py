import threading

import torch

local = threading.local()


def get_obj(local, attr_name):
    if hasattr(local, attr_name):
        return getattr(local, attr_name)
    assert torch._C._is_key_in_tls(attr_name)
    return torch._C._get_obj_in_tls(attr_name)


def format_dealloc_msg(stack_trace):
    return (
        "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run. "
        f"Stack trace: {stack_trace}. "
        "To prevent overwriting, clone the tensor outside of torch.compile() "
        "or call torch.compiler.cudagraph_mark_step_begin() before each model invocation."
    )
