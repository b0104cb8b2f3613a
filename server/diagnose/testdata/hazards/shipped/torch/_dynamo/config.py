"""Configuration of the fixture's Dynamo."""
import os
import sys

from torch.utils._config_module import Config, install_config_module

# controls the maximum number of cache entries per code object
recompile_limit = 8

# safeguarding to prevent horrible recomps
accumulated_recompile_limit = 256

# raise a hard error if cache limit is hit
fail_on_recompile_limit_hit = False

cache_size_limit: int = Config(alias="torch._dynamo.config.recompile_limit")

# recompile once with the wobbled shapes marked dynamic
automatic_dynamic_shapes = os.environ.get("TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES", "1") == "1"

install_config_module(sys.modules[__name__])
