"""Prints what a real torch tree says about itself, as JSON: its version,
whether torch.compile exists, and which of its files install a config module
(found with Python's own ast, independently of the Go scanner)."""
import ast
import json
import pathlib
import sys

site = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(site))
import torch  # noqa: E402
from torch.version import __version__  # noqa: E402


def installs_config(tree):
    names = {"install_config_module"}
    for st in tree.body:
        if isinstance(st, ast.ImportFrom):
            for a in st.names:
                if a.name == "install_config_module":
                    names.add(a.asname or a.name)
    for st in tree.body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            fn = st.value.func
            name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "")
            args = st.value.args
            if name in names and len(args) == 1 and ast.unparse(args[0]) == "sys.modules[__name__]":
                return True
    return False


mods = []
for p in sorted((site / "torch").rglob("*.py")):
    try:
        tree = ast.parse(p.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        continue
    if installs_config(tree):
        mods.append(p.relative_to(site).as_posix())
json.dump({"version": __version__, "has_compile": hasattr(torch, "compile"), "config_files": mods}, sys.stdout)
