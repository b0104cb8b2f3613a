"""Stand-in for the layers of torch.compile(mode="reduce-overhead") the
repro scripts exercise.

It lets machines without CUDA (or without torch.compile) run the repro
scripts for real. It fails the way torch/_dynamo and torch/_inductor do:

- Dynamo's cache: compiled code is cached per function, one entry per
  input signature (tensors' dtypes and sizes, ints' values). With automatic
  dynamic shapes (dynamic=None) a second size of the same inputs compiles
  one entry for every size from 2 up (0 and 1 stay specialised, as torch
  specialises them); dynamic=False compiles each size; dynamic=True is
  dynamic from the start. A new signature past recompile_limit entries
  runs uncompiled from then on, after the warning torch._dynamo logs
  (torch/_dynamo/convert_frame.py), or raises FailOnRecompileLimitHit
  with fullgraph=True. counters["stats"]["unique_graphs"] counts the
  entries compiled, as torch._dynamo.utils.counters does.
- cudagraph trees on: the tree-manager container lives in the thread-local
  store of the thread that imported this module, so get_obj asserts in any
  other thread (torch/_inductor/cudagraph_trees.py, get_obj). Each entry
  records one CUDA graph per distinct concrete size; a graph's outputs live
  in its static output buffer, which its next replay overwrites, so an
  output kept across the next call reads the later call's values. Past
  triton.cudagraph_dynamic_shape_warn_limit graphs of one entry it warns
  as torch/_inductor/cudagraph_utils.py does.
- cudagraph trees off (legacy CUDA graphs): one static input buffer and one
  static output buffer per graph are shared by every thread that runs the
  same function, so concurrent calls read each other's data.
- cudagraphs off: the entries run the function as it is.
- pending backwards (cudagraph trees): a call whose output requires grad
  leaves its backward pending until a backward runs through that output.
  While one is pending and the last call's outputs are alive, the next
  call cannot start a new generation: it runs eagerly as a child of the
  last (torch warms up again, it neither records nor replays), and on the
  third such call of one function it warns "Unable to hit fast path of
  CUDAGraphs because of pending, uninvoked backwards", once per function,
  as torch/_inductor/cudagraph_trees.py's
  check_warn_on_unable_to_start_executing does.
- manual captures: graph(g) is torch.cuda.graph(g) on the calling
  thread's stream; a compiled call made while it captures is recorded in
  g and run again by g.replay() into the same output, but a call that has
  to compile first raises BackendCompilerFailed, as torch's compile does
  when its CUDA calls are made on a capturing stream.

The buffers hold torch tensors when torch is importable, else Python lists.
The log records go to the loggers torch uses, so that the repro script
reads them the same way from the stand-in and from torch.
"""
import logging
import threading
import time
import warnings
import weakref

# The two stores of cudagraph_trees: a Python threading.local, and the C++
# thread-local store it is stashed in (torch._C._stash_obj_in_tls).
local = threading.local()
_cpp_tls = threading.local()

# Pauses inside a replay let other threads run, as a GPU replay would.
_REPLAY_PAUSE_S = 0.0005

# torch's loggers for these messages.
_dynamo_log = logging.getLogger("torch._dynamo.convert_frame")
_trees_log = logging.getLogger("torch._inductor.cudagraph_trees.__cudagraphs")
_cudagraphs_log = logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs")

# torch._dynamo.utils.counters, as far as the scripts read it.
counters = {"stats": {"unique_graphs": 0}}
_counters_lock = threading.Lock()  # guards counters


class FailOnRecompileLimitHit(Exception):
    """torch._dynamo.exc.FailOnRecompileLimitHit."""


class BackendCompilerFailed(Exception):
    """torch._dynamo.exc.BackendCompilerFailed."""


# torch/_inductor/cudagraph_trees.py's warning, word for word.
PENDING_BACKWARD_WARNING = (
    "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards. "
    "Consider running with torch.no_grad() or using torch.compiler.cudagraph_mark_step_begin() "
    "before each model invocation")

# The stream each thread captures on: torch.cuda.graph captures the
# calling thread's current stream.
_stream = threading.local()


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
        if isinstance(value, tuple):
            return tuple(_Buffers.fresh(v) for v in value)
        return value

    @staticmethod
    def copy_into(buf, value):
        if hasattr(buf, "copy_"):
            buf.copy_(value)
            return buf
        if isinstance(buf, tuple) and isinstance(value, tuple) and len(buf) == len(value):
            return tuple(_Buffers.copy_into(b, v) for b, v in zip(buf, value))
        if isinstance(buf, list) and isinstance(value, list) and len(buf) == len(value):
            for i, v in enumerate(value):
                if isinstance(buf[i], (list, tuple)) or hasattr(buf[i], "copy_"):
                    buf[i] = _Buffers.copy_into(buf[i], v)
                else:
                    buf[i] = v
            return buf
        return value


# ---------------------------------------------------------------- Dynamo's cache

def _list_shape(value):
    shape = [len(value)]
    while value and isinstance(value[0], list):
        value = value[0]
        shape.append(len(value))
    return tuple(shape)


def signature(value):
    """What Dynamo's guards check of a value: a tensor's (or a nested
    list's) dtype and sizes, an int's value, a container's parts."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("tensor", str(value.dtype), tuple(int(d) for d in value.shape))
    if isinstance(value, list) and value and isinstance(value[0], (int, float, list)):
        return ("tensor", "list", _list_shape(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(signature(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, signature(value[k])) for k in sorted(value, key=str))
    if isinstance(value, bool) or isinstance(value, int):
        return ("int", value)
    return ("value", type(value).__name__)


def generalize(sig, keep_small=True):
    """sig with every tensor size from 2 up made dynamic (None); with
    keep_small False, every size (what a size change is told by)."""
    if isinstance(sig, tuple) and len(sig) == 3 and sig[0] == "tensor":
        return ("tensor", sig[1], tuple(d if keep_small and d < 2 else None for d in sig[2]))
    if isinstance(sig, tuple):
        return tuple(generalize(s, keep_small) for s in sig)
    return sig


class _Entry:
    """One compiled entry of a function's cache, and its backend."""

    def __init__(self, key, dynamic, backend):
        self.key = key
        self.dynamic = dynamic
        self.backend = backend

    def matches(self, sig):
        return self.key == (generalize(sig) if self.dynamic else sig)


class _Frame:
    """A function's cache of compiled entries, as Dynamo keeps it on the
    code object."""

    def __init__(self, fn, make_backend, dynamic, fullgraph, recompile_limit):
        self.fn = fn
        self.make_backend = make_backend
        self.dynamic = dynamic
        self.fullgraph = fullgraph
        self.limit = recompile_limit
        self.lock = threading.Lock()  # guards entries, seen and run_only
        self.entries = []
        self.seen = []  # the static entries' signatures without sizes, for automatic dynamic shapes
        self.run_only = False  # past the limit: no more compiles

    def __call__(self, *args, **kwargs):
        capture = getattr(_stream, "capture", None)
        entry = self.lookup(signature((args, kwargs)), capture is not None)
        if capture is not None:
            # What the stream runs is recorded, not a graph of its own.
            return capture.add(self.fn, args, kwargs)
        if entry is None:
            return self.fn(*args, **kwargs)
        return entry.backend(*args, **kwargs)

    def lookup(self, sig, capturing=False):
        """The entry for sig, compiling one when none matches; None when
        the call runs uncompiled. Compiling while the stream captures
        raises, as torch's compile does."""
        with self.lock:
            for e in self.entries:
                if e.matches(sig):
                    return e
            if self.run_only:
                return None
            if capturing:
                raise BackendCompilerFailed(
                    "backend='inductor' raised:\nRuntimeError: CUDA error: operation not permitted when stream is capturing "
                    "(stand-in: %s compiled for the first time inside a CUDA graph capture)" % getattr(self.fn, "__name__", type(self.fn).__name__))
            if len(self.entries) >= self.limit:
                _dynamo_log.warning(
                    "torch._dynamo hit config.recompile_limit (%s)\n"
                    "   function: %r\n"
                    "   last reason: input signature changed (stand-in)",
                    self.limit, getattr(self.fn, "__name__", type(self.fn).__name__))
                if self.fullgraph:
                    raise FailOnRecompileLimitHit("Hard failure due to fullgraph=True")
                self.run_only = True
                return None
            # Automatic dynamic shapes: a size that changed since a static
            # entry compiles a dynamic one.
            sizeless = generalize(sig, keep_small=False)
            dynamic = self.dynamic is True or (self.dynamic is None and sizeless in self.seen)
            if not dynamic:
                self.seen.append(sizeless)
            e = _Entry(generalize(sig) if dynamic else sig, dynamic, self.make_backend())
            self.entries.append(e)
        with _counters_lock:
            counters["stats"]["unique_graphs"] += 1
        return e


# ---------------------------------------------------------------- CUDA graphs

def _record_log(key):
    if key is None:
        _trees_log.info("Recording cudagraph tree for graph without symints")
    else:
        _trees_log.info("Recording cudagraph tree for symint key %s", key)


def _tensors(value):
    """The tensors in an output (torch tensors have requires_grad)."""
    if hasattr(value, "requires_grad"):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


class _Tree:
    """What a device's tree manager keeps across calls: the path of calls
    since the last new generation (each a function and weak references to
    the outputs it returned), whether the last forward left its backward
    pending, and the functions warned about."""

    def __init__(self):
        self.path = []
        self.pending = False
        self.warned = set()

    def can_start_new_generation(self):
        """try_end_curr_execution: a new generation starts unless a
        backward is pending and the last call's outputs live."""
        if not self.path or not self.pending:
            return True
        return all(r() is None for r in self.path[-1][1])

    def warn_unable(self, fid):
        """check_warn_on_unable_to_start_executing: warns once per
        function whose calls repeat on the path."""
        if fid in self.warned or sum(1 for f, _ in self.path if f == fid) < 2:
            return
        self.warned.add(fid)
        warnings.warn(PENDING_BACKWARD_WARNING)

    def forward_ran(self, fid, eager, returned):
        """Marks the call's backward pending when its output requires
        grad (a forward; an inference call leaves the flag as it was),
        hands the caller an output whose backward clears it, and puts
        the call on the path."""
        if any(t.requires_grad for t in _tensors(eager)):
            self.pending = True
            returned = _with_backward(self, eager, returned)
        self.path.append((fid, [weakref.ref(t) for t in _tensors(returned)]))
        return returned

    def backward_ran(self):
        self.pending = False


def _with_backward(tree, eager, returned):
    """returned (the static output, or eager itself) as an output of
    autograd: its memory is returned's, its gradient flows to eager, and
    its backward tells the tree a backward ran. Only single tensors are
    wrapped; other outputs keep the backward pending."""
    if not (hasattr(eager, "requires_grad") and eager.requires_grad and hasattr(returned, "detach")):
        return returned
    import torch

    class StaticOutput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return returned.detach()

        @staticmethod
        def backward(ctx, grad):
            tree.backward_ran()
            return grad

    return StaticOutput.apply(eager)


_TREE = "tree"  # the tree's key in a device's container, beside the graphs' ids


class _TreeGraphs:
    """Cudagraph trees for one entry: per-thread state, reached through
    get_obj; one graph per distinct size, each with its static outputs."""

    def __init__(self, fn, device_index, warn_limit):
        self.fn = fn
        self.device_index = device_index
        self.warn_limit = warn_limit
        self.warned = False

    def __call__(self, *args, **kwargs):
        container = get_container(self.device_index)
        tree = container.setdefault(_TREE, _Tree())
        if tree.can_start_new_generation():
            tree.path = []
        else:
            # A backward is pending and the last outputs live: torch runs
            # this call eagerly, a warm-up child of the last, and neither
            # records nor replays.
            tree.warn_unable(id(self))
            eager = self.fn(*args, **kwargs)
            return tree.forward_ran(id(self), eager, eager)
        eager = self.fn(*args, **kwargs)
        return tree.forward_ran(id(self), eager, self.static(container, eager, args, kwargs))

    def static(self, container, eager, args, kwargs):
        """The output of this size's graph, holding eager's values:
        recorded on the first call of a size, replayed into the same
        buffer after."""
        graphs = container.setdefault(id(self), {})
        key = signature((args, kwargs))
        if key not in graphs:
            _record_log(key)
            n = len(graphs) + 1
            if self.warn_limit and n > self.warn_limit and not self.warned:
                self.warned = True
                _cudagraphs_log.warning(
                    "CUDAGraph supports dynamic shapes by recording a new graph for each distinct input size. "
                    "Recording too many CUDAGraphs may lead to extra overhead. We have observed %d distinct sizes. "
                    "Please consider the following options for better performance: a) padding inputs to a few fixed "
                    "number of shapes; or b) set torch._inductor.config.triton.cudagraph_skip_dynamic_graphs=True. "
                    "Set torch._inductor.config.triton.cudagraph_dynamic_shape_warn_limit=None to silence this warning.", n)
            graphs[key] = _Buffers.fresh(eager)
            return graphs[key]
        # A replay writes into the graph's static outputs: whatever the
        # caller kept of the last call now reads this call's values.
        graphs[key] = _Buffers.copy_into(graphs[key], eager)
        return graphs[key]


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


class _LegacyGraphs:
    """Legacy CUDA graphs for one entry: one graph per distinct size."""

    def __init__(self, fn):
        self.fn = fn
        self.lock = threading.Lock()  # guards graphs
        self.graphs = {}

    def __call__(self, *args, **kwargs):
        key = signature((args, kwargs))
        with self.lock:
            graph = self.graphs.get(key)
            if graph is None:
                _record_log(key)
                graph = self.graphs[key] = _LegacyGraph(self.fn)
        return graph(*args, **kwargs)


# Compiled code is cached per function (Dynamo caches it on the code
# object), so separate compile calls of one function share its entries
# and their graphs.
_frames = {}
_frames_lock = threading.Lock()  # guards _frames


def compile(fn, cudagraphs, cudagraph_trees, device_index=0, dynamic=None, fullgraph=False,
            recompile_limit=8, warn_limit=8):
    """Returns fn wrapped as torch.compile would run it with these flags;
    state is kept per device index, as torch keeps it per device."""
    if not cudagraphs:
        def make_backend():
            return fn
    elif cudagraph_trees:
        def make_backend():
            return _TreeGraphs(fn, device_index, warn_limit)
    else:
        def make_backend():
            return _LegacyGraphs(fn)
    key = (id(fn), device_index, cudagraphs, cudagraph_trees, dynamic, fullgraph, recompile_limit, warn_limit)
    with _frames_lock:
        frame = _frames.get(key)
        if frame is None:
            frame = _frames[key] = _Frame(fn, make_backend, dynamic, fullgraph, recompile_limit)
    return frame


# ---------------------------------------------------------------- manual capture

class CUDAGraph:
    """torch.cuda.CUDAGraph: the compiled calls made while it captured,
    each with its arguments and output, run again by replay() into the
    same output."""

    def __init__(self):
        self.calls = []

    def add(self, fn, args, kwargs):
        out = _Buffers.fresh(fn(*args, **kwargs))
        self.calls.append((fn, args, kwargs, out))
        return out

    def replay(self):
        for fn, args, kwargs, out in self.calls:
            _Buffers.copy_into(out, fn(*args, **kwargs))


class graph:
    """torch.cuda.graph(g): captures the calling thread's stream into g."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        self.cuda_graph = cuda_graph

    def __enter__(self):
        if getattr(_stream, "capture", None) is not None:
            raise RuntimeError("stand-in: a CUDA graph capture is already under way on this stream")
        _stream.capture = self.cuda_graph
        return self

    def __exit__(self, *exc):
        _stream.capture = None
        return False
