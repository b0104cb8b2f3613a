"""Imports every module of a torch tree that installs a config module and
prints {module: sorted _config keys} as JSON. Run with the tree on PYTHONPATH.

Used by the Go tests to check the static catalog against the real runtime.
"""
import importlib
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
out = {}
for p in sorted((root / "torch").rglob("*.py")):
    rel = p.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    name = ".".join(parts)
    try:
        m = importlib.import_module(name)
    except Exception:  # a broken fixture file, or a module needing more than the tree
        continue
    cfg = m.__dict__.get("_config")
    if isinstance(cfg, dict):
        out[name] = sorted(cfg)
json.dump(out, sys.stdout, indent=1, sort_keys=True)
