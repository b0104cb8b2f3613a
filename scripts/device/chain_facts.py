"""Where the running torch defines the objects of static chains, for torchlsp.

Run with the target's interpreter (on the GPU host: torch 2.11):

    python3 chain_facts.py [QUERY ...] [--queries FILE] > chain-facts.json

A query is a dotted name (torch._inductor.config.patch) or a dotted name and
a keyword argument (torch.nn.functional.softmax:dim). FILE holds one query a
line (# comments allowed). --module M (repeatable) adds every public name of
module M as the running torch has it, and, with --keywords, every parameter
of each that can be passed by keyword. Without queries the built-in list
below is used.

Prints JSON: the torch version, the site directory torch was imported from,
and for each query the file and line where inspect says the object is
defined (after inspect.unwrap; the def or class line, decorators skipped),
or, for a keyword, the line and column of the parameter in the signature of
the def that runs (a class's __init__). Paths are given both absolute and
relative to the site directory. An object inspect cannot place (compiled, a
plain value) has "error" instead.
"""
import argparse
import ast
import importlib
import inspect
import json
import os
import sys

DEFAULT_QUERIES = """
torch.compile
torch.compile:mode
torch.compile:fullgraph
torch.nn.Linear
torch.nn.Linear:bias
torch.nn.Linear.forward
torch.nn.LayerNorm:eps
torch.nn.Embedding:padding_idx
torch.nn.Module.parameters
torch.nn.Module.zero_grad
torch.nn.ModuleList
torch.nn.Dropout
torch.nn.functional
torch.nn.functional.softmax
torch.nn.functional.softmax:dim
torch.nn.functional.cross_entropy
torch.nn.functional.cross_entropy:ignore_index
torch.nn.functional.relu:inplace
torch.nn.functional.Tensor
torch.nn.init.kaiming_uniform_
torch.nn.init.kaiming_uniform_:a
torch.nn.utils.clip_grad_norm_
torch.nn.utils.clip_grad_norm_:max_norm
torch.nn.parallel.DistributedDataParallel
torch.nn.parallel.DistributedDataParallel:device_ids
torch.nn.attention.register_flash_attention_impl
torch.nn.attention.sdpa_kernel
torch.special.Tensor
torch.Tensor.backward
torch.autograd.grad
torch.optim.AdamW
torch.optim.AdamW:lr
torch.optim.AdamW:weight_decay
torch.optim.AdamW.step
torch.optim.lr_scheduler.CosineAnnealingLR
torch.optim.lr_scheduler.CosineAnnealingLR:T_max
torch.utils.checkpoint.checkpoint
torch.utils.checkpoint.checkpoint:use_reentrant
torch.utils.data.DataLoader
torch.utils.data.DataLoader:num_workers
torch.cuda.is_available
torch.cuda.amp.GradScaler
torch.amp.GradScaler
torch.amp.GradScaler:init_scale
torch.autocast
torch.autocast:dtype
torch.no_grad
torch.inference_mode
torch.manual_seed
torch.jit.script
torch.distributed.init_process_group
torch.distributed.init_process_group:backend
torch.distributed.fsdp.FullyShardedDataParallel
torch.distributed.fsdp.FullyShardedDataParallel:sharding_strategy
torch.ao.quantization.quantize_dynamic
torch._lobpcg.LOBPCG_call_tracker_orig
torch._inductor.config
torch._inductor.config.patch
torch._inductor.config.save_config
torch._inductor.config.triton
torch._dynamo.config.patch
torch._dynamo.reset
torch._dynamo.optimize
"""


def parse_queries(lines):
    out = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, keyword = line.partition(":")
        out.append((name.strip(), keyword.strip()))
    return out


def lookup(name):
    """Resolves a dotted name as the expression would: getattr from the top
    package on (a module's __getattr__ included), importing a submodule only
    where no attribute has the name (a function named like its module wins,
    as torch.nn.utils.spectral_norm does)."""
    parts = name.split(".")
    obj = importlib.import_module(parts[0])
    for i in range(1, len(parts)):
        try:
            obj = getattr(obj, parts[i])
        except AttributeError:
            if not inspect.ismodule(obj):
                raise
            obj = importlib.import_module(".".join(parts[: i + 1]))
    return obj


def def_line(obj):
    """File and 1-based def/class line of obj, decorators skipped."""
    if inspect.ismodule(obj):
        return inspect.getsourcefile(obj), 1
    lines, start = inspect.getsourcelines(obj)
    off = next(i for i, l in enumerate(lines) if l.lstrip().startswith(("def ", "class ", "async def ")))
    return inspect.getsourcefile(obj), start + off


def callee(obj):
    """The def a call of obj runs: a class's __init__, a bound method's
    function."""
    if inspect.isclass(obj):
        init = obj.__init__
        if not (inspect.isfunction(init) or inspect.ismethod(init)):
            raise TypeError(f"{obj.__qualname__}.__init__ has no Python source")
        obj = init
    return inspect.unwrap(getattr(obj, "__func__", obj))


def parameter(obj, keyword):
    """File, 1-based line and 0-based byte column of a parameter."""
    fn = callee(obj)
    path, line = def_line(fn)
    node = defs(path).get(line)
    if node is None:
        raise LookupError(f"no def at {path}:{line}")
    # Positional-only parameters cannot be passed by keyword.
    for a in node.args.args + node.args.kwonlyargs:
        if a.arg == keyword:
            return path, a.lineno, a.col_offset
    raise LookupError(f"{fn.__qualname__} has no parameter {keyword!r} (only **kwargs)")


_defs = {}


def defs(path):
    """The defs of a file by 1-based line, each file parsed once."""
    if path not in _defs:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        _defs[path] = {n.lineno: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return _defs[path]


def module_queries(modname, keywords):
    """Every public attribute of a module at run time, and with keywords
    every parameter of each that a call can pass by name."""
    m = importlib.import_module(modname)
    out = []
    for attr in sorted(dir(m)):
        if attr.startswith("_"):
            continue
        name = modname + "." + attr
        out.append((name, ""))
        if not keywords:
            continue
        try:
            obj = getattr(m, attr)
            if inspect.ismodule(obj):
                continue
            sig = inspect.signature(callee(obj))
        except Exception:  # no signature to read: the name alone is asked
            continue
        for i, p in enumerate(sig.parameters.values()):
            if i == 0 and p.name in ("self", "cls"):
                continue
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                out.append((name, p.name))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("queries", nargs="*", help="NAME or NAME:KEYWORD")
    ap.add_argument("--queries", dest="file", help="file of queries, one a line")
    ap.add_argument("--module", action="append", default=[], help="ask about every public name of this module")
    ap.add_argument("--keywords", action="store_true", help="with --module, ask about their keyword parameters too")
    args = ap.parse_args()
    lines = list(args.queries)
    if args.file:
        with open(args.file, encoding="utf-8") as f:
            lines += f.read().splitlines()
    queries = parse_queries(lines)

    import torch

    for m in args.module:
        queries += module_queries(m, args.keywords)
    if not queries:
        queries = parse_queries(DEFAULT_QUERIES.splitlines())

    site = os.path.dirname(os.path.dirname(os.path.realpath(torch.__file__)))
    facts = []
    for name, keyword in queries:
        fact = {"name": name, "keyword": keyword}
        try:
            obj = lookup(name)
            fact["kind"] = type(obj).__name__
            if keyword:
                path, line, col = parameter(obj, keyword)
                fact["col"] = col
            else:
                path, line = def_line(inspect.unwrap(obj) if callable(obj) else obj)
            path = os.path.realpath(path)
            fact["file"], fact["line"] = path, line
            fact["rel"] = os.path.relpath(path, site).replace(os.sep, "/")
        except Exception as e:  # one query's failure must not hide the rest
            fact["error"] = f"{type(e).__name__}: {e}"
        facts.append(fact)
    json.dump({"version": torch.__version__, "site": site, "python": sys.version.split()[0], "facts": facts},
              sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
