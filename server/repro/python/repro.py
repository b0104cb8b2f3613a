# torchlsp repro script. Generated; self-contained; run it in a fresh
# interpreter: python3 -u thisfile.py
# Every value below comes from PARAMS, which is JSON data: no part of this
# program is built from the user's text.
#
# It calls a torch.compile'd function many times, from the threads the
# variant names, compares every result with eager on the same inputs, and
# prints one line "TORCHLSP_RESULT {json}" at the end. Progress lines start
# with "TORCHLSP_PROGRESS ".
import ast
import copy
import importlib
import inspect
import json
import linecache
import logging
import math
import os
import re
import runpy
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import types
from concurrent.futures import ThreadPoolExecutor

PARAMS = json.loads(TORCHLSP_PARAMS_LITERAL)

RESULT_PREFIX = "TORCHLSP_RESULT "
PROGRESS_PREFIX = "TORCHLSP_PROGRESS "
STAND_IN_FILE = "<torchlsp-stand-in>/cudagraph_trees.py"
MAX_FRAMES = 40
MAX_TEXT = 2000
MAX_MISMATCHES = 5

_out_lock = threading.Lock()


def emit(prefix, obj):
    line = prefix + json.dumps(obj, sort_keys=True, default=str) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


class Unsupported(Exception):
    """The target cannot run this repro (no torch, no torch.compile)."""


class SetupError(Exception):
    """The repro could not be set up as specified."""


def clip(text):
    text = str(text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def is_torch_frame(path):
    p = path.replace("\\", "/")
    return p.startswith("<torchlsp-stand-in>") or "/torch/" in p


def type_name(exc):
    t = type(exc)
    if t.__module__ in ("builtins", "__torchlsp__", "__main__"):
        return t.__qualname__
    return t.__module__ + "." + t.__qualname__


def describe(exc, phase):
    frames = []
    for fs in traceback.extract_tb(exc.__traceback__)[-MAX_FRAMES:]:
        frames.append({"file": fs.filename, "line": fs.lineno or 0,
                       "func": fs.name, "code": (fs.line or "").strip()})
    innermost = -1
    for i, f in enumerate(frames):
        if is_torch_frame(f["file"]):
            innermost = i
    rec = {"type": type_name(exc), "message": clip(exc), "phase": phase,
           "frames": frames, "innermost_torch": innermost, "count": 0}
    cause = exc.__cause__
    if cause is None and not exc.__suppress_context__:
        cause = exc.__context__
    if cause is not None:
        rec["cause"] = type_name(cause) + ": " + clip(cause)
    return rec


class Tally:
    """Counts calls, right and wrong results, and distinct exceptions."""

    def __init__(self, variant, total, quiet=False):
        self.quiet = quiet
        self.lock = threading.Lock()
        self.variant = variant
        self.total = total
        self.calls = 0
        self.right = 0
        self.wrong = 0
        self.errors = {}
        self.mismatches = []
        self.step = max(1, total // 10)

    def _done(self):
        self.calls += 1
        if self.quiet:
            return
        if self.calls % self.step == 0 or self.calls == self.total:
            emit(PROGRESS_PREFIX, {"variant": self.variant, "done": self.calls,
                                   "total": self.total, "wrong": self.wrong,
                                   "errors": sum(e["count"] for e in self.errors.values())})

    def ok(self):
        with self.lock:
            self.right += 1
            self._done()

    def bad(self, thread, call, diff):
        with self.lock:
            self.wrong += 1
            if len(self.mismatches) < MAX_MISMATCHES:
                self.mismatches.append({"thread": thread, "call": call, "diff": diff})
            self._done()

    def error(self, exc, phase, counted=True):
        rec = describe(exc, phase)
        inner = rec["frames"][rec["innermost_torch"]] if rec["innermost_torch"] >= 0 else {}
        key = (rec["type"], rec["message"], phase, inner.get("file"), inner.get("line"))
        with self.lock:
            rec = self.errors.setdefault(key, rec)
            rec["count"] += 1
            if counted:
                self._done()


# ---------------------------------------------------------------- workloads

def standin_torch_workload(torch, device, seed):
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(64, 128, generator=g).to(device)
    b1 = torch.randn(128, generator=g).to(device)
    w2 = torch.randn(128, 32, generator=g).to(device)

    def mlp(x):
        return torch.relu(x @ w1 + b1) @ w2

    def make_input(thread, call):
        gi = torch.Generator().manual_seed(seed * 1000003 + thread * 100003 + call)
        return (torch.randn(16, 64, generator=gi).to(device),), {}

    return mlp, make_input, "stand-in MLP: relu(x @ W1 + b1) @ W2, x 16x64 float32"


def standin_list_workload(seed):
    import random
    r = random.Random(seed)
    w = [[r.uniform(-1, 1) for _ in range(8)] for _ in range(8)]

    def mlp(x):
        return [[max(0.0, sum(row[k] * w[k][j] for k in range(8))) for j in range(8)] for row in x]

    def make_input(thread, call):
        ri = random.Random(seed * 1000003 + thread * 100003 + call)
        return ([[ri.uniform(-1, 1) for _ in range(8)] for _ in range(4)],), {}

    return mlp, make_input, "stand-in matmul+relu on Python lists (torch not importable)"


def resolve(ref):
    """Imports "module:qualname" without evaluating any text."""
    module, _, qualname = ref.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def split_inputs(value):
    """A factory's value as (args, kwargs): a tuple or list is the
    positional arguments, a dict with "args"/"kwargs" both, anything else
    the one argument."""
    if isinstance(value, dict) and set(value) <= {"args", "kwargs"} and value:
        return tuple(value.get("args") or ()), dict(value.get("kwargs") or {})
    if isinstance(value, tuple):
        return value, {}
    if isinstance(value, list):
        return tuple(value), {}
    return (value,), {}


def factory_inputs(factory):
    try:
        takes_seed = len(inspect.signature(factory).parameters) > 0
    except (TypeError, ValueError):
        takes_seed = False

    def make_input(thread, call):
        return split_inputs(factory(thread * 100003 + call) if takes_seed else factory())

    return make_input


# ---------------------------------------------------------------- the user's code

BUNDLE_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
MAX_BUNDLE_BYTES = 64 << 20


def receive_workspace():
    """Writes the workspace files that follow the script on stdin into a
    fresh temporary directory; returns it. Paths are checked part by part
    and files are created exclusively, never through a link."""
    head = sys.stdin.buffer.readline(32)
    try:
        n = int(head)
    except ValueError:
        raise SetupError("workspace files: bad frame header %r" % head[:32])
    if n < 0 or n > MAX_BUNDLE_BYTES:
        raise SetupError("workspace files: %d bytes is out of bounds" % n)
    data = b""
    while len(data) < n:
        chunk = sys.stdin.buffer.read(n - len(data))
        if not chunk:
            raise SetupError("workspace files: stdin ended after %d of %d bytes" % (len(data), n))
        data += chunk
    import base64
    files = json.loads(data)["files"]
    root = tempfile.mkdtemp(prefix="torchlsp-ws-")
    for f in files:
        parts = f["path"].split("/")
        if not all(BUNDLE_PART.match(x) and x != ".." for x in parts):
            shutil.rmtree(root, ignore_errors=True)
            raise SetupError("workspace files: refused path %r" % f["path"])
        d = root
        for part in parts[:-1]:
            d = os.path.join(d, part)
            if not os.path.isdir(d):
                os.mkdir(d, 0o700)
        fd = os.open(os.path.join(d, parts[-1]), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(base64.b64decode(f["data"]))
    return root, len(files)


class UserCode:
    """Where the user's code lives on the target, and its clean-up."""

    def __init__(self):
        self.root = None
        self.temporary = False

    def setup(self, res):
        p = PARAMS
        if p["workspace_files"]:
            self.root, count = receive_workspace()
            self.temporary = True
            res["workspace_dir"] = self.root
            res["notes"].append("%d workspace file(s) sent over stdin into a temporary directory" % count)
        elif p["workdir"]:
            self.root = os.path.expanduser(p["workdir"])
            if not os.path.isdir(self.root):
                raise SetupError("workdir %s is not a directory on the target" % self.root)
        if self.root:
            sys.path.insert(0, self.root)
            os.chdir(self.root)
        # stdin has given what it carries: from now on its end is the
        # runner's.
        watch_runner()

    def cleanup(self):
        if self.temporary and self.root:
            os.chdir("/")
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


USER = UserCode()

# RUNNER_GONE is the exit status of a run whose runner went away.
RUNNER_GONE = 125


def kill_what_it_started():
    """SIGKILLs this process's descendants, and the rest of its process
    group when it leads one (Linux: read from /proc). Behind a container
    hop the script leads no group, and what the user's code started must
    not outlive it either. killpg is not used: a signal handler cannot be
    changed outside the main thread, and it would take this process too."""
    me, group = os.getpid(), os.getpgrp()
    parent_of, group_of = {}, {}
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                stat = f.read()
            # Fields after the command name, which may hold spaces: state,
            # ppid, pgrp.
            fields = stat[stat.rindex(b")") + 2:].split()
            parent_of[pid], group_of[pid] = int(fields[1]), int(fields[2])
        except (OSError, ValueError, IndexError):
            pass
    doomed = set()
    if group == me:
        doomed.update(pid for pid, g in group_of.items() if g == group)
    children = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    todo = [me]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in doomed:
                doomed.add(c)
                todo.append(c)
    doomed.discard(me)
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def watch_runner():
    """Ends the run once its runner has gone away. The runner keeps this
    process's stdin open until the run ends, so end of file on it means the
    connection to the editor was lost (or the runner stopped): nobody reads
    what comes next, and a GPU process must not run on until its deadline.
    Everything after the script and its workspace files on stdin is read
    and dropped."""
    stream = sys.stdin.buffer

    def watch():
        try:
            while stream.read(65536):
                pass
        except BaseException:
            pass
        try:
            sys.stderr.write("torchlsp: the runner went away (stdin closed); stopping\n")
            sys.stderr.flush()
        except BaseException:
            pass  # the connection is gone: so is stderr
        USER.cleanup()
        kill_what_it_started()
        os._exit(RUNNER_GONE)

    threading.Thread(target=watch, name="torchlsp-runner-watch", daemon=True).start()
    # The user's code sees an empty stdin, as before the watch: input()
    # ends at once instead of waiting on the runner's pipe.
    sys.stdin = open(os.devnull)


class _Captured(BaseException):
    """Stops the entry point once the compiled object's first call is seen.
    A BaseException, so that the user's "except Exception" lets it pass."""


class CapturedCall:
    """Stands where the compiled object would: records the first call."""

    def __init__(self, model, state):
        self.__dict__["_torchlsp_model"] = model
        self.__dict__["_torchlsp_state"] = state

    def __call__(self, *args, **kwargs):
        st = self.__dict__["_torchlsp_state"]
        first = False
        with st["lock"]:
            if "fn" not in st:
                first = True
                st["fn"] = self.__dict__["_torchlsp_model"]
                st["args"], st["kwargs"] = snapshot(TORCH[0], (args, kwargs))
                where = traceback.extract_stack(limit=2)[0]
                st["at"] = "%s:%d" % (os.path.basename(where.filename), where.lineno)
                st["grad"] = TORCH[0].is_grad_enabled() if TORCH[0] is not None and hasattr(TORCH[0], "is_grad_enabled") else None
            running = st["running"]
        if first and running and threading.current_thread() is not threading.main_thread():
            # Stop the entry point's main thread too: capture is done.
            try:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGALRM)
            except (AttributeError, OSError):
                pass
        raise _Captured()

    def __getattr__(self, name):
        return getattr(self.__dict__["_torchlsp_model"], name)

    def __setattr__(self, name, value):
        setattr(self.__dict__["_torchlsp_model"], name, value)


TORCH = [None]  # torch, once imported; read by CapturedCall
# Grad mode the user's calls replay under (thread-local in torch, so set
# in every call): as captured, off with a factory (an inference replay),
# None to leave it alone.
GRAD = [None]


def capture(torch, real_compile, notes):
    """Runs the entry point as __main__ until the compile call at
    capture_file:capture_lines is first called; returns the object it
    compiled and that call's inputs. Other compile calls compile as usual
    until then; after it, nothing the entry point runs compiles."""
    p = PARAMS
    root = USER.root or os.getcwd()
    entry = os.path.join(root, p["entry"])
    want_file = os.path.realpath(os.path.join(root, p["capture_file"]))
    lo, hi = p["capture_lines"]
    state = {"lock": threading.Lock(), "running": True}

    def fake_compile(model=None, **kw):
        caller = sys._getframe(1)
        here = os.path.realpath(caller.f_code.co_filename) == want_file and lo <= caller.f_lineno <= hi
        if "fn" in state or here:
            if model is None:
                return lambda m: CapturedCall(m, state)
            return CapturedCall(model, state)
        if model is None:
            return lambda m: real_compile(m, **kw)
        return real_compile(model, **kw)

    def on_alarm(signum, frame):
        raise _Captured()

    def quiet_hook(args, prev=threading.excepthook):
        if not issubclass(args.exc_type, _Captured):
            prev(args)

    torch.compile = fake_compile
    threading.excepthook = quiet_hook
    signal.signal(signal.SIGALRM, on_alarm)
    old_argv = sys.argv
    sys.argv = [entry]
    if os.path.dirname(entry) not in sys.path:
        sys.path.insert(0, os.path.dirname(entry))  # as "python entry.py" would
    signal.setitimer(signal.ITIMER_REAL, p["capture_timeout_s"])
    ended = "ran to its end"
    try:
        runpy.run_path(entry, run_name="__main__")
    except _Captured:
        ended = "stopped"
    except SystemExit as e:
        ended = "exited (%s)" % e.code
    except Exception as e:
        if "fn" not in state:
            raise SetupError("entry point %s raised before the compiled call: %s: %s" % (p["entry"], type_name(e), clip(e)))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        with state["lock"]:
            state["running"] = False
        # A late signal from a worker must not end the process.
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        sys.argv = old_argv
    if "fn" not in state:
        raise SetupError("running %s for %ss (%s) never called the torch.compile at %s:%d" % (
            p["entry"], p["capture_timeout_s"], ended, p["capture_file"], lo))
    args, kwargs = state["args"], state["kwargs"]

    def make_input(thread, call):
        return snapshot(torch, args), snapshot(torch, kwargs)

    source = "captured: the first call of the compiled object (%s), while running %s as __main__" % (state["at"], p["entry"])
    GRAD[0] = state.get("grad")
    return state["fn"], make_input, source


def describe_value(torch, v):
    if torch is not None and isinstance(v, torch.Tensor):
        return "%s[%s] %s" % (str(v.dtype).replace("torch.", ""), ", ".join(str(d) for d in v.shape), v.device)
    if isinstance(v, (list, tuple)):
        inner = ", ".join(describe_value(torch, x) for x in list(v)[:8])
        return ("(%s)" if isinstance(v, tuple) else "[%s]") % (inner + (", ..." if len(v) > 8 else ""))
    if isinstance(v, dict):
        return "{%s}" % ", ".join("%s: %s" % (k, describe_value(torch, x)) for k, x in list(v.items())[:8])
    return type(v).__name__ + (" " + clip(repr(v))[:40] if isinstance(v, (int, float, bool, str)) else "")


def describe_inputs(torch, args, kwargs):
    out = ["arg %d: %s" % (i, describe_value(torch, a)) for i, a in enumerate(args)]
    out += ["%s=: %s" % (k, describe_value(torch, v)) for k, v in kwargs.items()]
    return out


def source_file(obj):
    """The file obj was defined in. Classes of a script run as __main__
    are not findable through their module, so their methods are asked."""
    try:
        return inspect.getsourcefile(obj) or "?"
    except (TypeError, OSError):
        pass
    for name in ("forward", "__call__", "__init__"):
        code = getattr(getattr(obj, name, None), "__code__", None)
        if code is not None:
            return code.co_filename
    return "?"


def describe_callable(fn):
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        name, where = fn.__qualname__, source_file(fn)
    else:
        name, where = type(fn).__qualname__, source_file(type(fn))
    if where and USER.root and os.path.realpath(where).startswith(os.path.realpath(USER.root) + os.sep):
        where = os.path.relpath(os.path.realpath(where), os.path.realpath(USER.root))
    return "%s (%s)" % (name, where)


def resolve_uncompiled(torch, ref):
    """Imports ref with torch.compile passing its argument through, so that
    a name bound to a compiled object at import gives the object itself
    (and a torch without torch.compile can import the module)."""
    def passthrough(model=None, **kw):
        return model if model is not None else (lambda m: m)

    had = torch is not None and hasattr(torch, "compile")
    real = getattr(torch, "compile", None)
    if torch is not None:
        torch.compile = passthrough
    try:
        fn = resolve(ref)
    finally:
        if had:
            torch.compile = real
        elif torch is not None:
            del torch.compile
    # Compiled before it reached us anyway: replay the original.
    return getattr(fn, "_torchdynamo_orig_callable", None) or getattr(fn, "_orig_mod", None) or fn


def user_workload(torch, real_compile, notes):
    """The user's compiled object and its inputs: from a named factory, or
    captured from the entry point's first call."""
    p = PARAMS
    fn = factory = None
    if p["function"]:
        try:
            fn = resolve_uncompiled(torch, p["function"])
        except (ImportError, AttributeError) as e:
            if not p["entry"]:
                raise SetupError("cannot import %s: %s" % (p["function"], e))
            notes.append("%s is not importable (%s): capturing it from the entry point" % (p["function"], e))
    if p["inputs"]:
        factory = resolve(p["inputs"])
    source = None
    if fn is None or factory is None:
        if not p["entry"]:
            return None
        cfn, cmake, source = capture(torch, real_compile, notes)
        fn = fn or cfn
        make_input = cmake if factory is None else factory_inputs(factory)
        if factory is not None:
            source = "factory %s" % p["inputs"]
    else:
        make_input = factory_inputs(factory)
        source = "factory %s" % p["inputs"]
    if source.startswith("factory"):
        GRAD[0] = False
    return fn, make_input, source


# ---------------------------------------------------------------- comparing

def compare(torch, got, want, rtol, atol):
    """Returns None when got matches want, else a short description."""
    if torch is not None and isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return "got %s, want a tensor" % type(got).__name__
        if got.shape != want.shape:
            return "shape %s, want %s" % (tuple(got.shape), tuple(want.shape))
        g = got.detach().cpu()
        w = want.detach().cpu()
        if g.dtype != w.dtype:
            return "dtype %s, want %s" % (g.dtype, w.dtype)
        if g.is_floating_point() or g.is_complex():
            if torch.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
                return None
            d = (g - w).abs()
            d = d[~d.isnan()] if d.numel() else d
            return "max |diff| %.4g" % (d.max().item() if d.numel() else float("nan"))
        return None if torch.equal(g, w) else "values differ"
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return "structure differs"
        for g, w in zip(got, want):
            d = compare(torch, g, w, rtol, atol)
            if d is not None:
                return d
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return "keys differ"
        for k in want:
            d = compare(torch, got[k], want[k], rtol, atol)
            if d is not None:
                return d
        return None
    if isinstance(want, float) and isinstance(got, (int, float)):
        if math.isclose(got, want, rel_tol=rtol, abs_tol=atol) or (math.isnan(got) and math.isnan(want)):
            return None
        return "|diff| %.4g" % abs(got - want)
    return None if got == want else "values differ"


def snapshot(torch, value):
    """Copies an eager result so later calls cannot change it."""
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(torch, v) for v in value)
    if isinstance(value, dict):
        return {k: snapshot(torch, v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- compile flags

CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")


def literal(text, what):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError) as e:
        raise SetupError("%s: %r is not a Python literal (%s)" % (what, text, e))


def set_dotted(obj, key, value):
    parts = key.split(".")
    for p in parts[:-1]:
        obj = getattr(obj, p)
    getattr(obj, parts[-1])  # unknown names fail here, as config modules do
    setattr(obj, parts[-1], value)


class StandInConfig:
    """The few torch._inductor.config flags the stand-in honours."""

    def __init__(self):
        self.triton = types.SimpleNamespace(
            cudagraphs=os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1",
            cudagraph_trees=True)


def apply_config(torch, settings, stand_in_config, notes):
    for s in settings or []:
        value = literal(s["value"], "%s.%s" % (s["module"], s["key"]))
        if stand_in_config is not None:
            if s["module"] == "torch._inductor.config" and s["key"] in ("triton.cudagraphs", "triton.cudagraph_trees"):
                set_dotted(stand_in_config, s["key"], value)
            else:
                notes.append("stand-in ignores %s.%s" % (s["module"], s["key"]))
            continue
        try:
            mod = importlib.import_module(s["module"])
            set_dotted(mod, s["key"], value)
        except (ImportError, AttributeError) as e:
            raise SetupError("config %s.%s: %s" % (s["module"], s["key"], e))


def compile_kwargs(p):
    kw = {"backend": p["backend"], "fullgraph": p["fullgraph"]}
    if p["mode"]:
        kw["mode"] = p["mode"]
    if p["options"]:
        kw["options"] = {k: literal(v, "option " + k) for k, v in p["options"].items()}
    if p["dynamic"] is not None:
        kw["dynamic"] = p["dynamic"]
    return kw


def stand_in_flags(p, cfg):
    """Resolves cudagraphs and cudagraph_trees as torch._inductor would."""
    cudagraphs = cfg.triton.cudagraphs
    trees = cfg.triton.cudagraph_trees
    if p["mode"] in CUDAGRAPH_MODES:
        cudagraphs = True
    opts = {k: literal(v, "option " + k) for k, v in (p["options"] or {}).items()}
    cudagraphs = bool(opts.get("triton.cudagraphs", cudagraphs))
    trees = bool(opts.get("triton.cudagraph_trees", trees))
    return cudagraphs, trees


def load_stand_in():
    src = PARAMS["stand_in_source"]
    mod = types.ModuleType("torchlsp_stand_in_cudagraph_trees")
    mod.__file__ = STAND_IN_FILE
    linecache.cache[STAND_IN_FILE] = (len(src), None, src.splitlines(True), STAND_IN_FILE)
    exec(compile(src, STAND_IN_FILE, "exec"), mod.__dict__)
    return mod


# ---------------------------------------------------------------- running

def to_device(torch, value, device):
    if torch is None:
        return value
    if isinstance(value, torch.Tensor) or isinstance(value, getattr(torch.nn, "Module", ())):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(torch, v, device) for v in value)
    if isinstance(value, dict):
        return {k: to_device(torch, v, device) for k, v in value.items()}
    return value


def run(res):
    p = PARAMS
    variant = p["variant"]
    stand_in = p["stand_in"]
    per_device = p["per_device"]
    notes = res["notes"]
    USER.setup(res)
    torch = None
    try:
        import torch
    except ImportError as e:
        if not stand_in:
            raise Unsupported("torch is not importable by %s: %s" % (sys.executable, e))
        notes.append("torch is not importable; the stand-in runs on Python lists")
    TORCH[0] = torch
    ndev = p["devices"] if per_device else 1
    if torch is not None:
        res["torch_version"] = str(torch.__version__)
        if torch.cuda.is_available():
            have = torch.cuda.device_count()
            if ndev < 0:
                ndev = have  # every visible device
            if ndev > have:
                notes.append("%d devices asked for, %d visible" % (ndev, have))
                ndev = max(1, have)
            if per_device and ndev < 2:
                raise Unsupported("one thread per GPU needs two or more CUDA devices; %d visible" % have)
            torch.cuda.set_device(0)
            res["device"] = "cuda:0 (%s)" % torch.cuda.get_device_name(0)
            if per_device:
                res["device"] = ", ".join("cuda:%d (%s)" % (i, torch.cuda.get_device_name(i)) for i in range(ndev))
            devices = ["cuda:%d" % i for i in range(ndev)]
        else:
            res["device"] = "cpu"
            devices = ["cpu"] * max(1, ndev)
            if not stand_in:
                notes.append("no CUDA device: torch skips CUDA graphs for CPU tensors, so this run cannot show the CUDA-graph hazard")
    else:
        res["device"] = "cpu"
        devices = ["cpu"] * max(1, ndev)
    if per_device and ndev < 2:
        raise Unsupported("one thread per GPU needs two or more CUDA devices; none visible")
    if per_device and devices[0] == "cpu":
        notes.append("no CUDA devices: %d logical devices on the CPU, each with its own stand-in state" % ndev)
    device = devices[0].split(":")[0] if devices[0].startswith("cuda") else "cpu"
    labels = devices if devices[0] != "cpu" or ndev == 1 else ["cpu#%d" % i for i in range(ndev)]

    if not stand_in and not hasattr(torch, "compile"):
        raise Unsupported("no torch.compile in torch %s" % torch.__version__)
    real_compile = getattr(torch, "compile", None)

    stand_in_mod = stand_in_cfg = None
    if stand_in:
        stand_in_mod = load_stand_in()
        stand_in_cfg = StandInConfig()
    apply_config(torch, p["config"], stand_in_cfg, notes)

    user = None
    if p["entry"] or (p["function"] and p["inputs"]):
        user = user_workload(torch, real_compile, notes)
    if user is not None:
        fn, make_input, source = user
        workload = "user %s, inputs from %s" % (describe_callable(fn), source)
        args0, kwargs0 = make_input(0, 0)
        res["inputs"] = {"source": source, "values": describe_inputs(torch, args0, kwargs0)}
        if GRAD[0] is not None:
            res["inputs"]["values"].append("grad %s" % ("on" if GRAD[0] else "off"))
    elif torch is not None:
        fn, make_input, workload = standin_torch_workload(torch, device, p["seed"])
    else:
        fn, make_input, workload = standin_list_workload(p["seed"])
    if p["function"] and not p["inputs"] and not p["entry"]:
        notes.append("no sample-input factory for %s: ran the stand-in workload instead" % p["function"])
    res["workload"] = workload

    def compile_on(f, index):
        if stand_in:
            return stand_in_mod.compile(f, cudagraphs=cudagraphs, cudagraph_trees=trees, device_index=index)
        return real_compile(f, **kw)

    if stand_in:
        cudagraphs, trees = stand_in_flags(p, stand_in_cfg)
        res["compile"] = {"stand_in": True, "cudagraphs": cudagraphs, "cudagraph_trees": trees}
    else:
        kw = compile_kwargs(p)
        res["compile"] = {k: v for k, v in kw.items()}

    threads, per_thread = p["threads"], p["calls_per_thread"]
    if per_device:
        threads = ndev  # one thread per device, as a training pipeline runs
        res["devices"] = labels
    total = threads * per_thread
    tally = Tally(variant, total)
    dev_tallies = {lab: Tally(variant + "@" + lab, per_thread, quiet=True) for lab in labels} if per_device else {}
    rtol, atol = p["rtol"], p["atol"]

    # Per device: the module and the inputs moved there, made once.
    replicas = {}
    replicas_lock = threading.Lock()

    def replica(index):
        with replicas_lock:
            if index not in replicas:
                f = fn if index == 0 else to_device(torch, copy.deepcopy(fn), devices[index])
                replicas[index] = f
            return replicas[index]

    shared = {}
    shared_lock = threading.Lock()
    per_thread_compiled = threading.local()

    def compiled_for_this_thread(index):
        if per_device or (p["compile_in_threads"] and variant != "main-thread"):
            if not hasattr(per_thread_compiled, "fn"):
                per_thread_compiled.fn = compile_on(replica(index), index)
            return per_thread_compiled.fn
        with shared_lock:
            if "fn" not in shared:
                shared["fn"] = compile_on(fn, 0)
            return shared["fn"]

    def one_call(thread, call):
        index = thread % len(devices) if per_device else 0
        tallies = [tally] + ([dev_tallies[labels[index]]] if per_device else [])
        try:
            if GRAD[0] is not None:
                torch.set_grad_enabled(GRAD[0])
            args, kwargs = make_input(thread, call)
            f = fn
            if per_device:
                if devices[index].startswith("cuda"):
                    torch.cuda.set_device(index)
                args, kwargs = to_device(torch, args, devices[index]), to_device(torch, kwargs, devices[index])
                f = replica(index)
            want = snapshot(torch, f(*args, **kwargs))
        except Exception as e:
            for t in tallies:
                t.error(e, "eager")
            return
        try:
            got = compiled_for_this_thread(index)(*args, **kwargs)
            diff = compare(torch, got, want, rtol, atol)
        except Exception as e:
            for t in tallies:
                t.error(e, "compiled")
            return
        for t in tallies:
            if diff is None:
                t.ok()
            else:
                t.bad(thread, call, diff)

    if not p["compile_in_threads"] and not per_device:
        compiled_for_this_thread(0)  # torch.compile itself runs on the main thread

    deadline = time.monotonic() + p["deadline_s"]
    if variant == "main-thread":
        for t in range(threads):
            for c in range(per_thread):
                one_call(t, c)
    elif variant in ("executor", "executor-per-gpu"):
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="torchlsp-pool") as ex:
            if per_device:
                # One long-lived task per device: the pool's threads are
                # the devices' threads.
                futures = [ex.submit(lambda t: [one_call(t, c) for c in range(per_thread)], t) for t in range(threads)]
            else:
                futures = [ex.submit(one_call, t, c) for c in range(per_thread) for t in range(threads)]
            for f in futures:
                f.result(timeout=max(0.1, deadline - time.monotonic()))
    else:
        barrier = threading.Barrier(threads)

        def worker(t):
            try:
                barrier.wait(timeout=60)
            except threading.BrokenBarrierError as e:
                tally.error(e, "setup", counted=False)
                return
            for c in range(per_thread):
                one_call(t, c)

        workers = [threading.Thread(target=worker, args=(t,), name="torchlsp-worker-%d" % t, daemon=True)
                   for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(max(0.0, deadline - time.monotonic()))
        stuck = [w.name for w in workers if w.is_alive()]
        if stuck:
            notes.append("%d worker thread(s) still running after %ss: %s" % (len(stuck), p["deadline_s"], ", ".join(stuck)))
            res["stuck"] = True

    with tally.lock:
        res["calls"] = tally.calls
        res["right"] = tally.right
        res["wrong"] = tally.wrong
        res["mismatches"] = list(tally.mismatches)
        res["errors"].extend(sorted(tally.errors.values(), key=lambda e: -e["count"]))
    if per_device:
        res["per_device"] = []
        for lab in labels:
            dt = dev_tallies[lab]
            with dt.lock:
                res["per_device"].append({"device": lab, "calls": dt.calls, "right": dt.right, "wrong": dt.wrong,
                                          "errors": sorted(dt.errors.values(), key=lambda e: -e["count"])})
    res["expected_calls"] = total


# ---------------------------------------------------------------- explain

GB_LINK = re.compile(r"/gb/gb(\d+)\.html")
RECOMPILE_AT = re.compile(r"Recompiling function (\S+) in (.+):(\d+)")
STAND_IN_BREAKS = {"print": "print() writes to the terminal: Dynamo graph-breaks on it",
                   "item": "Tensor.item() makes a Python scalar: Dynamo graph-breaks on it (capture_scalar_outputs=False)",
                   "tolist": "Tensor.tolist() makes Python data: Dynamo graph-breaks on it",
                   "numpy": "Tensor.numpy() leaves torch: Dynamo graph-breaks on it",
                   "graph_break": "torch._dynamo.graph_break() asks for a graph break"}


def user_file(path):
    """A path as the report names it: relative to the user's code when it
    is inside it, else as it is."""
    if not path:
        return path
    real = os.path.realpath(path)
    root = os.path.realpath(USER.root) if USER.root else None
    if root and (real == root or real.startswith(root + os.sep)):
        return os.path.relpath(real, root).replace(os.sep, "/")
    return path


def in_user_code(path):
    return bool(path) and not is_torch_frame(path) and "site-packages" not in path and not path.startswith("<")


def explain_inputs(make_input, calls):
    return [make_input(0, c) for c in range(calls)]


def gb_code(text):
    """Dynamo's graph-break code for a reason: from its documentation
    link, else its first line looked up in torch's registry."""
    m = GB_LINK.search(text)
    if m:
        return "GB" + m.group(1)
    try:
        exc = importlib.import_module("torch._dynamo.exc")
        table = exc._load_gb_type_to_gb_id_map()
    except Exception:
        return ""
    for line in text.splitlines()[:3]:
        line = line.strip()
        for prefix in ("Graph Break Reason: ", "Unsupported: "):
            if line.startswith(prefix):
                line = line[len(prefix):]
        if line in table:
            return table[line]
    return ""


def explain_real(torch, fn, inputs, res):
    notes = res["notes"]
    out = {"method": "", "graph_breaks": [], "recompiles": [], "graphs": None}
    dynamo = importlib.import_module("torch._dynamo")
    methods = []
    records = []

    class Grab(logging.Handler):
        def emit(self, record):
            try:
                records.append((record.name, record.getMessage()))
            except Exception:
                pass

    grab = Grab(level=logging.DEBUG)
    loggers = []
    try:
        torch._logging.set_logs(graph_breaks=True, recompiles=True)
        methods.append("TORCH_LOGS=graph_breaks,recompiles")
        for name in list(logging.root.manager.loggerDict):
            if name.endswith(".__graph_breaks") or name.endswith(".__recompiles"):
                lg = logging.getLogger(name)
                lg.addHandler(grab)
                loggers.append(lg)
    except Exception as e:
        notes.append("torch._logging.set_logs: %s" % e)
    if hasattr(dynamo, "explain"):
        methods.append("torch._dynamo.explain")
        args, kwargs = inputs[0]
        dynamo.reset()
        try:
            ex = dynamo.explain(fn)(*args, **kwargs)
        except Exception as e:
            raise SetupError("torch._dynamo.explain: %s: %s" % (type_name(e), clip(e)))
        out["graphs"] = ex.graph_count
        out["graph_break_count"] = ex.graph_break_count
        seen = set()
        for br in ex.break_reasons:
            stack = [f for f in (br.user_stack or []) if in_user_code(f.filename)]
            frame = stack[-1] if stack else (br.user_stack[-1] if br.user_stack else None)
            reason = str(br.reason)
            rec = {"file": user_file(frame.filename) if frame else "", "line": (frame.lineno or 0) if frame else 0,
                   "func": frame.name if frame else "", "reason": clip(reason), "code": gb_code(reason)}
            key = (rec["file"], rec["line"], rec["reason"])
            if key not in seen:
                seen.add(key)
                out["graph_breaks"].append(rec)
    # Recompiles show across calls with different inputs: run the compiled
    # object on each input set, with Dynamo's recompile log on.
    dynamo.reset()
    compiled = torch.compile(fn, backend="eager")
    for args, kwargs in inputs:
        try:
            compiled(*args, **kwargs)
        except Exception as e:
            notes.append("compiled call: %s: %s" % (type_name(e), clip(e)))
            break
    for lg in loggers:
        lg.removeHandler(grab)
    for name, msg in records:
        if name.endswith("__recompiles"):
            m = RECOMPILE_AT.search(msg)
            lines = msg.split("\n")
            reason = " ".join(l.strip(" -") for l in lines[1:] if l.strip() and "triggered by" not in l)
            out["recompiles"].append({"file": user_file(m.group(2)) if m else "", "line": int(m.group(3)) if m else 0,
                                      "func": m.group(1) if m else "", "reason": clip(reason or msg), "code": ""})
        elif name.endswith("__graph_breaks") and not out["graph_breaks"]:
            m = re.search(r"Graph break in user code at (.+):(\d+)", msg)
            rm = re.search(r"Graph Break Reason: (.*)", msg)
            if m:
                out["graph_breaks"].append({"file": user_file(m.group(1)), "line": int(m.group(2)), "func": "",
                                            "reason": clip(rm.group(1) if rm else msg), "code": gb_code(msg)})
    out["method"] = " and ".join(methods) or "torch.compile"
    return out


def explain_stand_in(torch, fn, inputs, res):
    """Without Dynamo (torch before 2.0): runs the function eagerly under a
    profiler and reports the calls Dynamo is known to break on, and input
    signatures that would make it recompile. Marked as the stand-in."""
    out = {"method": "stand-in (no torch._dynamo on this target): eager run under sys.setprofile",
           "graph_breaks": [], "recompiles": [], "graphs": None}
    seen = set()

    def prof(frame, event, arg):
        if event == "c_call":
            name = getattr(arg, "__name__", "")
        elif event == "call":
            name = frame.f_code.co_name
            frame = frame.f_back
            if name != "graph_break" or frame is None:
                return
        else:
            return
        if name not in STAND_IN_BREAKS or not in_user_code(frame.f_code.co_filename):
            return
        f = user_file(frame.f_code.co_filename)
        key = (f, frame.f_lineno)
        if key not in seen:
            seen.add(key)
            out["graph_breaks"].append({"file": f, "line": frame.f_lineno, "func": frame.f_code.co_name,
                                        "reason": "stand-in: " + STAND_IN_BREAKS[name], "code": ""})

    code = getattr(getattr(fn, "forward", fn), "__code__", None)
    where = (user_file(code.co_filename), code.co_firstlineno, code.co_name) if code else ("", 0, "")
    last = None
    signatures = []  # Dynamo caches a graph per signature it has seen
    for args, kwargs in inputs:
        sig = describe_inputs(torch, args, kwargs)
        if last is not None and sig not in signatures:
            changed = [("%s -> %s" % (a, b)) for a, b in zip(last, sig) if a != b]
            out["recompiles"].append({"file": where[0], "line": where[1], "func": where[2], "code": "",
                                      "reason": "stand-in: input signature changed: " + "; ".join(changed)})
        if sig not in signatures:
            signatures.append(sig)
        last = sig
        sys.setprofile(prof)
        try:
            fn(*args, **kwargs)
        finally:
            sys.setprofile(None)
    return out


def run_explain(res):
    p = PARAMS
    notes = res["notes"]
    USER.setup(res)
    try:
        import torch
    except ImportError as e:
        raise Unsupported("torch is not importable by %s: %s" % (sys.executable, e))
    TORCH[0] = torch
    res["torch_version"] = str(torch.__version__)
    res["device"] = "cuda:0 (%s)" % torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    has_dynamo = hasattr(torch, "compile")
    if not has_dynamo and not p["stand_in"]:
        raise Unsupported("no torch.compile in torch %s" % torch.__version__)
    user = user_workload(torch, getattr(torch, "compile", None), notes)
    if user is None:
        raise SetupError("explain needs the user's code: a factory or an entry point")
    fn, make_input, source = user
    res["workload"] = "user %s, inputs from %s" % (describe_callable(fn), source)
    inputs = explain_inputs(make_input, p["calls_per_thread"])
    res["inputs"] = {"source": source, "values": describe_inputs(torch, *inputs[0])}
    if source.startswith("captured"):
        notes.append("one captured input set: a recompile shows only across different inputs; name a factory that takes a seed to see them")
        inputs = inputs[:1]
    if GRAD[0] is not None:
        torch.set_grad_enabled(GRAD[0])
    ex = explain_real(torch, fn, inputs, res) if has_dynamo else explain_stand_in(torch, fn, inputs, res)
    res["explain"] = ex
    res["calls"] = res["expected_calls"] = res["right"] = len(inputs)


def main():
    start = time.monotonic()
    threads = max(2, PARAMS["devices"]) if PARAMS["per_device"] else PARAMS["threads"]
    res = {"variant": PARAMS["variant"], "ok": False, "calls": 0, "right": 0, "wrong": 0,
           "expected_calls": threads * PARAMS["calls_per_thread"],
           "errors": [], "mismatches": [], "torch_version": None, "device": None,
           "seconds": 0.0, "workload": None, "stand_in": PARAMS["stand_in"],
           "unsupported": None, "notes": [], "python": sys.version.split()[0]}
    try:
        try:
            if PARAMS["variant"] == "explain":
                run_explain(res)
            else:
                run(res)
        finally:
            USER.cleanup()
    except Unsupported as e:
        res["unsupported"] = str(e)
    except BaseException as e:
        rec = describe(e, "setup")
        rec["count"] = 1
        res["errors"].append(rec)
    finally:
        res["seconds"] = round(time.monotonic() - start, 3)
        res["ok"] = (not res["errors"] and not res["unsupported"] and res["wrong"] == 0
                     and res["calls"] == res["expected_calls"] and not res.get("stuck"))
        emit(RESULT_PREFIX, res)
    if res.get("stuck"):
        # Stuck daemon threads (a hung replay) must not keep the process up.
        sys.stdout.flush()
        os._exit(3)


main()
