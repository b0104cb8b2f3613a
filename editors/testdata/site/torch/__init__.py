"""Minimal torch stand-in for the editor tests."""

__version__ = "2.11.0"


def sin(x):
    return x


def cos(x):
    return x


def randn(*size):
    return [0.0] * (size[0] if size else 1)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, disable=False):
    """Optimizes given model/function using TorchDynamo and the chosen backend.

    mode can be "default", "reduce-overhead", "max-autotune" or
    "max-autotune-no-cudagraphs". "reduce-overhead" uses CUDA graphs.
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    from torch import _inductor

    _inductor.list_mode_options(mode)
    return model
