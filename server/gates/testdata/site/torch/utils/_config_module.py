"""A small config-module runtime with the semantics of torch.utils._config_module.

It keeps only what decides which names become entries: a module (and each
nested class) is walked through its final namespace; dunder names, modules,
functions, typing objects and the Config class are skipped; values of the
config types and Config(...) objects become entries; nested classes become
sub-configs with dotted keys; anything else is an error.
"""
import os
import sys
from types import FunctionType, ModuleType

CONFIG_TYPES = (int, float, bool, type(None), str, list, set, tuple, dict)
_UNSET = object()


class _Config:
    def __init__(self, default=_UNSET, justknob=None, env_name_default=None,
                 env_name_force=None, value_type=None, alias=None):
        self.default = default
        self.justknob = justknob
        self.env_name_default = [env_name_default] if isinstance(env_name_default, str) else env_name_default
        self.env_name_force = [env_name_force] if isinstance(env_name_force, str) else env_name_force
        self.value_type = value_type
        self.alias = alias


def Config(default=_UNSET, justknob=None, env_name_default=None, env_name_force=None,
           value_type=None, alias=None):
    return _Config(default, justknob, env_name_default, env_name_force, value_type, alias)


def get_tristate_env(name, default=None):
    value = os.environ.get(name)
    if value == "1":
        return True
    if value == "0":
        return False
    return default


def inherit_fields_from(parent_cls):
    def wrapper(child_cls):
        for k, v in parent_cls.__dict__.items():
            if not k.startswith("_") and k not in child_cls.__dict__:
                setattr(child_cls, k, v)
        return child_cls

    return wrapper


class _Proxy:
    def __init__(self, module, prefix):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name):
        return self._module._config[self._prefix + name].default


def install_config_module(module):
    config = {}

    def visit(source, prefix):
        for key, value in list(source.__dict__.items()):
            if (
                key.startswith("__")
                or isinstance(value, (ModuleType, FunctionType))
                or (hasattr(value, "__module__") and (
                    value.__module__ == "typing" or value.__module__.startswith("collections.abc")))
                or (isinstance(value, type) and issubclass(value, _Config))
            ):
                continue
            name = prefix + key
            if isinstance(value, CONFIG_TYPES):
                config[name] = _Config(default=value)
                if source is module:
                    delattr(module, key)
            elif isinstance(value, _Config):
                config[name] = value
                if source is module:
                    delattr(module, key)
            elif isinstance(value, type):
                if value.__module__ != module.__name__:
                    raise AssertionError(f"subconfig class {value} must be defined in module {module.__name__}")
                visit(value, name + ".")
                if source is module:
                    setattr(module, key, _Proxy(module, name + "."))
            else:
                raise AssertionError(f"Unhandled config {key}={value} ({type(value)})")

    visit(module, "")
    module._config = config
