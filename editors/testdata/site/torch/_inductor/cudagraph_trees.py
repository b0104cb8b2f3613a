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


def get_container(device_index: int):
    container_dict = get_obj(local, "tree_manager_containers")
    lock = get_obj(local, "tree_manager_lock")
    with lock:
        if device_index not in container_dict:
            container_dict[device_index] = TreeManagerContainer(device_index)
        return container_dict[device_index]


def get_manager(device_index: int, create_if_none_exists: bool = True):
    if create_if_none_exists:
        return get_container(device_index).get_tree_manager()
    return get_container(device_index).tree_manager


def reset_cudagraph_trees():
    container_dict = get_obj(local, "tree_manager_containers")
    for container in container_dict.values():
        container.tree_manager = None


class TreeManagerContainer:
    def __init__(self, device_index: int):
        self.device_index = device_index
        self.tree_manager = None

    def get_tree_manager(self):
        if self.tree_manager is None:
            self.tree_manager = object()
        return self.tree_manager
