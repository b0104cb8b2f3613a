"""Configuration of the fixture's compiler backend."""
import os
import sys
from typing import Optional

from torch.utils._config_module import Config, install_config_module

debug = False

max_autotune = Config(default=False, env_name_default="TORCHINDUCTOR_MAX_AUTOTUNE")

fx_graph_cache = Config(
    justknob="pytorch/remote_cache:enable_local_fx_graph_cache",
    env_name_force="TORCHINDUCTOR_FX_GRAPH_CACHE",
    default=True,
)


class triton:
    """Settings of the Triton backend."""

    # Use cudagraphs on output code.
    cudagraphs = os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1"

    # Use cudagraph trees for memory pooling if `cudagraphs` is True.
    cudagraph_trees = True

    # Record the stack trace of each allocation in cudagraph trees.
    cudagraph_trees_history_recording = False

    # Skip CUDA graphs for graphs with dynamic shape inputs.
    cudagraph_skip_dynamic_graphs = False

    # Warn after recording this many CUDA graphs of one function for distinct sizes.
    cudagraph_dynamic_shape_warn_limit: Optional[int] = 8


def _a_function_is_not_a_flag() -> None:
    pass


install_config_module(sys.modules[__name__])
