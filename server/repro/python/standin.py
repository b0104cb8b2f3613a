"""Stand-in for the CUDA-graph layer of torch.compile(mode="reduce-overhead").

It lets machines without CUDA (or without torch.compile) run the threaded
repro scripts for real. It fails the way torch/_inductor does:

- cudagraph trees on: the tree-manager container lives in the thread-local
  store of the thread that imported this module, so get_obj asserts in any
  other thread (torch/_inductor/cudagraph_trees.py, get_obj).
- cudagraph trees off (legacy CUDA graphs): one static input buffer and one
  static output buffer are shared by every thread that runs the same
  function, so concurrent calls read each other's data.
- cudagraphs off: the function runs as it is.

The buffers hold torch tensors when torch is importable, else Python lists.
"""
import threading
import time

# The two stores of cudagraph_trees: a Python threading.local, and the C++
# thread-local store it is stashed in (torch._C._stash_obj_in_tls).
local = threading.local()
_cpp_tls = threading.local()

# Pauses inside a replay let other threads run, as a GPU replay would.
_REPLAY_PAUSE_S = 0.0005


def _stash_obj_in_tls(name, obj):
    setattr(_cpp_tls, name, obj)


def _is_key_in_tls(name):
    return hasattr(_cpp_tls, name)


def _get_obj_in_tls(name):
    return getattr(_cpp_tls, name)


# Runs once, in the importing thread only.
local.tree_manager_containers = {}
local.tree_manager_locks = {}
_stash_obj_in_tls("tree_manager_containers", local.tree_manager_containers)
_stash_obj_in_tls("tree_manager_locks", local.tree_manager_locks)


def get_obj(local, attr_name):
    if hasattr(local, attr_name):
        return getattr(local, attr_name)
    else:
        assert _is_key_in_tls(attr_name)
        return _get_obj_in_tls(attr_name)


def get_container(device_index):
    containers = get_obj(local, "tree_manager_containers")
    return containers.setdefault(device_index, {})


class _Buffers:
    """Copies values into long-lived buffers, torch tensors or lists."""

    @staticmethod
    def fresh(value):
        if hasattr(value, "clone"):
            return value.detach().clone()
        if isinstance(value, list):
            return [_Buffers.fresh(v) for v in value]
        return value

    @staticmethod
    def copy_into(buf, value):
        if hasattr(buf, "copy_"):
            buf.copy_(value)
            return buf
        if isinstance(buf, list) and isinstance(value, list) and len(buf) == len(value):
            for i, v in enumerate(value):
                if isinstance(buf[i], list):
                    _Buffers.copy_into(buf[i], v)
                else:
                    buf[i] = v
            return buf
        return value


class _TreeGraph:
    """Cudagraph trees: per-thread state, reached through get_obj."""

    def __init__(self, fn, device_index):
        self.fn = fn
        self.device_index = device_index

    def __call__(self, *args, **kwargs):
        graphs = get_container(self.device_index)
        entry = graphs.setdefault(id(self), {})
        outputs = self.fn(*args, **kwargs)
        entry["last"] = outputs
        return outputs


class _LegacyGraph:
    """Legacy CUDA graphs: static buffers shared by every calling thread."""

    def __init__(self, fn):
        self.fn = fn
        self.static_inputs = None
        self.static_output = None

    def __call__(self, *args, **kwargs):
        # Keyword arguments pass through; the positional ones are buffered.
        if self.static_inputs is None:
            # The first call records: buffers are made once, then reused.
            self.static_inputs = [_Buffers.fresh(a) for a in args]
            self.static_output = _Buffers.fresh(self.fn(*self.static_inputs, **kwargs))
            return self.static_output
        for buf, a in zip(self.static_inputs, args):
            _Buffers.copy_into(buf, a)
        time.sleep(_REPLAY_PAUSE_S)
        self.static_output = _Buffers.copy_into(self.static_output, self.fn(*self.static_inputs, **kwargs))
        time.sleep(_REPLAY_PAUSE_S)
        return self.static_output


# Compiled code is cached per function (dynamo caches it on the code
# object), so separate compile calls of one function share its graph.
_legacy_graphs = {}
_legacy_graphs_lock = threading.Lock()


def compile(fn, cudagraphs, cudagraph_trees, device_index=0):
    """Returns fn wrapped as torch.compile would run it with these flags;
    state is kept per device index, as torch keeps it per device."""
    if not cudagraphs:
        return fn
    if cudagraph_trees:
        return _TreeGraph(fn, device_index)
    with _legacy_graphs_lock:
        key = (id(fn), device_index)
        graph = _legacy_graphs.get(key)
        if graph is None:
            graph = _legacy_graphs[key] = _LegacyGraph(fn)
    return graph
