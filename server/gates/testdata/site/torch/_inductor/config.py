import os
import sys
from collections.abc import Callable
from typing import Any, Optional, TYPE_CHECKING

from torch.utils._config_module import (
    Config,
    get_tristate_env,
    inherit_fields_from,
    install_config_module,
)

if TYPE_CHECKING:
    from torch.fake_types import NotAtRunTime  # never executed: no entry

__all__ = ["debug"]


def fx_graph_remote_cache_default() -> Optional[bool]:
    return get_tristate_env("TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE")


# Print extra debug output.
# Second line of the comment.
debug = False

verbose_progress: bool = False  # trailing comment documents this one

max_autotune = os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE") == "1"
"""Docstring after the assignment documents max_autotune."""

coordinate_descent_tuning = (
    os.environ.get("TORCHINDUCTOR_COORDINATE_DESCENT_TUNING") == "1"
)

fx_graph_remote_cache: Optional[bool] = fx_graph_remote_cache_default()

autotune_local_cache: bool = Config(
    justknob="pytorch/remote_cache:autotune_local_cache",
    env_name_default="TORCHINDUCTOR_AUTOTUNE_LOCAL_CACHE",
    env_name_force=["TORCHINDUCTOR_FORCE_A", "TORCHINDUCTOR_FORCE_B"],
    default=True,
)

use_static_launcher = Config(alias="torch._inductor.config.autotune_local_cache")

threads = int(os.getenv("TORCHINDUCTOR_THREADS", "-1"))

cache_dir = os.environ["TORCHINDUCTOR_CACHE_DIR"] if "TORCHINDUCTOR_CACHE_DIR" in os.environ else None

_private_but_still_an_entry = {"a": 1}

__dunder_is_skipped__ = 1

ratio = 0.5
name_list = ["a", "b"]
pair = (1, 2)
names = {"x"}
a_int, b_int = 1, 2
limit = (env_limit := os.getenv("TORCHINDUCTOR_LIMIT")) is None

to_delete = 1
del to_delete

fn_value = lambda: 1  # noqa: E731  a function: no entry

if sys.platform == "win32":
    platform_flag = "win"
else:
    platform_flag = "posix"

try:
    maybe_flag = int("3")
except ValueError:
    maybe_flag = 0


def helper_is_not_a_flag():
    return debug


class triton:
    """
    Config specific to codegen/triton.py
    """

    # Use cudagraphs on output code
    cudagraphs = os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1"

    # Use cudagraph trees for memory pooling if `cudagraphs` is True
    cudagraph_trees = True

    # TODO - need to debug why this prevents cleanup
    cudagraph_trees_history_recording = False

    class inner:
        depth = 2

    def method_is_not_a_flag(self):
        return 1


class cutlass:
    cutlass_dir = "third_party"
    _private_not_inherited = 1


@inherit_fields_from(cutlass)
class cuda(cutlass):
    # CUDA arch to use.
    arch: Optional[str] = None
    cutlass_dir = "own"


if TYPE_CHECKING:
    from torch.utils._config_typing import *  # noqa: F401, F403

install_config_module(sys.modules[__name__])
