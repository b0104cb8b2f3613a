"""Dump reference facts about the installed torch for torchlsp's checks.

Prints JSON: torch version and paths, every config module's _config keys
(aliases included), list_mode_options, and the def lines inspect reports for
a few symbols. Run with the target's interpreter.
"""
import importlib
import inspect
import json
import os
import sys
import time

t0 = time.time()
import torch  # noqa: E402

facts = {"import_s": round(time.time() - t0, 2), "version": torch.__version__,
         "file": torch.__file__, "python": sys.version, "executable": sys.executable}
root = os.path.dirname(torch.__file__)
config_modules = {}
for dirpath, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".py"):
            continue
        p = os.path.join(dirpath, f)
        try:
            src = open(p, encoding="utf-8").read()
        except Exception:
            continue
        if "install_config_module(sys.modules[__name__])" not in src:
            continue
        rel = os.path.relpath(p, os.path.dirname(root))[:-3].replace(os.sep, ".")
        if rel.endswith(".__init__"):
            rel = rel[: -len(".__init__")]
        try:
            m = importlib.import_module(rel)
            cfg = getattr(m, "_config", {})
            entries = {}
            for k, v in cfg.items():
                alias = getattr(v, "alias", None)
                entries[k] = {"alias": alias}
            config_modules[rel] = {"keys": sorted(cfg.keys()), "aliases": {k: e["alias"] for k, e in entries.items() if e["alias"]}}
        except Exception as e:  # keep going: one broken module should not hide the rest
            config_modules[rel] = {"error": repr(e)}
facts["config_modules"] = config_modules
try:
    from torch._inductor import list_mode_options
    facts["modes"] = {m: {k: repr(v) for k, v in list_mode_options(m).items()} for m in ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]}
except Exception as e:
    facts["modes"] = repr(e)


def where(qualname):
    parts = qualname.split(".")
    obj = None
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
            rest = parts[i:]
            break
        except Exception:
            continue
    for a in rest:
        obj = getattr(obj, a)
    obj = inspect.unwrap(obj) if callable(obj) else obj
    try:
        lines, start = inspect.getsourcelines(obj)
        off = next(i for i, l in enumerate(lines) if l.lstrip().startswith(("def ", "class ", "async def ")))
        return {"file": inspect.getsourcefile(obj), "line": start + off}
    except Exception as e:
        return {"error": repr(e)}


facts["where"] = {q: where(q) for q in ["torch.compile", "torch.nn.Linear", "torch._inductor.compile_fx.compile_fx", "torch.utils.checkpoint.checkpoint", "torch.nn.functional.relu", "torch.optim.AdamW", "torch.Tensor"]}
json.dump(facts, sys.stdout, indent=1)
