"""A minimal version of torch's config module machinery.

install_config_module turns the module-level assignments and nested classes
of a config module into entries with dotted keys, stored in ``_config``.
User overrides are thread-local: they live in a ContextVar, so a value set on
one thread is not seen by another (the shape of torch 2.12's config modules).
"""
import os
import types
from contextvars import ContextVar
from typing import Any, Dict, Optional


class Config:
    """A config entry with a default and optional environment overrides."""

    def __init__(
        self,
        default: Any = None,
        justknob: Optional[str] = None,
        env_name_default: Optional[str] = None,
        env_name_force: Optional[str] = None,
        value_type: Optional[type] = None,
        alias: Optional[str] = None,
    ) -> None:
        self.default = default
        self.justknob = justknob
        self.env_name_default = env_name_default
        self.env_name_force = env_name_force
        self.value_type = value_type
        self.alias = alias

    def resolve(self) -> Any:
        if self.env_name_force and self.env_name_force in os.environ:
            return _parse_env(os.environ[self.env_name_force], self.default)
        if self.env_name_default and self.env_name_default in os.environ:
            return _parse_env(os.environ[self.env_name_default], self.default)
        return self.default


def _parse_env(raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        return raw == "1"
    return raw


class _SubConfig:
    """A view of the entries under one dotted prefix."""

    def __init__(self, module: Any, prefix: str) -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> Any:
        return self._module._get(self._prefix + name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._module._set(self._prefix + name, value)


def _collect(source: Any, prefix: str, config: Dict[str, Any], module: Any) -> None:
    for key, value in list(source.__dict__.items()):
        if key.startswith("__") or isinstance(value, (types.ModuleType, types.FunctionType)):
            continue
        if isinstance(value, type) and value.__module__ == module.__name__:
            _collect(value, prefix + key + ".", config, module)
            if source is module:
                delattr(module, key)
            continue
        if isinstance(value, type) or key.startswith("_") or callable(value):
            continue
        config[prefix + key] = value.resolve() if isinstance(value, Config) else value
        if source is module:
            delattr(module, key)


_user_overrides: ContextVar[Dict[str, Any]] = ContextVar("_user_overrides", default={})


class _ConfigModule(types.ModuleType):
    def _get(self, key: str) -> Any:
        overrides = _user_overrides.get()
        if (self.__name__, key) in overrides:
            return overrides[(self.__name__, key)]
        try:
            return self._config[key]
        except KeyError:
            raise AttributeError(f"{self.__name__}.{key} does not exist") from None

    def _set(self, key: str, value: Any) -> None:
        if key not in self._config:
            raise AttributeError(f"{self.__name__}.{key} does not exist")
        overrides = dict(_user_overrides.get())
        overrides[(self.__name__, key)] = value
        _user_overrides.set(overrides)

    def __getattr__(self, name: str) -> Any:
        config = self.__dict__.get("_config", {})
        if name in config:
            return config[name]
        prefix = name + "."
        if any(k.startswith(prefix) for k in config):
            return _SubConfig(self, prefix)
        raise AttributeError(f"{self.__name__}.{name} does not exist")

    def __setattr__(self, name: str, value: Any) -> None:
        config = self.__dict__.get("_config")
        if config is not None and name in config:
            config[name] = value
            return
        super().__setattr__(name, value)


def install_config_module(module: types.ModuleType) -> None:
    """Converts a module into a config module with dotted keys."""
    config: Dict[str, Any] = {}
    _collect(module, "", config, module)
    module._config = config
    module.__class__ = _ConfigModule
