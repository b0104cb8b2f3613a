import sys
from typing import Optional as _Optional, TYPE_CHECKING as _TYPE_CHECKING

from torch.utils._config_module import install_config_module as _install

# Shares a name with an inductor flag; reads must not be confused.
cudagraph_trees = False

cache_size_limit: int = 8

if _TYPE_CHECKING:
    hidden = 1

_install(sys.modules[__name__])
