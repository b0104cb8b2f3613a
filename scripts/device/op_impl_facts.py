"""Print, as JSON, where the installed torch registers a dozen ops for the
compiler stack, read from its runtime registries: the meta table, the
decomposition tables (post- and pre-autograd), Inductor's decompositions and
lowerings, the Python kernels bound with py_impl, and torch._refs. Each entry
gives the registered function's file (relative to the site dir) and the line
inspect.getsourcelines reports for it after inspect.unwrap (1-based: the
function's first decorator, else its def). torchlsp's static scanner
(server/opimpl) is checked against this output.

Run with the target's interpreter: python3 op_impl_facts.py [OP ...]
"""
import functools
import inspect
import json
import os
import sys

import torch

OPS = sys.argv[1:] or [
    "add", "mul", "randn", "view", "softmax", "_softmax",
    "scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "layer_norm", "native_layer_norm", "matmul", "mm", "relu", "gelu", "embedding", "cat",
]
SITE = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))


def where(fn):
    """File (relative to the site dir), 1-based first line, qualname."""
    if isinstance(fn, functools.partial):
        out = where(fn.func)
        out["generic"] = True
        # Inductor decomposes CompositeImplicitAutograd ops through their
        # C++ kernel (torch._decomp._get_decomp_for_cia): no Python source.
        out["cia"] = getattr(fn.func, "__name__", "") == "_special_op_to_decompose_cia"
        return out
    try:
        f = inspect.unwrap(fn)
    except Exception:  # a broken __wrapped__ chain: report the object itself
        f = fn
    out = {"qualname": getattr(f, "__qualname__", repr(f))}
    try:
        path = inspect.getsourcefile(f)
        out["line"] = inspect.getsourcelines(f)[1]
        out["file"] = os.path.relpath(path, SITE).replace(os.sep, "/")
    except (TypeError, OSError) as e:
        out["error"] = repr(e)
    # Functions made by a factory (make_pointwise, fallback_handler) carry
    # <locals> in their qualname: they say where the factory is, not the op.
    out["generic"] = "<locals>" in out["qualname"]
    return out


def tables():
    found = {}
    dec = getattr(torch._decomp, "global_decomposition_table", None)
    if dec is not None:
        found["meta"] = dec["meta"]
        found["decomposition"] = dec["post_autograd"]
        found["pre_autograd"] = dec["pre_autograd"]
    else:  # torch 1.13
        import torch._meta_registrations as mr
        found["meta"] = mr.meta_table
        found["decomposition"] = torch._decomp.decomposition_table
    try:
        import torch._inductor.decomposition as idec
        import torch._inductor.lowering as low
        found["inductor_decomposition"] = idec.decompositions
        found["lowering"] = low.lowerings
        found["_fallbacks"] = low.fallbacks
    except Exception as e:  # no Inductor (torch 1.13)
        found["_inductor_error"] = repr(e)
    return found


def facts():
    import torch._decomp  # noqa: F401  (fills the tables)
    import torch._refs
    import torch._refs.nn.functional
    import torch._meta_registrations  # noqa: F401
    ts = tables()
    post = ts.get("decomposition", {})
    out = {"version": torch.__version__, "python": sys.version.split()[0], "site": SITE,
           "inductor": "lowering" in ts, "ops": {}}
    if "_inductor_error" in ts:
        out["inductor_error"] = ts["_inductor_error"]
    for name in OPS:
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            out["ops"][name] = {"missing": True}
            continue
        op = {"overloads": sorted(packet.overloads()), "tables": {}, "py_impl": [], "fallbacks": [], "refs": {}}
        for ov in op["overloads"]:
            overload = getattr(packet, ov)
            for tname, table in ts.items():
                if tname.startswith("_") or overload not in table:
                    continue
                fn = table[overload]
                e = where(fn)
                e["overload"] = ov
                kernels = getattr(overload, "py_kernels", {}).values()
                if tname == "inductor_decomposition" and (post.get(overload) is fn or any(k is fn for k in kernels)):
                    e["inherited"] = True  # the core decomposition or py_impl kernel, listed there
                op["tables"].setdefault(tname, []).append(e)
            if overload in ts.get("_fallbacks", ()):
                op["fallbacks"].append(ov)
            for key, fn in getattr(overload, "py_kernels", {}).items():
                # Meta kernels are bound from the meta and decomposition
                # tables above (register_meta, activate_meta): not py_impl.
                if not callable(fn) or str(key).split(".")[-1] == "Meta":
                    continue
                e = where(fn)
                e["overload"], e["key"] = ov, str(key).split(".")[-1]
                op["py_impl"].append(e)
        for mod in ("torch._refs", "torch._refs.nn.functional"):
            ref = getattr(sys.modules[mod], name, None)
            if callable(ref):
                op["refs"][mod + "." + name] = where(ref)
        out["ops"][name] = op
    return out


if __name__ == "__main__":
    json.dump(facts(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
