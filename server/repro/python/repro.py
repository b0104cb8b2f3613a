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
import importlib
import inspect
import json
import linecache
import math
import os
import sys
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

    def __init__(self, variant, total):
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
        return (torch.randn(16, 64, generator=gi).to(device),)

    return mlp, make_input, "stand-in MLP: relu(x @ W1 + b1) @ W2, x 16x64 float32"


def standin_list_workload(seed):
    import random
    r = random.Random(seed)
    w = [[r.uniform(-1, 1) for _ in range(8)] for _ in range(8)]

    def mlp(x):
        return [[max(0.0, sum(row[k] * w[k][j] for k in range(8))) for j in range(8)] for row in x]

    def make_input(thread, call):
        ri = random.Random(seed * 1000003 + thread * 100003 + call)
        return ([[ri.uniform(-1, 1) for _ in range(8)] for _ in range(4)],)

    return mlp, make_input, "stand-in matmul+relu on Python lists (torch not importable)"


def resolve(ref):
    """Imports "module:qualname" without evaluating any text."""
    module, _, qualname = ref.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def user_workload(fn_ref, inputs_ref):
    fn = resolve(fn_ref)
    factory = resolve(inputs_ref)
    try:
        takes_seed = len(inspect.signature(factory).parameters) > 0
    except (TypeError, ValueError):
        takes_seed = False

    def make_input(thread, call):
        args = factory(thread * 100003 + call) if takes_seed else factory()
        if isinstance(args, tuple):
            return args
        if isinstance(args, list):
            return tuple(args)
        return (args,)

    return fn, make_input, "user function %s, inputs from %s" % (fn_ref, inputs_ref)


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

def run(res):
    p = PARAMS
    variant = p["variant"]
    stand_in = p["stand_in"]
    notes = res["notes"]
    torch = None
    try:
        import torch
    except ImportError as e:
        if not stand_in:
            raise Unsupported("torch is not importable by %s: %s" % (sys.executable, e))
        notes.append("torch is not importable; the stand-in runs on Python lists")
    if torch is not None:
        res["torch_version"] = str(torch.__version__)
        if torch.cuda.is_available():
            torch.cuda.set_device(0)
            res["device"] = "cuda:0 (%s)" % torch.cuda.get_device_name(0)
            device = "cuda"
        else:
            res["device"] = "cpu"
            device = "cpu"
            if not stand_in:
                notes.append("no CUDA device: torch skips CUDA graphs for CPU tensors, so this run cannot show the CUDA-graph hazard")
    else:
        res["device"] = "cpu"
        device = "cpu"

    if not stand_in and not hasattr(torch, "compile"):
        raise Unsupported("no torch.compile in torch %s" % torch.__version__)

    stand_in_mod = stand_in_cfg = None
    if stand_in:
        stand_in_mod = load_stand_in()
        stand_in_cfg = StandInConfig()
    apply_config(torch, p["config"], stand_in_cfg, notes)

    if p["function"] and p["inputs"]:
        fn, make_input, workload = user_workload(p["function"], p["inputs"])
    elif torch is not None:
        fn, make_input, workload = standin_torch_workload(torch, device, p["seed"])
    else:
        fn, make_input, workload = standin_list_workload(p["seed"])
    if p["function"] and not p["inputs"]:
        notes.append("no sample-input factory for %s: ran the stand-in workload instead" % p["function"])
    res["workload"] = workload

    if stand_in:
        cudagraphs, trees = stand_in_flags(p, stand_in_cfg)
        res["compile"] = {"stand_in": True, "cudagraphs": cudagraphs, "cudagraph_trees": trees}

        def compile_fn():
            return stand_in_mod.compile(fn, cudagraphs=cudagraphs, cudagraph_trees=trees)
    else:
        kw = compile_kwargs(p)
        res["compile"] = {k: v for k, v in kw.items()}

        def compile_fn():
            return torch.compile(fn, **kw)

    threads, per_thread = p["threads"], p["calls_per_thread"]
    total = threads * per_thread
    tally = Tally(variant, total)
    rtol, atol = p["rtol"], p["atol"]

    shared = {}
    shared_lock = threading.Lock()
    per_thread_compiled = threading.local()

    def compiled_for_this_thread():
        if p["compile_in_threads"] and variant != "main-thread":
            if not hasattr(per_thread_compiled, "fn"):
                per_thread_compiled.fn = compile_fn()
            return per_thread_compiled.fn
        with shared_lock:
            if "fn" not in shared:
                shared["fn"] = compile_fn()
            return shared["fn"]

    def one_call(thread, call):
        try:
            args = make_input(thread, call)
            want = snapshot(torch, fn(*args))
        except Exception as e:
            tally.error(e, "eager")
            return
        try:
            got = compiled_for_this_thread()(*args)
            diff = compare(torch, got, want, rtol, atol)
        except Exception as e:
            tally.error(e, "compiled")
            return
        if diff is None:
            tally.ok()
        else:
            tally.bad(thread, call, diff)

    if not p["compile_in_threads"]:
        compiled_for_this_thread()  # torch.compile itself runs on the main thread

    deadline = time.monotonic() + p["deadline_s"]
    if variant == "main-thread":
        for t in range(threads):
            for c in range(per_thread):
                one_call(t, c)
    elif variant == "executor":
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="torchlsp-pool") as ex:
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
    res["expected_calls"] = total


def main():
    start = time.monotonic()
    res = {"variant": PARAMS["variant"], "ok": False, "calls": 0, "right": 0, "wrong": 0,
           "expected_calls": PARAMS["threads"] * PARAMS["calls_per_thread"],
           "errors": [], "mismatches": [], "torch_version": None, "device": None,
           "seconds": 0.0, "workload": None, "stand_in": PARAMS["stand_in"],
           "unsupported": None, "notes": [], "python": sys.version.split()[0]}
    try:
        run(res)
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
