import threading

import torch

local = threading.local()


def get_obj(local, attr_name):
    if hasattr(local, attr_name):
        return getattr(local, attr_name)
    assert torch._C._is_key_in_tls(attr_name)
    return torch._C._get_obj_in_tls(attr_name)
