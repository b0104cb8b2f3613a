"""A config module shaped like torch 2.x's install_config_module result."""

import os


class _ConfigEntry:
    def __init__(self, default, env_name_default=None):
        self.default = default
        self.env_name_default = env_name_default
        value = default
        if env_name_default and env_name_default in os.environ:
            value = os.environ[env_name_default] == "1"
        self.value = value


_config = {
    "debug": _ConfigEntry(False),
    "triton.cudagraphs": _ConfigEntry(False, env_name_default="FIXTURE_CUDAGRAPHS"),
    "triton.cudagraph_trees": _ConfigEntry(True),
    "compile_threads": _ConfigEntry(4),
    "custom_pass": _ConfigEntry(None),
}


def get_config_copy():
    return {k: e.value for k, e in _config.items()}
