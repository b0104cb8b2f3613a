import types


class ConfigModule(types.ModuleType):
    def patch(self, arg=None, **changes):
        return arg

    def save_config(self):
        return b""


def install_config_module(module):
    module.__class__ = ConfigModule
