import sys
from typing import TYPE_CHECKING

from chainpkg.utils._config_module import install_config_module

debug = False


class triton:
    cudagraphs = False


def save_config():
    """A module-level def wins over the class's method at run time."""


if TYPE_CHECKING:
    from chainpkg.utils._config_typing import *  # noqa: F403

install_config_module(sys.modules[__name__])
