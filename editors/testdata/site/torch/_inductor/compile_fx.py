from . import config
from .cudagraph_trees import get_container, reset_cudagraph_trees


def cudagraphify(model, device_index=0):
    if config.triton.cudagraph_trees:
        return get_container(device_index)
    return model


def reset():
    reset_cudagraph_trees()
