"""Compiles a graph with the backend."""
from typing import Any, Callable

from . import config
from torch._inductor import config as inductor_config


def cudagraphify(model: Callable, inputs: Any) -> Callable:
    if config.triton.cudagraph_trees:
        from torch._inductor.cudagraph_trees import get_container

        get_container(0)
    return model


def compile_fx(model: Callable, inputs: Any) -> Callable:
    """Compiles model; uses cudagraphs when the config says so."""
    if inductor_config.triton.cudagraphs:
        return cudagraphify(model, inputs)
    config = {"local": "a local variable named config"}
    return model if config else model
