"""Cudagraph trees: per-thread state created lazily in every thread."""
import threading

import torch

local = threading.local()
_creation_lock = threading.Lock()


def get_obj(local, attr_name):
    if hasattr(local, attr_name):
        return getattr(local, attr_name)
    if torch._C._is_key_in_tls(attr_name):
        return torch._C._get_obj_in_tls(attr_name)
    # A thread that did not import this module gets state of its own.
    with _creation_lock:
        obj = {}
        setattr(local, attr_name, obj)
        torch._C._stash_obj_in_tls(attr_name, obj)
        return obj


def get_container(device_index: int):
    return get_obj(local, "tree_manager_containers").get(device_index)
