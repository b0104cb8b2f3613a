# Runtime stand-in for the compiled extension torch._C. Objects are built
# from builtins so that inspect finds no Python source for them.
import operator
import types

_tls_store = {}

# Bound statically: the .py binding wins over the stub's declaration.
_add = operator.add


def _table():
    return {
        "_is_key_in_tls": _tls_store.__contains__,
        "_stash_obj_in_tls": _tls_store.__setitem__,
        "_is_grad_enabled": bool,
        "TensorBase": type("TensorBase", (), {"dim": len}),
        "_VariableFunctions": types.SimpleNamespace(add=operator.add, mul=operator.mul),
    }


# Names bound here are invisible to static analysis; the stub declares them.
for _name, _obj in _table().items():
    globals()[_name] = _obj
del _name, _obj
