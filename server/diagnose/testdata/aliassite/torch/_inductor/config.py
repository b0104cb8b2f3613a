"""A config module with an aliased flag."""
import sys

from torch.utils._config_module import Config, install_config_module

# Keep compiled kernels in a local cache.
autotune_local_cache = True

# Former name of autotune_local_cache.
use_static_launcher = Config(alias="torch._inductor.config.autotune_local_cache")

# Worker processes for compilation.
compile_threads: int = 4

install_config_module(sys.modules[__name__])
