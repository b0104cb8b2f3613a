"""Cudagraph trees: per-thread state stashed in a thread-local store."""
import threading

import torch

local = threading.local()
local.tree_manager_containers = {}
local.tree_manager_locks = {}

torch._C._stash_obj_in_tls("tree_manager_containers", local.tree_manager_containers)


def get_obj(local, attr_name):
    if hasattr(local, attr_name):
        return getattr(local, attr_name)
    assert torch._C._is_key_in_tls(attr_name)
    return None


def get_container(device_index: int):
    return get_obj(local, "tree_manager_containers").get(device_index)
