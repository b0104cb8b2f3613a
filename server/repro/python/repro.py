# torchlsp repro script. Generated; self-contained; run it in a fresh
# interpreter: python3 -u thisfile.py
# Every value comes from the parameters main() is given, which are JSON
# data: no part of this program is built from the user's text. Nothing is
# kept at module level but constants: the state of a run is its Job.
#
# It calls a torch.compile'd function many times, from the threads the
# variant names, compares every result with eager on the same inputs, and
# prints one line "TORCHLSP_RESULT {json}" at the end. Progress lines start
# with "TORCHLSP_PROGRESS ". It runs on Python 3.9 and later (CI: Debian
# 11's Python 3.9 behind the Docker hop, test/hops).
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
import warnings
from concurrent.futures import ThreadPoolExecutor

RESULT_PREFIX = "TORCHLSP_RESULT "
PROGRESS_PREFIX = "TORCHLSP_PROGRESS "
STAND_IN_FILE = "<torchlsp-stand-in>/cudagraph_trees.py"
MAX_FRAMES = 40
MAX_TEXT = 2000
MAX_MISMATCHES = 5

class Output:
    """The script's stdout: whole lines, one writer at a time."""

    def __init__(self):
        self.lock = threading.Lock()  # guards sys.stdout between a line and its flush

    def emit(self, prefix, obj):
        line = prefix + json.dumps(obj, sort_keys=True, default=str) + "\n"
        with self.lock:
            sys.stdout.write(line)
            sys.stdout.flush()


# Variants that differ from "threads" only in CUDA-graph settings: on a
# target with no GPU they would run the very same code.
NO_GPU_SAME_AS_THREADS = ("cudagraphs-off", "cudagraph-trees-off")


# Device nodes of the GPUs torch can run CUDA graphs on (NVIDIA's, and
# AMD's ROCm, which torch also calls cuda); a machine with none of them
# has no torch.cuda device, whatever torch is installed.
GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")


def gpu_device_nodes():
    """The GPU device nodes present, read without importing torch."""
    return [n for n in GPU_DEVICE_NODES if os.path.exists(n)]


class Unsupported(Exception):
    """The target cannot run this repro (no torch, no torch.compile, a
    torch that is no working torch)."""


class TargetUnsupported(Unsupported):
    """Unsupported for the whole target (no torch, no torch.compile, no
    GPU for the CUDA graphs asked for): every variant would say the same,
    so the runner starts no more of them."""


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

    def __init__(self, out, variant, total, quiet=False):
        self.out = out
        self.quiet = quiet
        self.lock = threading.Lock()  # guards the counts below
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
            self.out.emit(PROGRESS_PREFIX, {"variant": self.variant, "done": self.calls,
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

    def __init__(self, params):
        self.params = params
        self.root = None
        self.temporary = False

    def setup(self, res):
        p = self.params
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
        watch_runner(self)

    def cleanup(self):
        if self.temporary and self.root:
            os.chdir("/")
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

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


def watch_runner(user):
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
        user.cleanup()
        kill_what_it_started()
        os._exit(RUNNER_GONE)

    threading.Thread(target=watch, name="torchlsp-runner-watch", daemon=True).start()
    # The user's code sees an empty stdin, as before the watch: input()
    # ends at once instead of waiting on the runner's pipe.
    sys.stdin = open(os.devnull)


class _Captured(BaseException):
    """Stops the entry point once the compiled object's first call is seen.
    A BaseException, so that the user's "except Exception" lets it pass.
    It never leaves capture(): reports never name it."""


def passthrough_compile(model=None, **kw):
    """torch.compile for a torch that has none (the stand-in runs on it):
    the object itself, uncompiled."""
    return model if model is not None else (lambda m: m)


class CapturedCall:
    """Stands where the compiled object would: records the first call and
    stops the entry point; once the capture is over, calls go to the
    object itself (the entry point's other code may still hold this)."""

    def __init__(self, model, capture):
        self.__dict__["_torchlsp_model"] = model
        self.__dict__["_torchlsp_capture"] = capture

    def __call__(self, *args, **kwargs):
        model = self.__dict__["_torchlsp_model"]
        if not self.__dict__["_torchlsp_capture"].first_call(model, args, kwargs):
            return model(*args, **kwargs)
        raise _Captured()

    def __getattr__(self, name):
        return getattr(self.__dict__["_torchlsp_model"], name)

    def __setattr__(self, name, value):
        setattr(self.__dict__["_torchlsp_model"], name, value)


class Capture:
    """Runs the entry point as __main__ until the compile call at
    capture_file:capture_lines is first called, wherever that call happens:
    the main thread, a thread, a pool worker, a coroutine. The first call
    is recorded and raises _Captured in its thread; the main thread, if the
    call was elsewhere, gets SIGALRM and stops too. Everything the capture
    changes (torch.compile, threading.excepthook, SIGALRM, sys.argv) is put
    back before it returns."""

    def __init__(self, job, real_compile):
        p = job.p
        self.job = job
        self.real_compile = real_compile or passthrough_compile
        root = job.user.root or os.getcwd()
        self.entry = os.path.join(root, p["entry"])
        self.want_file = os.path.realpath(os.path.join(root, p["capture_file"]))
        self.lines = p["capture_lines"]
        self.lock = threading.Lock()  # guards the fields below
        self.running = True  # the entry point is being run: a first call stops it
        self.fn = None  # the compiled object, once called
        self.args = self.kwargs = self.at = self.grad = None
        self.seen = threading.Event()  # set at the first call
        self.pid = os.getpid()

    def first_call(self, model, args, kwargs):
        """Records the first call while the capture runs; reports whether
        the caller must stop (raise _Captured)."""
        torch = self.job.torch
        if os.getpid() != self.pid:
            return False  # a forked worker: it runs on as the user's code would
        with self.lock:
            if not self.running:
                return False
            first = self.fn is None
            if first:
                self.fn = model
                self.args, self.kwargs = snapshot(torch, (args, kwargs))
                where = traceback.extract_stack(limit=3)[0]
                self.at = "%s:%d" % (os.path.basename(where.filename), where.lineno)
                self.grad = torch.is_grad_enabled() if torch is not None and hasattr(torch, "is_grad_enabled") else None
                self.seen.set()
        if first and threading.current_thread() is not threading.main_thread():
            # Stop the entry point's main thread too: capture is done.
            try:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGALRM)
            except (AttributeError, OSError, ValueError):
                pass
        return True

    def compile(self, model=None, **kw):
        """torch.compile while the entry point runs: the call at the
        capture lines (and every call after the first) gives a
        CapturedCall; others compile as usual."""
        caller = sys._getframe(1)
        lo, hi = self.lines
        here = os.path.realpath(caller.f_code.co_filename) == self.want_file and lo <= caller.f_lineno <= hi
        if self.fn is not None or here:
            if model is None:
                return lambda m: CapturedCall(m, self)
            return CapturedCall(model, self)
        if model is None:
            return lambda m: self.real_compile(m, **kw)
        return self.real_compile(model, **kw)

    def run(self):
        """Returns the compiled object, a function giving its inputs, and
        where they came from; SetupError in plain words when the capture
        cannot happen."""
        p = self.job.p
        torch = self.job.torch
        entry_name = p["entry"]

        def on_alarm(signum, frame):
            raise _Captured()

        def quiet_hook(args, prev=threading.excepthook):
            if not issubclass(args.exc_type, _Captured):
                prev(args)

        had_compile = torch is not None and hasattr(torch, "compile")
        old = (getattr(torch, "compile", None), threading.excepthook, signal.getsignal(signal.SIGALRM), sys.argv)
        if torch is not None:
            torch.compile = self.compile
        threading.excepthook = quiet_hook
        signal.signal(signal.SIGALRM, on_alarm)
        sys.argv = [self.entry]
        if os.path.dirname(self.entry) not in sys.path:
            sys.path.insert(0, os.path.dirname(self.entry))  # as "python entry.py" would
        before = set(threading.enumerate())
        deadline = time.monotonic() + p["capture_timeout_s"]
        signal.setitimer(signal.ITIMER_REAL, p["capture_timeout_s"])
        ended = "ran to its end"
        failed = None
        try:
            try:
                runpy.run_path(self.entry, run_name="__main__")
                # Like "python entry.py", wait for the threads it started
                # and left running: the first call may still come there.
                self.wait_for_threads(before, deadline)
            except SystemExit as e:
                ended = "exited (%s)" % e.code
                self.wait_for_threads(before, deadline)
        except _Captured:
            ended = "stopped" if self.fn is not None else "was stopped after %ss" % p["capture_timeout_s"]
        except KeyboardInterrupt:
            ended = "was interrupted"
        except Exception as e:
            failed = e
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            with self.lock:
                self.running = False
            # A late signal from a worker must not end the process.
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            sys.argv = old[3]
            threading.excepthook = old[1]
            if torch is not None:
                # The entry point is over: nothing after it compiles through
                # the capture (a torch without compile keeps the
                # pass-through the stand-in runs with).
                torch.compile = old[0] if had_compile else passthrough_compile
        if self.fn is None:
            lo = self.lines[0]
            if failed is not None:
                raise SetupError("the entry point %s raised %s before it called the torch.compile at %s:%d: %s" % (
                    entry_name, type_name(failed), p["capture_file"], lo, clip(failed)))
            raise SetupError("running %s for %ss (it %s) never called the torch.compile at %s:%d in this process "
                             "(a call in a subprocess or a multiprocessing worker is not seen), so there are no inputs to replay: "
                             "name a sample-input factory (# torchlsp: inputs=module:function) or make the entry point call it" % (
                                 entry_name, p["capture_timeout_s"], ended, p["capture_file"], lo))
        args, kwargs = self.args, self.kwargs

        def make_input(thread, call):
            return snapshot(torch, args), snapshot(torch, kwargs)

        where = "the main thread" if self.at is None else self.at
        source = "captured: the first call of the compiled object (%s), while running %s as __main__" % (where, entry_name)
        self.job.grad = self.grad
        return self.fn, make_input, source

    def wait_for_threads(self, before, deadline):
        """Joins the threads the entry point started, until the first call
        or the time box; SIGALRM ends the wait at either."""
        for t in threading.enumerate():
            if t in before or t is threading.current_thread() or t.daemon:
                continue
            while t.is_alive() and not self.seen.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                t.join(min(left, 0.5))


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


def describe_callable(root, fn):
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        name, where = fn.__qualname__, source_file(fn)
    else:
        name, where = type(fn).__qualname__, source_file(type(fn))
    if where and root and os.path.realpath(where).startswith(os.path.realpath(root) + os.sep):
        where = os.path.relpath(os.path.realpath(where), os.path.realpath(root))
    return "%s (%s)" % (name, where)


def resolve_uncompiled(torch, ref):
    """Imports ref with torch.compile passing its argument through, so that
    a name bound to a compiled object at import gives the object itself
    (and a torch without torch.compile can import the module)."""
    had = torch is not None and hasattr(torch, "compile")
    real = getattr(torch, "compile", None)
    if torch is not None:
        torch.compile = passthrough_compile
    try:
        fn = resolve(ref)
    finally:
        if had:
            torch.compile = real
        elif torch is not None:
            del torch.compile
    # Compiled before it reached us anyway: replay the original.
    return getattr(fn, "_torchdynamo_orig_callable", None) or getattr(fn, "_orig_mod", None) or fn


def user_workload(job, real_compile):
    """The user's compiled object and its inputs: from a named factory, or
    captured from the entry point's first call."""
    p, torch, notes = job.p, job.torch, job.notes
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
        cfn, cmake, source = Capture(job, real_compile).run()
        fn = fn or cfn
        make_input = cmake if factory is None else factory_inputs(factory)
        if factory is not None:
            source = "factory %s" % p["inputs"]
    else:
        make_input = factory_inputs(factory)
        source = "factory %s" % p["inputs"]
    if source.startswith("factory"):
        job.grad = False
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


def map_tensors(torch, value, fn):
    """value with fn applied to each of its tensors, through lists, tuples
    and dicts; anything else as it is."""
    if torch is not None and isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(map_tensors(torch, v, fn) for v in value)
    if isinstance(value, dict):
        return {k: map_tensors(torch, v, fn) for k, v in value.items()}
    return value


def snapshot(torch, value):
    """Copies an eager result so later calls cannot change it."""
    return map_tensors(torch, value, lambda t: t.detach().clone())


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


# torch's default recompile limit and CUDA-graph re-record warning limit,
# which the stand-in starts from.
TORCH_RECOMPILE_LIMIT = 8
TORCH_CUDAGRAPH_WARN_LIMIT = 8

# The config keys the stand-in honours: (module, key) -> its own field.
STAND_IN_KEYS = types.MappingProxyType({
    ("torch._inductor.config", "triton.cudagraphs"): "triton.cudagraphs",
    ("torch._inductor.config", "triton.cudagraph_trees"): "triton.cudagraph_trees",
    ("torch._inductor.config", "triton.cudagraph_dynamic_shape_warn_limit"): "triton.cudagraph_dynamic_shape_warn_limit",
    ("torch._dynamo.config", "recompile_limit"): "dynamo.recompile_limit",
    ("torch._dynamo.config", "cache_size_limit"): "dynamo.recompile_limit",
})


class StandInConfig:
    """The few torch config flags the stand-in honours."""

    def __init__(self):
        self.triton = types.SimpleNamespace(
            cudagraphs=os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1",
            cudagraph_trees=True,
            cudagraph_dynamic_shape_warn_limit=TORCH_CUDAGRAPH_WARN_LIMIT)
        self.dynamo = types.SimpleNamespace(recompile_limit=TORCH_RECOMPILE_LIMIT)


def apply_config(torch, settings, stand_in_config, notes):
    for s in settings or []:
        value = literal(s["value"], "%s.%s" % (s["module"], s["key"]))
        if stand_in_config is not None:
            field = STAND_IN_KEYS.get((s["module"], s["key"]))
            if field:
                set_dotted(stand_in_config, field, value)
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
    """Resolves the stand-in's flags as torch would: cudagraphs and
    cudagraph_trees from the mode, options and config, the limits from the
    config (and the options, for the warning limit)."""
    cudagraphs = cfg.triton.cudagraphs
    trees = cfg.triton.cudagraph_trees
    if p["mode"] in CUDAGRAPH_MODES:
        cudagraphs = True
    opts = {k: literal(v, "option " + k) for k, v in (p["options"] or {}).items()}
    warn = opts.get("triton.cudagraph_dynamic_shape_warn_limit", cfg.triton.cudagraph_dynamic_shape_warn_limit)
    return {"cudagraphs": bool(opts.get("triton.cudagraphs", cudagraphs)),
            "cudagraph_trees": bool(opts.get("triton.cudagraph_trees", trees)),
            "recompile_limit": int(cfg.dynamo.recompile_limit),
            "warn_limit": int(warn) if warn else 0}


def load_stand_in(src):
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


class Job:
    """One run of this script: its parameters, the result it prints, and
    what its steps learn on the way."""

    def __init__(self, params, out):
        self.p = params
        self.out = out
        threads = max(2, params["devices"]) if params["per_device"] else params["threads"]
        expected = threads * params["calls_per_thread"]
        if params["variant"] in KEPT_VARIANTS or params["variant"] in CAPTURE_VARIANTS:
            expected = params["kept_calls"]
        elif params["variant"] in PENDING_VARIANTS:
            expected = params["pending_calls"]
        elif params["variant"] in SIZES_VARIANTS:
            expected = 0  # known once the target's limits are read
        self.res = {"variant": params["variant"], "ok": False, "calls": 0, "right": 0, "wrong": 0,
                    "expected_calls": expected,
                    "errors": [], "mismatches": [], "torch_version": None, "device": None,
                    "seconds": 0.0, "workload": None, "stand_in": params["stand_in"],
                    "unsupported": None, "notes": [], "python": sys.version.split()[0]}
        self.notes = self.res["notes"]
        self.user = UserCode(params)
        self.torch = None  # torch, once imported
        self.stand_in = None  # the stand-in module, once loaded
        # Grad mode the user's calls replay under (thread-local in torch,
        # so set in every call): as captured, off with a factory (an
        # inference replay), None to leave it alone.
        self.grad = None


# What a torch must have for any workload to run here (devices, comparing
# results): a stub or a partial install (a package named torch that is not
# PyTorch) lacks them. The stand-in workload needs STAND_IN_TORCH too.
WORKING_TORCH = ("cuda", "Tensor")
STAND_IN_TORCH = ("Generator", "randn")


def torch_lacks(torch, names):
    return ", ".join("torch." + n for n in names if not hasattr(torch, n))


def torch_place(torch):
    return "the torch at %s (version %s)" % (os.path.dirname(getattr(torch, "__file__", None) or "?"),
                                             getattr(torch, "__version__", "?"))


def import_torch(job, required):
    """Imports torch into job.torch; Unsupported, in one sentence, when the
    target's torch cannot run a workload at all."""
    try:
        import torch
    except ImportError as e:
        if required:
            raise TargetUnsupported("torch is not importable by %s: %s" % (sys.executable, e))
        job.notes.append("torch is not importable; the stand-in runs on Python lists")
        return None
    job.res["torch_version"] = str(getattr(torch, "__version__", "?"))
    missing = torch_lacks(torch, WORKING_TORCH)
    if missing:
        raise TargetUnsupported("%s is not a working PyTorch: it has no %s, so no workload can run on this target" % (torch_place(torch), missing))
    job.torch = torch
    return torch


class Devices:
    """Where the calls run: device strings, the labels reports use, and
    the device type the stand-in workload is made on."""

    def __init__(self, job, torch):
        p, res, notes = job.p, job.res, job.notes
        per_device = p["per_device"]
        ndev = p["devices"] if per_device else 1
        if torch is not None and torch.cuda.is_available():
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
        if per_device and ndev < 2:
            raise Unsupported("one thread per GPU needs two or more CUDA devices; none visible")
        if per_device and devices[0] == "cpu":
            notes.append("no CUDA devices: %d logical devices on the CPU, each with its own stand-in state" % ndev)
        self.count = ndev
        self.names = devices
        self.kind = devices[0].split(":")[0] if devices[0].startswith("cuda") else "cpu"
        self.labels = devices if devices[0] != "cpu" or ndev == 1 else ["cpu#%d" % i for i in range(ndev)]


def choose_workload(job, real_compile, devices):
    """The function the variant calls and its inputs: the user's own when
    the parameters name it, else the stand-in."""
    p, res, torch = job.p, job.res, job.torch
    user = None
    if p["entry"] or (p["function"] and p["inputs"]):
        user = user_workload(job, real_compile)
    if user is not None:
        fn, make_input, source = user
        workload = "user %s, inputs from %s" % (describe_callable(job.user.root, fn), source)
        args0, kwargs0 = make_input(0, 0)
        res["inputs"] = {"source": source, "values": describe_inputs(torch, args0, kwargs0)}
        if job.grad is not None:
            res["inputs"]["values"].append("grad %s" % ("on" if job.grad else "off"))
    elif torch is not None:
        missing = torch_lacks(torch, STAND_IN_TORCH)
        if missing:
            raise Unsupported("%s has no %s, so the stand-in workload cannot run on it; a run of your own code can" % (torch_place(torch), missing))
        fn, make_input, workload = standin_torch_workload(torch, devices.kind, p["seed"])
    else:
        fn, make_input, workload = standin_list_workload(p["seed"])
    if p["function"] and not p["inputs"] and not p["entry"]:
        job.notes.append("no sample-input factory for %s: ran the stand-in workload instead" % p["function"])
    res["workload"] = workload
    return fn, make_input


def compiler(job, real_compile, stand_in_cfg):
    """compile_on(f, device_index): the compile the variant asks for, real
    or the stand-in's; records it in the result."""
    p, res = job.p, job.res
    if p["stand_in"]:
        stand_in_mod = load_stand_in(p["stand_in_source"])
        job.stand_in = stand_in_mod
        flags = stand_in_flags(p, stand_in_cfg)
        res["compile"] = dict(flags, stand_in=True, dynamic=p["dynamic"], fullgraph=p["fullgraph"])

        def compile_on(f, index):
            return stand_in_mod.compile(f, device_index=index, dynamic=p["dynamic"], fullgraph=p["fullgraph"], **flags)
        return compile_on
    kw = compile_kwargs(p)
    res["compile"] = dict(kw)

    def compile_on(f, index):
        return real_compile(f, **kw)
    return compile_on


class Replay:
    """One call of the variant: eager first, then compiled, compared."""

    def __init__(self, job, fn, make_input, compile_on, devices, tally, dev_tallies):
        self.job = job
        self.fn = fn
        self.make_input = make_input
        self.compile_on = compile_on
        self.devices = devices
        self.tally = tally
        self.dev_tallies = dev_tallies
        p = job.p
        self.per_device = p["per_device"]
        self.per_thread_compile = self.per_device or (p["compile_in_threads"] and p["variant"] != "main-thread")
        self.replicas = {}  # per device: the module and inputs moved there
        self.replicas_lock = threading.Lock()  # guards replicas
        self.shared = {}  # the one compiled object the threads share
        self.shared_lock = threading.Lock()  # guards shared
        self.local = threading.local()  # each thread's own compiled object

    def replica(self, index):
        with self.replicas_lock:
            if index not in self.replicas:
                f = self.fn if index == 0 else to_device(self.job.torch, copy.deepcopy(self.fn), self.devices.names[index])
                self.replicas[index] = f
            return self.replicas[index]

    def compiled(self, index):
        if self.per_thread_compile:
            if not hasattr(self.local, "fn"):
                self.local.fn = self.compile_on(self.replica(index), index)
            return self.local.fn
        with self.shared_lock:
            if "fn" not in self.shared:
                self.shared["fn"] = self.compile_on(self.fn, 0)
            return self.shared["fn"]

    def call(self, thread, call):
        torch, p = self.job.torch, self.job.p
        names = self.devices.names
        index = thread % len(names) if self.per_device else 0
        tallies = [self.tally] + ([self.dev_tallies[self.devices.labels[index]]] if self.per_device else [])
        try:
            if self.job.grad is not None:
                torch.set_grad_enabled(self.job.grad)
            args, kwargs = self.make_input(thread, call)
            f = self.fn
            if self.per_device:
                if names[index].startswith("cuda"):
                    torch.cuda.set_device(index)
                args, kwargs = to_device(torch, args, names[index]), to_device(torch, kwargs, names[index])
                f = self.replica(index)
            want = snapshot(torch, f(*args, **kwargs))
        except Exception as e:
            for t in tallies:
                t.error(e, "eager")
            return
        try:
            got = self.compiled(index)(*args, **kwargs)
            diff = compare(torch, got, want, p["rtol"], p["atol"])
        except Exception as e:
            for t in tallies:
                t.error(e, "compiled")
            return
        for t in tallies:
            if diff is None:
                t.ok()
            else:
                t.bad(thread, call, diff)


def drive(job, replay, threads, per_thread):
    """Makes the variant's calls from the threads it names; returns the
    names of worker threads still running at the deadline."""
    p, variant = job.p, job.p["variant"]
    deadline = time.monotonic() + p["deadline_s"]
    if variant == "main-thread":
        for t in range(threads):
            for c in range(per_thread):
                replay.call(t, c)
        return []
    if variant in ("executor", "executor-per-gpu"):
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="torchlsp-pool") as ex:
            if replay.per_device:
                # One long-lived task per device: the pool's threads are
                # the devices' threads.
                futures = [ex.submit(lambda t: [replay.call(t, c) for c in range(per_thread)], t) for t in range(threads)]
            else:
                futures = [ex.submit(replay.call, t, c) for c in range(per_thread) for t in range(threads)]
            for f in futures:
                f.result(timeout=max(0.1, deadline - time.monotonic()))
        return []
    barrier = threading.Barrier(threads)

    def worker(t):
        try:
            barrier.wait(timeout=60)
        except threading.BrokenBarrierError as e:
            replay.tally.error(e, "setup", counted=False)
            return
        for c in range(per_thread):
            replay.call(t, c)

    workers = [threading.Thread(target=worker, args=(t,), name="torchlsp-worker-%d" % t, daemon=True)
               for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))
    return [w.name for w in workers if w.is_alive()]


def record(job, tally, dev_tallies, labels):
    res = job.res
    with tally.lock:
        res["calls"] = tally.calls
        res["right"] = tally.right
        res["wrong"] = tally.wrong
        res["mismatches"] = list(tally.mismatches)
        res["errors"].extend(sorted(tally.errors.values(), key=lambda e: -e["count"]))
    if dev_tallies:
        res["per_device"] = []
        for lab in labels:
            dt = dev_tallies[lab]
            with dt.lock:
                res["per_device"].append({"device": lab, "calls": dt.calls, "right": dt.right, "wrong": dt.wrong,
                                          "errors": sorted(dt.errors.values(), key=lambda e: -e["count"])})


def run(job):
    """A repro variant: the workload called from the variant's threads,
    each call compared with eager."""
    p, res = job.p, job.res
    stand_in, per_device = p["stand_in"], p["per_device"]
    job.user.setup(res)
    torch = import_torch(job, required=not stand_in)
    if not stand_in and not hasattr(torch, "compile"):
        raise TargetUnsupported("no torch.compile in torch %s" % torch.__version__)
    if not stand_in and p["cuda_graphs"] and not gpu_device_nodes():
        raise TargetUnsupported("this target has no GPU (no /dev/nvidiactl, /dev/nvidia0 or /dev/kfd), so the CUDA graphs this compile turns on never run here: run the repro on a target with one")
    devices = Devices(job, torch)
    if not stand_in and devices.kind == "cpu" and p["variant"] in NO_GPU_SAME_AS_THREADS:
        raise Unsupported("no GPU here: CUDA graphs never run on the CPU, so this variant would run exactly as threads does")
    real_compile = getattr(torch, "compile", None)
    stand_in_cfg = StandInConfig() if stand_in else None
    apply_config(torch, p["config"], stand_in_cfg, job.notes)
    fn, make_input = choose_workload(job, real_compile, devices)
    compile_on = compiler(job, real_compile, stand_in_cfg)
    if p["variant"] in KEPT_VARIANTS:
        run_kept_outputs(job, fn, make_input, compile_on, cloned=p["variant"] == "kept-outputs-cloned")
        return
    if p["variant"] in SIZES_VARIANTS:
        run_sizes(job, fn, make_input, compile_on, stand_in_cfg, bucketed=p["variant"] == "sizes-bucketed")
        return
    if p["variant"] in PENDING_VARIANTS:
        run_pending_backward(job, fn, make_input, compile_on, no_grad=p["variant"] == "pending-backward-no-grad")
        return
    if p["variant"] in CAPTURE_VARIANTS:
        run_first_call_in_capture(job, fn, make_input, compile_on, ManualCapture(job, devices),
                                  warmed=p["variant"] == "first-call-in-capture-warmed")
        return

    threads, per_thread = p["threads"], p["calls_per_thread"]
    if per_device:
        threads = devices.count  # one thread per device, as a training pipeline runs
        res["devices"] = devices.labels
    total = threads * per_thread
    tally = Tally(job.out, p["variant"], total)
    dev_tallies = {lab: Tally(job.out, p["variant"] + "@" + lab, per_thread, quiet=True) for lab in devices.labels} if per_device else {}
    replay = Replay(job, fn, make_input, compile_on, devices, tally, dev_tallies)
    if not p["compile_in_threads"] and not per_device:
        replay.compiled(0)  # torch.compile itself runs on the main thread
    stuck = drive(job, replay, threads, per_thread)
    if stuck:
        job.notes.append("%d worker thread(s) still running after %ss: %s" % (len(stuck), p["deadline_s"], ", ".join(stuck)))
        res["stuck"] = True
    record(job, tally, dev_tallies, devices.labels)
    res["expected_calls"] = total


# ---------------------------------------------------------------- hazards

KEPT_VARIANTS = ("kept-outputs", "kept-outputs-cloned")
SIZES_VARIANTS = ("sizes", "sizes-bucketed")
PENDING_VARIANTS = ("pending-backward", "pending-backward-no-grad")
CAPTURE_VARIANTS = ("first-call-in-capture", "first-call-in-capture-warmed")
# torch/_inductor/cudagraph_trees.py's warning when a pending backward
# keeps CUDA graph trees from replaying.
PENDING_WARNING = "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards"
# Warm-up calls before a manual capture, on a side stream as torch's
# CUDA graphs docs do (they make 3).
CAPTURE_WARMUPS = 3
# The sizes variants try this many sizes more than the largest limit,
# and never more than MAX_SIZES.
EXTRA_SIZES = 4
MAX_SIZES = 64
MAX_WARNINGS = 8
LIMIT_HIT = re.compile(r"hit config\.(\w+) \((\d+)\)")
RECORDING = "Recording cudagraph tree"
# The logger torch's cudagraph trees announce each recording on (INFO).
RECORDING_LOGGER = "torch._inductor.cudagraph_trees.__cudagraphs"
TORCH_LOGGERS = ("torch._dynamo", "torch._inductor")


def clone_output(torch, value):
    """value.clone() of every tensor in an output, as TL011's fix does."""
    return map_tensors(torch, value, lambda t: t.clone())


def roll(torch, value, shift):
    """value with every tensor (and list of numbers) rotated by shift
    along its last dimension: the same shapes, dtypes and values, in
    another order."""
    if torch is not None and isinstance(value, torch.Tensor):
        return torch.roll(value, shifts=shift, dims=-1) if value.dim() > 0 and value.shape[-1] > 1 else value
    if isinstance(value, list) and value and isinstance(value[0], (int, float)):
        k = shift % len(value)
        return value[k:] + value[:k]
    if isinstance(value, (list, tuple)):
        return type(value)(roll(torch, v, shift) for v in value)
    if isinstance(value, dict):
        return {k: roll(torch, v, shift) for k, v in value.items()}
    return value


def distinct_inputs(job, make_input, count):
    """count input sets that differ from one another: the workload's own,
    or, when it gives the same every time (a captured call, a factory
    without a seed), the first rolled by the call's index."""
    torch = job.torch
    inputs = [make_input(0, c) for c in range(count)]
    if count > 1 and compare(torch, inputs[1], inputs[0], 0.0, 0.0) is None:
        inputs = [inputs[0]] + [roll(torch, inputs[0], c) for c in range(1, count)]
        job.notes.append("the inputs were the same in every call: call N rolls each tensor argument by N along its last dimension, so that the calls' outputs differ")
        return inputs, True
    return inputs, False


def run_kept_outputs(job, fn, make_input, compile_on, cloned):
    """TL011: calls from the main thread, every output kept (cloned right
    after its call in the control), and compared with its own eager result
    only after the last call."""
    p, res, torch = job.p, job.res, job.torch
    count = p["kept_calls"]
    inputs, varied = distinct_inputs(job, make_input, count)
    tally = Tally(job.out, p["variant"], count)
    compiled = compile_on(fn, 0)
    kept = []
    for c, (args, kwargs) in enumerate(inputs):
        if job.grad is not None:
            torch.set_grad_enabled(job.grad)
        try:
            want = snapshot(torch, fn(*args, **kwargs))
        except Exception as e:
            tally.error(e, "eager")
            continue
        try:
            out = compiled(*args, **kwargs)
            if cloned:
                out = clone_output(torch, out)
        except Exception as e:
            tally.error(e, "compiled")
            continue
        kept.append((c, out, want))
    # Only now, after the last call, is any kept output read.
    for c, out, want in kept:
        try:
            diff = compare(torch, out, want, p["rtol"], p["atol"])
        except Exception as e:
            tally.error(e, "compiled")
            continue
        if diff is None:
            tally.ok()
        else:
            tally.bad(0, c, diff)
    distinct = all(compare(torch, kept[i][2], kept[i - 1][2], p["rtol"], p["atol"]) is not None for i in range(1, len(kept)))
    if not distinct:
        job.notes.append("two calls gave the same eager result: an output overwritten by the next call cannot be told from a right one")
    res["kept"] = {"cloned": cloned, "varied": varied, "distinct": distinct}
    record(job, tally, {}, [])
    res["expected_calls"] = count


def is_rows(value):
    """A list standing for a tensor (the stand-in workload without torch)."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], (int, float, list))


def first_argument(args, kwargs):
    if args:
        return args[0]
    return next(iter(kwargs.values()), None)


def leading_size(torch, value):
    """The size of value's leading (batch) dimension; None without one."""
    if torch is not None and isinstance(value, torch.Tensor):
        return int(value.shape[0]) if value.dim() > 0 else None
    if is_rows(value):
        return len(value)
    return None


def resize(torch, value, ref, size):
    """value with the leading dimension of every tensor argument of
    leading size ref made size: rows repeated, or cut."""
    if torch is not None and isinstance(value, torch.Tensor):
        if value.dim() > 0 and value.shape[0] == ref:
            return value.index_select(0, torch.arange(size, device=value.device) % ref)
        return value
    if is_rows(value):
        return [copy.deepcopy(value[i % ref]) for i in range(size)] if len(value) == ref else value
    if isinstance(value, (list, tuple)):
        return type(value)(resize(torch, v, ref, size) for v in value)
    if isinstance(value, dict):
        return {k: resize(torch, v, ref, size) for k, v in value.items()}
    return value


def next_power_of_two(n):
    return 1 << max(0, n - 1).bit_length()


def target_limits(job, stand_in_cfg):
    """The recompile limit (and its name) and the CUDA-graph re-record
    warning limit of the target's torch, read now; 0 where it has none."""
    p = job.p
    if stand_in_cfg is not None:
        flags = stand_in_flags(p, stand_in_cfg)
        return flags["recompile_limit"], "recompile_limit", flags["warn_limit"]
    limit, name = 0, ""
    try:
        dynamo_config = importlib.import_module("torch._dynamo.config")
    except Exception:
        dynamo_config = None
    for key in ("recompile_limit", "cache_size_limit"):
        if hasattr(dynamo_config, key):
            limit, name = int(getattr(dynamo_config, key)), key
            break
    warn = None
    try:
        triton = getattr(importlib.import_module("torch._inductor.config"), "triton", None)
        warn = getattr(triton, "cudagraph_dynamic_shape_warn_limit", None)
    except Exception:
        pass
    opts = {k: literal(v, "option " + k) for k, v in (p["options"] or {}).items()}
    warn = opts.get("triton.cudagraph_dynamic_shape_warn_limit", warn)
    return limit, name, int(warn) if warn else 0


def graph_counter(job):
    """A function giving the graphs Dynamo (or the stand-in) compiled so
    far: torch._dynamo.utils.counters["stats"]["unique_graphs"]; None when
    the target's torch keeps no such count."""
    if job.stand_in is not None:
        counters = job.stand_in.counters
    else:
        try:
            counters = importlib.import_module("torch._dynamo.utils").counters
        except Exception:
            return None
    if not hasattr(counters, "__getitem__"):
        return None

    def count():
        try:
            return int(counters["stats"]["unique_graphs"])
        except Exception:
            return 0
    return count


class TorchLogs:
    """The records torch's Dynamo and Inductor loggers (or the stand-in,
    which logs to the same names) emit while the calls run: WARNING and
    above from all of them, and the INFO records of CUDA-graph
    recordings. Everything it changes is put back by stop()."""

    def __init__(self):
        self.lock = threading.Lock()  # guards records, seen and attached
        self.records = []  # (logger name, level, message)
        self.seen = set()  # ids of the records taken, kept alive in held
        self.held = []
        self.attached = []  # loggers the handler is on
        self.restore = None  # the recording logger's level and propagate
        logs = self

        class Grab(logging.Handler):
            def emit(self, record):
                logs.take(record)

        self.handler = Grab(level=logging.DEBUG)

    def take(self, record):
        if not record.name.startswith(TORCH_LOGGERS):
            return
        try:
            msg = record.getMessage()
        except Exception:
            return
        if record.levelno < logging.WARNING and not (record.name == RECORDING_LOGGER and msg.startswith(RECORDING)):
            return
        with self.lock:
            if id(record) in self.seen:
                return
            self.seen.add(id(record))
            self.held.append(record)
            self.records.append((record.name, record.levelno, msg))

    def attach(self, logger):
        with self.lock:
            if logger in self.attached:
                return
            self.attached.append(logger)
        logger.addHandler(self.handler)

    def start(self):
        rec = logging.getLogger(RECORDING_LOGGER)
        self.restore = (rec.level, rec.propagate)
        # INFO from this one logger only, kept out of torch's own handlers.
        rec.setLevel(logging.INFO)
        rec.propagate = False
        self.attach(rec)
        self.attach(logging.getLogger("torch"))
        self.attach_new()

    def attach_new(self):
        """Attaches to loggers that keep their records from "torch"
        (propagate off), including ones torch made since."""
        for name, lg in list(logging.root.manager.loggerDict.items()):
            if name.startswith(TORCH_LOGGERS) and isinstance(lg, logging.Logger) and not lg.propagate:
                self.attach(lg)

    def stop(self):
        for lg in self.attached:
            lg.removeHandler(self.handler)
        if self.restore is not None:
            rec = logging.getLogger(RECORDING_LOGGER)
            rec.setLevel(self.restore[0])
            rec.propagate = self.restore[1]

    def mark(self):
        with self.lock:
            return len(self.records)

    def since(self, mark):
        with self.lock:
            return self.records[mark:]

    def recordings(self):
        with self.lock:
            return sum(1 for name, _, msg in self.records if name == RECORDING_LOGGER and msg.startswith(RECORDING))

    def warnings(self):
        """The distinct first lines of the warnings, in order."""
        out = []
        with self.lock:
            for _, level, msg in self.records:
                line = clip(msg.strip().split("\n")[0])[:300]
                if level >= logging.WARNING and line not in out:
                    out.append(line)
        return out[:MAX_WARNINGS]


def run_sizes(job, fn, make_input, compile_on, stand_in_cfg, bucketed):
    """TL013: calls from the main thread with more distinct leading sizes
    than the target's limits (padded up to powers of two in the control),
    counting the graphs compiled and recorded and the calls that ran
    uncompiled past the recompile limit or failed on it."""
    p, res, torch = job.p, job.res, job.torch
    args0, kwargs0 = make_input(0, 0)
    first = first_argument(args0, kwargs0)
    ref = leading_size(torch, first)
    if not ref:
        raise Unsupported("the first argument (%s) has no leading dimension to vary, so the calls cannot be made with different sizes" % describe_value(torch, first))
    limit, limit_name, warn = target_limits(job, stand_in_cfg)
    tried = min(MAX_SIZES, max(limit, warn) + EXTRA_SIZES)
    if max(limit, warn) >= tried:
        job.notes.append("the target's limits (%d) are more than the %d sizes this run tries" % (max(limit, warn), MAX_SIZES))
    sizes = [next_power_of_two(s) if bucketed else s for s in range(1, tried + 1)]
    tally = Tally(job.out, p["variant"], len(sizes))
    logs = TorchLogs()
    logs.start()
    compiled_sizes = set()
    fallbacks = failed = 0
    limit_hit = False
    try:
        compiled = compile_on(fn, 0)
        count = graph_counter(job)
        first_count = count() if count else None
        for i, size in enumerate(sizes):
            if job.grad is not None:
                torch.set_grad_enabled(job.grad)
            try:
                args, kwargs = resize(torch, args0, ref, size), resize(torch, kwargs0, ref, size)
                want = snapshot(torch, fn(*args, **kwargs))
            except Exception as e:
                tally.error(e, "eager")
                continue
            before = count() if count else 0
            mark = logs.mark()
            try:
                got = compiled(*args, **kwargs)
                diff = compare(torch, got, want, p["rtol"], p["atol"])
            except Exception as e:
                if type(e).__name__ == "FailOnRecompileLimitHit":
                    failed += 1
                    limit_hit = True
                tally.error(e, "compiled")
                continue
            finally:
                logs.attach_new()
            compiled_now = count is not None and count() > before
            hit_now = any(LIMIT_HIT.search(msg) for name, _, msg in logs.since(mark) if name.startswith("torch._dynamo"))
            if compiled_now:
                compiled_sizes.add(size)
            elif hit_now or (limit_hit and size not in compiled_sizes):
                fallbacks += 1
            limit_hit = limit_hit or hit_now
            if diff is None:
                tally.ok()
            else:
                tally.bad(0, i, diff)
    finally:
        logs.stop()
    res["sizes"] = {"tried": tried, "ran": len(set(sizes)), "bucketed": bucketed, "first": sizes[0], "last": sizes[-1],
                    "recompile_limit": limit, "limit_name": limit_name, "warn_limit": warn,
                    "compiles": (count() - first_count) if count else None, "cudagraphs": logs.recordings(),
                    "fallbacks": fallbacks, "failed": failed, "limit_hit": limit_hit, "warnings": logs.warnings()}
    record(job, tally, {}, [])
    res["expected_calls"] = len(sizes)


def tensors_in(torch, value):
    """The tensors of a value, in order."""
    if torch is not None and isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_in(torch, v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(torch, v)]
    return []


def requiring_grad(torch, value):
    """value with every floating-point tensor a leaf that requires grad."""
    return map_tensors(torch, value, lambda t: t.detach().clone().requires_grad_() if t.is_floating_point() else t)


def grad_inputs(job, fn, inputs):
    """The inputs, made to require grad when neither the function's
    parameters nor its inputs make its output require grad: TL016 is
    about forwards that leave a backward pending. Says which in a note."""
    torch = job.torch
    args, kwargs = inputs[0]
    with torch.enable_grad():
        if any(t.requires_grad for t in tensors_in(torch, fn(*args, **kwargs))):
            return inputs, False
    inputs = [(requiring_grad(torch, a), requiring_grad(torch, k)) for a, k in inputs]
    args, kwargs = inputs[0]
    with torch.enable_grad():
        if not any(t.requires_grad for t in tensors_in(torch, fn(*args, **kwargs))):
            raise Unsupported("the output requires no grad even with the floating-point inputs requiring it, so no backward can be pending")
    job.notes.append("neither the function's parameters nor its inputs required grad: the floating-point inputs were made to, as an argument made with requires_grad=True does")
    return inputs, True


def run_pending_backward(job, fn, make_input, compile_on, no_grad):
    """TL016: calls from the main thread in grad mode (under torch.no_grad()
    in the control), every output kept alive and no backward run, counting
    torch's pending-backwards warnings and the calls that replayed a CUDA
    graph: an output in the memory of an earlier one, which lives on, is a
    graph's static output."""
    p, res, torch = job.p, job.res, job.torch
    if torch is None:
        raise Unsupported("torch is not importable: without autograd no backward is ever pending")
    count = p["pending_calls"]
    inputs, _ = distinct_inputs(job, make_input, count)
    inputs, made = grad_inputs(job, fn, inputs)
    tally = Tally(job.out, p["variant"], count)
    logs = TorchLogs()
    kept, seen = [], set()
    replays = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        logs.start()
        try:
            compiled = compile_on(fn, 0)
            for c, (args, kwargs) in enumerate(inputs):
                with torch.no_grad() if no_grad else torch.enable_grad():
                    try:
                        want = snapshot(torch, fn(*args, **kwargs))
                    except Exception as e:
                        tally.error(e, "eager")
                        continue
                    try:
                        out = compiled(*args, **kwargs)
                        diff = compare(torch, out, want, p["rtol"], p["atol"])
                    except Exception as e:
                        tally.error(e, "compiled")
                        continue
                    finally:
                        logs.attach_new()
                # Kept alive, no backward run: each forward's stays pending.
                kept.append(out)
                ptrs = [t.data_ptr() for t in tensors_in(torch, out)]
                if ptrs and ptrs[0] in seen:
                    replays += 1
                seen.update(ptrs)
                if diff is None:
                    tally.ok()
                else:
                    tally.bad(0, c, diff)
        finally:
            logs.stop()
    warned = [str(w.message) for w in caught if PENDING_WARNING in str(w.message)]
    res["pending"] = {"no_grad": no_grad, "inputs_require_grad": made, "warned": len(warned),
                      "warning": clip(warned[0])[:300] if warned else "", "replays": replays,
                      "cudagraphs": logs.recordings(),
                      "cudagraphs_on": bool(res.get("compile", {}).get("cudagraphs", p["cuda_graphs"]))}
    record(job, tally, {}, [])
    res["expected_calls"] = count


class ManualCapture:
    """torch.cuda.graph, torch.cuda.CUDAGraph and a side stream on a GPU;
    the stand-in's graph and CUDAGraph, which simulate them, with the
    stand-in (no streams: its capture is the calling thread's)."""

    def __init__(self, job, devices):
        torch = job.torch
        if torch is None:
            raise Unsupported("torch is not importable: a CUDA graph capture replays tensors")
        self.torch = torch
        self.stand_in = job.stand_in
        if self.stand_in is not None:
            self.new_graph, self.graph = self.stand_in.CUDAGraph, self.stand_in.graph
            return
        if devices.kind != "cuda":
            raise Unsupported("no GPU here: torch.cuda.graph captures only on a CUDA device")
        self.new_graph, self.graph = torch.cuda.CUDAGraph, torch.cuda.graph

    def warm_up(self, call, times):
        """Calls call times on a side stream, as torch's CUDA graphs docs
        warm up before a capture."""
        if self.stand_in is not None:
            for _ in range(times):
                call()
            return
        cuda = self.torch.cuda
        s = cuda.Stream()
        s.wait_stream(cuda.current_stream())
        with cuda.stream(s):
            for _ in range(times):
                call()
        cuda.current_stream().wait_stream(s)

    def sync(self):
        if self.stand_in is None:
            self.torch.cuda.synchronize()


def copy_into(torch, static, value):
    """Copies value's tensors into static's, as a capture's inputs are
    refilled before a replay; False when their shapes differ or other
    values do."""
    if isinstance(static, torch.Tensor):
        if not isinstance(value, torch.Tensor) or static.shape != value.shape:
            return False
        with torch.no_grad():
            static.copy_(value)
        return True
    if isinstance(static, (list, tuple)) and isinstance(value, (list, tuple)) and len(static) == len(value):
        return all(copy_into(torch, s, v) for s, v in zip(static, value))
    if isinstance(static, dict) and isinstance(value, dict) and set(static) == set(value):
        return all(copy_into(torch, static[k], value[k]) for k in static)
    return compare(torch, static, value, 0.0, 0.0) is None


def run_first_call_in_capture(job, fn, make_input, compile_on, capture, warmed):
    """TL017: the compiled object's first call made inside
    torch.cuda.graph(g) (in the control, after warm-up calls on a side
    stream); the capture's exception, or its replays on new inputs copied
    into the captured ones, each compared with eager."""
    p, res, torch = job.p, job.res, job.torch
    replays = p["kept_calls"]
    inputs, _ = distinct_inputs(job, make_input, replays + 1)
    static_args, static_kwargs = snapshot(torch, inputs[0][0]), snapshot(torch, inputs[0][1])
    tally = Tally(job.out, p["variant"], replays)
    info = res["graph_capture"] = {"warmed": warmed, "warmups": CAPTURE_WARMUPS if warmed else 0,
                                   "captured": False, "replays": 0}
    if job.grad is not None:
        torch.set_grad_enabled(job.grad)
    compiled = compile_on(fn, 0)
    try:
        if warmed:
            capture.warm_up(lambda: compiled(*static_args, **static_kwargs), CAPTURE_WARMUPS)
        g = capture.new_graph()
        with capture.graph(g):
            static_out = compiled(*static_args, **static_kwargs)
        capture.sync()
    except Exception as e:
        tally.error(e, "capture")
        record(job, tally, {}, [])
        res["expected_calls"] = replays
        return
    info["captured"] = True
    for c, (args, kwargs) in enumerate(inputs[1:]):
        try:
            want = snapshot(torch, fn(*args, **kwargs))
        except Exception as e:
            tally.error(e, "eager")
            continue
        if not (copy_into(torch, static_args, args) and copy_into(torch, static_kwargs, kwargs)):
            raise Unsupported("the inputs change in more than their tensors' values, so a captured graph cannot replay them")
        try:
            g.replay()
            capture.sync()
            info["replays"] += 1
            diff = compare(torch, static_out, want, p["rtol"], p["atol"])
        except Exception as e:
            tally.error(e, "replay")
            continue
        if diff is None:
            tally.ok()
        else:
            tally.bad(0, c, diff)
    record(job, tally, {}, [])
    res["expected_calls"] = replays


# ---------------------------------------------------------------- explain

GB_LINK = re.compile(r"/gb/gb(\d+)\.html")
RECOMPILE_AT = re.compile(r"Recompiling function (\S+) in (.+):(\d+)")
STAND_IN_BREAKS = types.MappingProxyType({"print": "print() writes to the terminal: Dynamo graph-breaks on it",
                   "item": "Tensor.item() makes a Python scalar: Dynamo graph-breaks on it (capture_scalar_outputs=False)",
                   "tolist": "Tensor.tolist() makes Python data: Dynamo graph-breaks on it",
                   "numpy": "Tensor.numpy() leaves torch: Dynamo graph-breaks on it",
                   "graph_break": "torch._dynamo.graph_break() asks for a graph break"})


def user_file(root, path):
    """A path as the report names it: relative to the user's code (root)
    when it is inside it, else as it is."""
    if not path:
        return path
    real = os.path.realpath(path)
    root = os.path.realpath(root) if root else None
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


def explain_real(job, fn, inputs, real_compile):
    torch, notes, root = job.torch, job.notes, job.user.root
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
            rec = {"file": user_file(root, frame.filename) if frame else "", "line": (frame.lineno or 0) if frame else 0,
                   "func": frame.name if frame else "", "reason": clip(reason), "code": gb_code(reason)}
            key = (rec["file"], rec["line"], rec["reason"])
            if key not in seen:
                seen.add(key)
                out["graph_breaks"].append(rec)
    # Recompiles show across calls with different inputs: run the compiled
    # object on each input set, with Dynamo's recompile log on.
    dynamo.reset()
    compiled = real_compile(fn, backend="eager")
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
            out["recompiles"].append({"file": user_file(root, m.group(2)) if m else "", "line": int(m.group(3)) if m else 0,
                                      "func": m.group(1) if m else "", "reason": clip(reason or msg), "code": ""})
        elif name.endswith("__graph_breaks") and not out["graph_breaks"]:
            m = re.search(r"Graph break in user code at (.+):(\d+)", msg)
            rm = re.search(r"Graph Break Reason: (.*)", msg)
            if m:
                out["graph_breaks"].append({"file": user_file(root, m.group(1)), "line": int(m.group(2)), "func": "",
                                            "reason": clip(rm.group(1) if rm else msg), "code": gb_code(msg)})
    out["method"] = " and ".join(methods) or "torch.compile"
    return out


def explain_stand_in(job, fn, inputs):
    """Without Dynamo (torch before 2.0): runs the function eagerly under a
    profiler and reports the calls Dynamo is known to break on, and input
    signatures that would make it recompile. Marked as the stand-in."""
    out = {"method": "stand-in (no torch._dynamo on this target): eager run under sys.setprofile",
           "graph_breaks": [], "recompiles": [], "graphs": None}
    torch, root = job.torch, job.user.root
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
        f = user_file(root, frame.f_code.co_filename)
        key = (f, frame.f_lineno)
        if key not in seen:
            seen.add(key)
            out["graph_breaks"].append({"file": f, "line": frame.f_lineno, "func": frame.f_code.co_name,
                                        "reason": "stand-in: " + STAND_IN_BREAKS[name], "code": ""})

    code = getattr(getattr(fn, "forward", fn), "__code__", None)
    where = (user_file(root, code.co_filename), code.co_firstlineno, code.co_name) if code else ("", 0, "")
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


def run_explain(job):
    """Explain: the user's compiled object under Dynamo's explain (or the
    stand-in's profile where torch has no Dynamo)."""
    p, res, notes = job.p, job.res, job.notes
    job.user.setup(res)
    torch = import_torch(job, required=True)
    res["device"] = "cuda:0 (%s)" % torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    has_dynamo = hasattr(torch, "compile")
    if not has_dynamo and not p["stand_in"]:
        raise Unsupported("no torch.compile in torch %s" % torch.__version__)
    real_compile = getattr(torch, "compile", None)
    user = user_workload(job, real_compile)
    if user is None:
        raise SetupError("explain needs the user's code: a factory or an entry point")
    fn, make_input, source = user
    res["workload"] = "user %s, inputs from %s" % (describe_callable(job.user.root, fn), source)
    inputs = explain_inputs(make_input, p["calls_per_thread"])
    res["inputs"] = {"source": source, "values": describe_inputs(torch, *inputs[0])}
    if source.startswith("captured"):
        notes.append("one captured input set: a recompile shows only across different inputs; name a factory that takes a seed to see them")
        inputs = inputs[:1]
    if job.grad is not None:
        torch.set_grad_enabled(job.grad)
    ex = explain_real(job, fn, inputs, real_compile) if has_dynamo else explain_stand_in(job, fn, inputs)
    res["explain"] = ex
    res["calls"] = res["expected_calls"] = res["right"] = len(inputs)


def finish(status):
    """Ends the process once the result is out. Threads the user's code
    left running (a server loop, a pool, a printer) are not waited for:
    the interpreter's shutdown would race them for stdout and stderr
    ("Fatal Python error: _enter_buffered_busy … daemon threads") or wait
    for them forever. Both streams are flushed first."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status)


def main(params):
    start = time.monotonic()
    out = Output()
    job = Job(params, out)
    res = job.res
    try:
        try:
            if params["variant"] == "explain":
                run_explain(job)
            else:
                run(job)
        finally:
            job.user.cleanup()
    except TargetUnsupported as e:
        res["unsupported"] = str(e)
        res["unsupported_target"] = True
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
        out.emit(RESULT_PREFIX, res)
    # Stuck worker threads (a hung replay) must not keep the process up.
    finish(3 if res.get("stuck") else 0)


main(json.loads("TORCHLSP_PARAMS_LITERAL"))
