import os
import sys

max_autotune = os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE") == "1"


class triton:
    # Use cudagraphs on output code
    cudagraphs = os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1"

    # Use cudagraph trees for memory pooling if `cudagraphs` is True
    cudagraph_trees = True


from torch.utils._config_module import install_config_module

install_config_module(sys.modules[__name__])
