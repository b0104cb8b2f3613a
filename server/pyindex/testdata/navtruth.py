#!/usr/bin/env python3
"""Where is each name of a Python file defined? The reference answer.

For every identifier of the given files that a reader could ask
"go to definition" about, this prints where it is defined, decided with
Python's own ast and symtable modules and an import resolution over the
site directory, or why it cannot be decided without running the code.
torchlsp's resolver (server/pyindex, server/pyscope) is measured against
it; nothing here is written by hand per name.

    navtruth.py --site SITE [--package torch] FILE...
    navtruth.py --site SITE --package torch --refs FILE

FILE is relative to SITE. One JSON object per line:

    {"file": "torch/x.py", "line": 10, "col": 4, "name": "get_obj",
     "kind": "read", "def": {"file": "torch/x.py", "line": 3, "col": 4}}

Lines are 0-based, columns are UTF-8 byte offsets, as torchlsp counts
them. "def" is null when the answer is undecided; "why" then says why.

The rules (docs/NAVIGATION.md states them for both sides):
  - Which scope a name belongs to is symtable's answer.
  - Of several bindings in that scope: from the same scope (or class
    bodies and comprehensions around it, which run at once) the last one
    made before the read, else the first; from a function body, the last
    one, preferring one outside "if TYPE_CHECKING:". A binding made under
    a global or nonlocal declaration in another scope counts only when
    the scope binds the name nowhere itself.
  - A name lands on its binding; an import binding lands where the import
    leads (a module's file at 0:0, or the imported name's definition).
  - An attribute of a module or class is looked up as Python does (the
    module's bindings, star imports, then submodules; a class's C3 MRO,
    instance attributes assigned through self in its methods after each
    class's body, unless a later class of the MRO declared in a .pyi stub,
    a compiled class, declares the name: its data descriptor takes the
    assignment); a plain rebinding "a = b.c" reached that way is the
    object b.c names, unless that is only declared in a .pyi stub.
  - self is the instance, cls the class; x = C(...) makes x an instance of
    C; super().m looks past the enclosing class in the MRO.
  - A keyword argument names the parameter of the function called (of
    __init__ for a class).
"""

import argparse
import ast
import json
import os
import re
import symtable
import sys

MAX_DEPTH = 48
IDENT = re.compile(rb"[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*")

COMP_NAMES = {ast.ListComp: "listcomp", ast.SetComp: "setcomp", ast.DictComp: "dictcomp", ast.GeneratorExp: "genexpr"}


class Undecided(Exception):
    pass


# ---------------------------------------------------------------- files


class Source:
    """One parsed file: bytes, line starts, ast."""

    def __init__(self, site, rel):
        self.rel = rel
        self.path = os.path.join(site, rel)
        with open(self.path, "rb") as f:
            self.data = f.read()
        self.starts = [0]
        for i, c in enumerate(self.data):
            if c == 10:
                self.starts.append(i + 1)
        self.tree = ast.parse(self.data, self.path)
        self.is_stub = rel.endswith(".pyi")

    def off(self, line1, col):
        return self.starts[line1 - 1] + col

    def start(self, node):
        return self.off(node.lineno, node.col_offset)

    def end(self, node):
        return self.off(node.end_lineno, node.end_col_offset)

    def pos(self, off):
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lo, off - self.starts[lo]

    def ident_after(self, off, name, limit=None):
        """The offset of identifier name at or after off."""
        end = limit if limit is not None else len(self.data)
        want = name.encode()
        for m in IDENT.finditer(self.data, off, end):
            if m.group() == want:
                return m.start()
        return None

    def def_name(self, node):
        """The offset of a def's or class's name."""
        return self.ident_after(self.start(node) + (5 if isinstance(node, ast.ClassDef) else 3), node.name)

    def site(self, off):
        line, col = self.pos(off)
        return {"file": self.rel, "line": line, "col": col}


# ---------------------------------------------------------------- modules


class Module:
    def __init__(self, name, py, pyi, is_pkg):
        self.name, self.py, self.pyi, self.is_pkg = name, py, pyi, is_pkg


class Bind:
    """A module- or class-level binding, as a module's reader sees it."""

    def __init__(self, src, name, kind, off, node=None, tc=False, value=None, module=None, attr=None, alias=False, owner=None):
        self.src, self.name, self.kind, self.off, self.node = src, name, kind, off, node
        self.tc, self.value, self.module, self.attr, self.alias = tc, value, module, attr, alias
        self.owner = owner  # the ClassDef holding a member, else None

    def site(self):
        return self.src.site(self.off)


class Summary:
    """A file's top-level (or a class body's) bindings and star imports."""

    def __init__(self):
        self.binds = {}
        self.stars = []  # (module, line offset, tc)
        self.all = None
        self.all_dynamic = False


def is_type_checking(test):
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False, is_type_checking(test.operand)[0]
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING", False
    if isinstance(test, ast.Attribute) and is_dotted(test):
        return test.attr == "TYPE_CHECKING", False
    return False, False


class Site:
    def __init__(self, root, package):
        self.root = root
        self.package = package
        self.sources = {}
        self.summaries = {}

    def source(self, rel):
        s = self.sources.get(rel)
        if s is None:
            s = Source(self.root, rel)
            self.sources[rel] = s
        return s

    def module(self, name):
        if not name or (self.package and name.split(".")[0] != self.package):
            return None
        base = os.path.join(self.root, *name.split("."))
        py = pyi = None
        is_pkg = False
        if os.path.isdir(base):
            is_pkg = True
            if os.path.isfile(os.path.join(base, "__init__.py")):
                py = os.path.relpath(os.path.join(base, "__init__.py"), self.root)
            if os.path.isfile(os.path.join(base, "__init__.pyi")):
                pyi = os.path.relpath(os.path.join(base, "__init__.pyi"), self.root)
        if py is None and pyi is None:
            if os.path.isfile(base + ".py"):
                py = os.path.relpath(base + ".py", self.root)
            if os.path.isfile(base + ".pyi"):
                pyi = os.path.relpath(base + ".pyi", self.root)
        if py is None and pyi is None and not is_pkg:
            return None
        return Module(name, py, pyi, is_pkg)

    def module_of(self, rel):
        parts = rel[: -len(".pyi") if rel.endswith(".pyi") else -len(".py")].split("/")
        if parts[-1] == "__init__":
            return ".".join(parts[:-1]), True
        return ".".join(parts), False

    def summary(self, rel):
        s = self.summaries.get(rel)
        if s is None:
            src = self.source(rel)
            s = Summary()
            pkg, is_pkg = self.module_of(rel)
            if not is_pkg:
                pkg = pkg.rpartition(".")[0]
            self.collect(src, src.tree.body, s, False, True, pkg, None)
            self.summaries[rel] = s
        return s

    def collect(self, src, body, out, tc, top, pkg, owner):
        """Bindings of a module or class body, walking the blocks that run in
        the same scope, as torchlsp's index does."""
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                kind = "class" if isinstance(st, ast.ClassDef) else "def"
                self.add(out, Bind(src, st.name, kind, src.def_name(st), st, tc, owner=owner))
            elif isinstance(st, (ast.Assign, ast.AnnAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                value = st.value
                for t in targets:
                    for name in assigned_names(t):
                        self.add(out, Bind(src, name.id, "var", src.start(name), st, tc, value=value if isinstance(t, ast.Name) else None, owner=owner))
                if top and isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in st.targets):
                    out.all = []
                    self.add_all(st.value, out)
                if top and isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id == "__all__" and st.value is not None:
                    out.all = []
                    self.add_all(st.value, out)
            elif isinstance(st, ast.AugAssign):
                if top and isinstance(st.target, ast.Name) and st.target.id == "__all__":
                    if out.all is None:
                        out.all = []
                    self.add_all(st.value, out)
            elif isinstance(st, ast.Expr) and top and isinstance(st.value, ast.Call):
                f = st.value.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "__all__":
                    if out.all is None:
                        out.all = []
                    if f.attr == "extend" and len(st.value.args) == 1:
                        self.add_all(st.value.args[0], out)
                    elif f.attr == "append" and len(st.value.args) == 1 and isinstance(st.value.args[0], ast.Constant) and isinstance(st.value.args[0].value, str):
                        out.all.append(st.value.args[0].value)
                    else:
                        out.all_dynamic = True
            elif isinstance(st, ast.Import):
                for a in st.names:
                    if a.asname:
                        off = src.ident_after(src.start(a) + len(a.name), a.asname, src.end(a))
                        self.add(out, Bind(src, a.asname, "import", off, st, tc, module=a.name, alias=True, owner=owner))
                    else:
                        first = a.name.split(".")[0]
                        self.add(out, Bind(src, first, "import", src.start(a), st, tc, module=a.name, owner=owner))
            elif isinstance(st, ast.ImportFrom):
                module = absolute(st.module, st.level, pkg)
                if module is None or st.module == "__future__":
                    continue
                for a in st.names:
                    if a.name == "*":
                        if top:
                            out.stars.append((module, src.start(st), tc))
                        continue
                    if a.asname:
                        off = src.ident_after(src.start(a) + len(a.name), a.asname, src.end(a))
                        self.add(out, Bind(src, a.asname, "from", off, st, tc, module=module, attr=a.name, owner=owner))
                    else:
                        self.add(out, Bind(src, a.name, "from", src.start(a), st, tc, module=module, attr=a.name, owner=owner))
            elif isinstance(st, ast.If):
                yes, neg = is_type_checking(st.test)
                self.collect(src, st.body, out, tc or yes, top, pkg, owner)
                self.collect(src, st.orelse, out, tc or neg, top, pkg, owner)
            elif isinstance(st, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                self.collect(src, st.body, out, tc, top, pkg, owner)
                for h in st.handlers:
                    self.collect(src, h.body, out, tc, top, pkg, owner)
                self.collect(src, st.orelse, out, tc, top, pkg, owner)
                self.collect(src, st.finalbody, out, tc, top, pkg, owner)
            elif isinstance(st, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
                self.collect(src, st.body, out, tc, top, pkg, owner)
                self.collect(src, getattr(st, "orelse", []), out, tc, top, pkg, owner)

    def add(self, out, b):
        if b.off is None:
            return
        out.binds.setdefault(b.name, []).append(b)

    def add_all(self, node, out):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            for e in node.elts:
                if isinstance(e, ast.Constant) and isinstance(e.value, str):
                    out.all.append(e.value)
                else:
                    out.all_dynamic = True
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            self.add_all(node.left, out)
            self.add_all(node.right, out)
        else:
            out.all_dynamic = True


def assigned_names(t):
    if isinstance(t, ast.Name):
        yield t
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            yield from assigned_names(e)
    elif isinstance(t, ast.Starred):
        yield from assigned_names(t.value)


def absolute(module, level, pkg):
    if not level:
        return module
    base = pkg
    for _ in range(level - 1):
        if "." not in base:
            return None
        base = base.rpartition(".")[0]
    if not base:
        return None
    return base + "." + module if module else base


def best(binds):
    """The binding that wins at run time: the last, preferring one outside
    "if TYPE_CHECKING:"."""
    if not binds:
        return None
    run = [b for b in binds if not b.tc]
    pool = run or binds
    return max(pool, key=lambda b: b.off)


# ---------------------------------------------------------------- entities


class Ent:
    """What an expression evaluates to, as far as the text shows."""

    def __init__(self, kind, site=None, module=None, cls=None, func=None, bind=None, instance=False):
        self.kind = kind  # module, class, instance, super, function, external, opaque
        self.instance = instance  # for super: called from an instance method
        self.site = site  # the definition's site dict, or None
        self.module = module  # Module for kind module
        self.cls = cls  # ClassRef for class, instance, super
        self.func = func  # (Source, FunctionDef) for function
        self.bind = bind


class ClassRef:
    def __init__(self, src, node, scope_eval):
        self.src, self.node = src, node
        self.scope_eval = scope_eval  # evaluates a base expression to an Ent

    def key(self):
        return (self.src.rel, self.node.lineno, self.node.col_offset)


class Resolver:
    def __init__(self, site):
        self.site = site
        self.depth = 0
        self.active = set()
        self.mros = {}
        self.instance_attrs = {}

    # --- guards

    def enter(self, key):
        if self.depth >= MAX_DEPTH or key in self.active:
            raise Undecided("cycle")
        self.depth += 1
        self.active.add(key)

    def leave(self, key):
        self.depth -= 1
        self.active.discard(key)

    # --- modules

    def module_ent(self, m):
        rel = m.py or m.pyi
        if rel is None:
            raise Undecided("namespace package")
        return Ent("module", {"file": rel, "line": 0, "col": 0}, module=m)

    def exports(self, m, name):
        rel = m.py or m.pyi
        if rel is None:
            return False
        s = self.site.summary(rel)
        if s.all is not None:
            if name in s.all:
                return True
            if not s.all_dynamic:
                return False
        return not name.startswith("_")

    def runtime_bound(self, m, name):
        s = self.site.summary(m.py)
        b = best(s.binds.get(name))
        if b is not None and not b.tc:
            return True
        for mod, _, tc in s.stars:
            sm = self.site.module(mod)
            if not tc and sm is not None and self.exports(sm, name):
                return True
        return False

    def module_attr(self, m, name):
        """The binding (or module) name names in module m: an Ent."""
        key = ("mod", m.name, name)
        self.enter(key)
        try:
            if m.py is not None and not self.runtime_bound(m, name):
                ga = best(self.site.summary(m.py).binds.get("__getattr__"))
                if ga is not None and not ga.tc and ga.kind == "def":
                    sub = self.site.module(m.name + "." + name)
                    if sub is not None:
                        return self.module_ent(sub)
                    raise Undecided("served by __getattr__")
            for rel in (m.py, m.pyi):
                if rel is None:
                    continue
                s = self.site.summary(rel)
                b = best(s.binds.get(name))
                for mod, off, tc in reversed(s.stars):
                    if b is not None and not b.tc and (off < b.off or tc):
                        break
                    sm = self.site.module(mod)
                    if sm is None or not self.exports(sm, name):
                        continue
                    try:
                        return self.module_attr(sm, name)
                    except Undecided as e:
                        if str(e) == "cycle":
                            raise
                if b is not None:
                    return self.follow(b, m)
            sub = self.site.module(m.name + "." + name)
            if sub is not None:
                return self.module_ent(sub)
            raise Undecided("not bound in module " + m.name)
        finally:
            self.leave(key)

    def import_ent(self, b):
        """Where an import binding leads."""
        if b.kind == "import":
            target = b.module if b.alias else b.module.split(".")[0]
            tm = self.site.module(target)
            if tm is None:
                return Ent("external", b.site(), bind=b)
            return self.module_ent(tm)
        src = self.site.module(b.module)
        if src is None:
            return Ent("external", b.site(), bind=b)
        # Python takes the module's attribute, and the submodule when the
        # module binds nothing else under that name.
        sub = self.site.module(b.module + "." + b.attr)
        if sub is not None and not self.shadows(src, b.attr):
            return self.module_ent(sub)
        try:
            return self.module_attr(src, b.attr)
        except Undecided as e:
            if str(e) == "cycle":
                raise
            return Ent("external", b.site(), bind=b)

    def shadows(self, m, name):
        """Whether package m binds name at run time to something other than
        its submodule of that name."""
        if m.py is None:
            return False
        b = best(self.site.summary(m.py).binds.get(name))
        if b is None or b.tc:
            return False
        sub = m.name + "." + name
        if b.kind == "import":
            return not (b.alias and b.module == sub)
        if b.kind == "from":
            return b.module + "." + b.attr != sub
        return True

    def follow(self, b, m):
        """The Ent a module- or class-level binding stands for (imports
        followed); its site is the binding's, rebindings not yet followed."""
        if b.kind in ("import", "from"):
            return self.import_ent(b)
        if b.kind == "def":
            return Ent("function", b.site(), func=(b.src, b.node), bind=b)
        if b.kind == "class":
            return Ent("class", b.site(), cls=self.class_ref(b.src, b.node, m, b.owner), bind=b)
        return Ent("opaque", b.site(), bind=b)

    def class_ref(self, src, node, m, owner):
        def ev(expr):
            # Bases of a class in another file: evaluated among its module's
            # names (the enclosing class's first, for a nested class).
            return self.eval_in_module(expr, m, owner, src.start(node))
        return ClassRef(src, node, ev)

    def value_ent(self, b, m):
        """What a module- or class-level variable's value is: a rebinding,
        or an instance of a class."""
        v = b.value
        if v is None:
            raise Undecided("no value")
        if isinstance(v, ast.Call):
            f = self.eval_in_module(v.func, m, b.owner, b.off)
            if f.kind == "class":
                return Ent("instance", f.site, cls=f.cls)
            raise Undecided("call")
        if is_dotted(v) and not is_constant_name(v):
            return self.eval_in_module(v, m, b.owner, b.off)
        raise Undecided("value")

    def eval_in_module(self, expr, m, owner, before):
        """Evaluates a dotted expression or call in module m's namespace (in
        class owner's body first, among its bindings before offset before)."""
        if isinstance(expr, ast.Subscript):
            return self.eval_in_module(expr.value, m, owner, before)
        if isinstance(expr, ast.Name):
            if owner is not None:
                cands = [x for x in self.class_summary(self.site.source(m.py or m.pyi), owner).binds.get(expr.id, []) if x.off < before]
                if cands:
                    b = max(cands, key=lambda x: x.off)
                    return self.ent_of_member(b, m)
            return self.ent_of_member_name(m, expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.eval_in_module(expr.value, m, owner, before)
            return self.attr(base, expr.attr)
        if isinstance(expr, ast.Call):
            f = self.eval_in_module(expr.func, m, owner, before)
            if f.kind == "class":
                return Ent("instance", f.site, cls=f.cls)
        raise Undecided("expression")

    def ent_of_member_name(self, m, name):
        e = self.module_attr(m, name)
        return self.deref(e, m)

    def ent_of_member(self, b, m):
        return self.deref(self.follow(b, m), m)

    def deref(self, e, m):
        """An opaque variable's value, when the text shows it."""
        if e.kind == "opaque" and e.bind is not None and e.bind.value is not None:
            key = ("deref", e.bind.src.rel, e.bind.off)
            self.enter(key)
            try:
                bm = self.site.module(self.site.module_of(e.bind.src.rel)[0]) or m
                v = self.value_ent(e.bind, bm)
                return Ent(v.kind, e.site, module=v.module, cls=v.cls, func=v.func, bind=v.bind)
            except Undecided as err:
                if str(err) == "cycle":
                    raise
                return e
            finally:
                self.leave(key)
        return e

    def class_summary(self, src, node):
        key = ("class", src.rel, node.lineno, node.col_offset)
        s = self.site.summaries.get(key)
        if s is None:
            s = Summary()
            self.site.collect(src, node.body, s, False, False, "", node)
            self.site.summaries[key] = s
        return s

    # --- classes

    def bases(self, c):
        out = []
        for base in c.node.bases:
            if isinstance(base, ast.Starred):
                continue
            if isinstance(base, ast.Name) and base.id == "object":
                continue
            if not is_dotted(base) and not (isinstance(base, ast.Subscript) and is_dotted(base.value)):
                continue
            try:
                e = c.scope_eval(base.value if isinstance(base, ast.Subscript) else base)
            except Undecided as err:
                if str(err) == "cycle":
                    raise
                continue
            if e.kind == "class":
                out.append(e.cls)
        return out

    def mro(self, c):
        got = self.mros.get(c.key())
        if got is not None:
            return got
        got = self.linearize(c)
        self.mros[c.key()] = got
        return got

    def linearize(self, c):
        key = ("mro", c.key())
        self.enter(key)
        try:
            seqs = [self.mro(b) for b in self.bases(c)]
            seqs.append(self.bases(c))
            out = [c]
            seqs = [list(s) for s in seqs if s]
            while seqs:
                for s in seqs:
                    head = s[0]
                    if not any(head.key() in [x.key() for x in t[1:]] for t in seqs):
                        break
                else:
                    raise Undecided("no consistent MRO")
                out.append(head)
                for s in seqs:
                    if s and s[0].key() == head.key():
                        del s[0]
                seqs = [s for s in seqs if s]
            return out
        finally:
            self.leave(key)

    def member(self, c, name, instance):
        m = self.site.module(self.site.module_of(c.src.rel)[0])
        s = self.class_summary(c.src, c.node)
        b = best(s.binds.get(name))
        if b is not None:
            return self.follow(b, m), b
        if instance:
            off = self.instance_attr(c, name)
            if off is not None:
                return Ent("opaque", c.src.site(off)), None
        return None, None

    def instance_attr(self, c, name):
        key = c.key()
        attrs = self.instance_attrs.get(key)
        if attrs is None:
            attrs = {}
            methods = []
            for st in c.node.body:
                collect_methods(st, methods)
            methods.sort(key=lambda f: (f.name != "__init__", f.lineno, f.col_offset))
            for f in methods:
                if method_kind(f) != "instance" or not f.args.posonlyargs + f.args.args:
                    continue
                selfname = (f.args.posonlyargs + f.args.args)[0].arg
                if rebinds(f, selfname):
                    continue
                for node in walk_own(f):
                    targets = []
                    if isinstance(node, ast.Assign):
                        targets = node.targets
                    elif isinstance(node, (ast.AnnAssign,)):
                        targets = [node.target]
                    elif isinstance(node, (ast.For, ast.AsyncFor)):
                        targets = [node.target]
                    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                        targets = [node.optional_vars]
                    for t in targets:
                        for a in attr_targets(t):
                            if isinstance(a.value, ast.Name) and a.value.id == selfname and a.attr not in attrs:
                                attrs[a.attr] = c.src.end(a) - len(a.attr.encode())
            self.instance_attrs[key] = attrs
        return attrs.get(name)

    def class_attr(self, c, name, instance, skip_first=False):
        mro = self.mro(c)
        if skip_first:
            mro = mro[1:]
        for i, k in enumerate(mro):
            e, b = self.member(k, name, False)
            if e is not None:
                return e
            off = self.instance_attr(k, name) if instance else None
            if off is not None:
                # self.x = ... sets the attribute of a compiled base that
                # declares x in its .pyi stub (a data descriptor, which
                # takes the assignment), not one of the instance's own.
                for later in mro[i + 1:]:
                    if later.src.is_stub:
                        d, _ = self.member(later, name, False)
                        if d is not None:
                            return d
                return Ent("opaque", k.src.site(off))
        raise Undecided("attribute not found in class")

    # --- attributes

    def attr(self, e, name):
        if e.kind == "module":
            return self.module_attr(e.module, name)
        if e.kind == "class":
            return self.class_attr(e.cls, name, False)
        if e.kind == "instance":
            return self.class_attr(e.cls, name, True)
        if e.kind == "super":
            return self.class_attr(e.cls, name, e.instance, skip_first=True)
        if e.kind == "opaque":
            if e.bind is not None:
                m = self.site.module(self.site.module_of(e.bind.src.rel)[0])
                v = self.deref(e, m)
                if v.kind != "opaque":
                    return self.attr(v, name)
            raise Undecided("attribute of a value of unknown type")
        if e.kind == "external":
            raise Undecided("attribute of a module outside the site")
        raise Undecided("attribute of a " + e.kind)

    def rebound(self, e):
        """A plain rebinding reached as an attribute is what it names, unless
        that is only declared in a stub."""
        for _ in range(MAX_DEPTH):
            b = e.bind
            if b is None or b.kind != "var" or b.value is None or not is_dotted(b.value) or is_constant_name(b.value):
                return e
            m = self.site.module(self.site.module_of(b.src.rel)[0])
            try:
                n = self.eval_in_module(b.value, m, b.owner, b.off)
            except Undecided as err:
                if str(err) == "cycle":
                    raise
                return e
            if n.kind == "external" or n.site is None or n.bind is b:
                return e
            if n.site["file"].endswith(".pyi") and not b.src.is_stub:
                return e
            e = n
        return e


def is_dotted(v):
    while isinstance(v, ast.Attribute):
        v = v.value
    return isinstance(v, ast.Name)


def is_constant_name(v):
    return isinstance(v, ast.Name) and v.id in ("True", "False", "None", "NotImplemented", "Ellipsis")


def attr_targets(t):
    if isinstance(t, ast.Attribute):
        yield t
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            yield from attr_targets(e)
    elif isinstance(t, ast.Starred):
        yield from attr_targets(t.value)


def collect_methods(st, out):
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
        out.append(st)


def method_kind(f):
    if f.name in ("__new__", "__init_subclass__", "__class_getitem__"):
        return "class"
    for d in f.decorator_list:
        text = ast.unparse(d)
        if text in ("staticmethod", "builtins.staticmethod"):
            return "static"
        if text in ("classmethod", "builtins.classmethod"):
            return "class"
    return "instance"


def walk_own(f):
    """The nodes of a function's body, not those of functions, classes,
    lambdas or comprehensions nested in it."""
    stack = list(reversed(f.body))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


def rebinds(f, name):
    """Whether function f binds name again in its body (other than as its
    parameter)."""
    for n in walk_own(f):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
            return True
    return False


# ---------------------------------------------------------------- one file


class Scope:
    def __init__(self, kind, node, parent, table):
        self.kind, self.node, self.parent, self.table = kind, node, parent, table
        self.binds = {}  # name -> [LocalBind], sorted by at
        self.method = None  # instance / class / static for defs in a class body
        self.self_bind = None


class LocalBind:
    def __init__(self, name, kind, scope, off, at, node=None, value=None, tc=False, declared=False, imp=None, index=0):
        self.name, self.kind, self.scope, self.off, self.at = name, kind, scope, off, at
        self.node, self.value, self.tc, self.declared, self.imp, self.index = node, value, tc, declared, imp, index


class FileAnalysis:
    """Scopes and bindings of one file, with symtable's classification."""

    def __init__(self, site, rel):
        self.site = site
        self.src = site.source(rel)
        self.module_name, is_pkg = site.module_of(rel)
        self.pkg = self.module_name if is_pkg else self.module_name.rpartition(".")[0]
        self.res = Resolver(site)
        st = symtable.symtable(self.src.data.decode("utf-8"), self.src.path, "exec")
        self.scopes = []
        self.scope_of = {}  # id(ast scope node) -> Scope
        self.occs = []  # (node kind, offset, name, scope, extra)
        self.stars = []  # (module, at, tc)
        self.aliases = {}  # offset of a name imported "as" -> (alias, scope kind)
        root = Scope("module", self.src.tree, None, st)
        self.scopes.append(root)
        self.scope_of[id(self.src.tree)] = root
        self.walk_block(self.src.tree.body, root, False)
        for sc in self.scopes:
            for binds in sc.binds.values():
                binds.sort(key=lambda b: b.at)

    # --- symtable

    def child_table(self, table, node):
        name = COMP_NAMES.get(type(node))
        if name is None:
            name = "lambda" if isinstance(node, ast.Lambda) else node.name
        for t in table.get_children():
            if t.get_name() == name and t.get_lineno() == node.lineno and not getattr(t, "_used", False):
                t._used = True
                return t
        raise RuntimeError("no symbol table for %s at line %d" % (name, node.lineno))

    def new_scope(self, kind, node, parent):
        sc = Scope(kind, node, parent, self.child_table(parent.table, node))
        self.scopes.append(sc)
        self.scope_of[id(node)] = sc
        return sc

    def home(self, name, sc):
        """The scope a binding of name made in sc lands in."""
        try:
            sym = sc.table.lookup(name)
        except KeyError:
            return sc, False
        if sc.kind != "module" and sym.is_declared_global():
            return self.scopes[0], True
        if sym.is_nonlocal():
            p = sc.parent
            while p is not None:
                if p.kind != "class":
                    try:
                        ps = p.table.lookup(name)
                        if ps.is_declared_global():
                            return self.scopes[0], True
                        if ps.is_local() and not ps.is_nonlocal():
                            return p, True
                    except KeyError:
                        pass
                p = p.parent
            return self.scopes[0], True
        return sc, False

    def bind(self, name, kind, sc, off, at, **kw):
        if off is None:
            return
        home, declared = self.home(name, sc)
        b = LocalBind(name, kind, home, off, at, declared=declared, **kw)
        home.binds.setdefault(name, []).append(b)
        return b

    # --- the walk

    def occ(self, kind, off, name, sc, extra=None):
        if off is None:
            return
        if self.src.data[off : off + len(name.encode())] != name.encode():
            return  # a position ast reports imprecisely
        self.occs.append((kind, off, name, sc, extra))

    def walk_block(self, body, sc, tc):
        for st in body:
            self.stmt(st, sc, tc)

    def stmt(self, st, sc, tc):
        src = self.src
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in st.decorator_list:
                self.expr(d, sc)
            self.arguments_outer(st.args, sc)
            if st.returns is not None:
                self.expr(st.returns, sc)
            name_off = src.def_name(st)
            self.bind(st.name, "def", sc, name_off, name_off, node=st, tc=tc)
            fs = self.new_scope("function", st, sc)
            if sc.kind == "class":
                fs.method = method_kind(st)
            self.arguments_inner(st.args, fs, src.start(st))
            self.walk_block(st.body, fs, False)
        elif isinstance(st, ast.ClassDef):
            for d in st.decorator_list:
                self.expr(d, sc)
            for b in st.bases:
                self.expr(b, sc)
            for k in st.keywords:
                self.expr(k.value, sc)
            name_off = src.def_name(st)
            self.bind(st.name, "class", sc, name_off, name_off, node=st, tc=tc)
            cs = self.new_scope("class", st, sc)
            self.walk_block(st.body, cs, False)
        elif isinstance(st, ast.Assign):
            self.expr(st.value, sc)
            at = src.end(st)
            for t in st.targets:
                self.target(t, sc, "var", at, tc, value=st.value if isinstance(t, ast.Name) else None)
        elif isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self.expr(st.value, sc)
            self.expr(st.annotation, sc)
            self.target(st.target, sc, "var", src.end(st), tc, value=st.value if isinstance(st.target, ast.Name) else None)
        elif isinstance(st, ast.AugAssign):
            self.expr(st.value, sc)
            if isinstance(st.target, ast.Name):
                self.occ("read", src.start(st.target), st.target.id, sc)
            else:
                self.expr(st.target, sc)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            self.expr(st.iter, sc)
            self.target(st.target, sc, "for", src.end(st.iter), tc)
            self.walk_block(st.body, sc, tc)
            self.walk_block(st.orelse, sc, tc)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                self.expr(item.context_expr, sc)
                if item.optional_vars is not None:
                    self.target(item.optional_vars, sc, "with", src.end(item.optional_vars), tc)
            self.walk_block(st.body, sc, tc)
        elif isinstance(st, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.walk_block(st.body, sc, tc)
            for h in st.handlers:
                if h.type is not None:
                    self.expr(h.type, sc)
                if h.name:
                    start = src.end(h.type) if h.type is not None else src.start(h)
                    off = src.ident_after(start, h.name, src.end(h))
                    if off is not None:
                        self.bind(h.name, "except", sc, off, off + len(h.name.encode()), tc=tc)
                self.walk_block(h.body, sc, tc)
            self.walk_block(st.orelse, sc, tc)
            self.walk_block(st.finalbody, sc, tc)
        elif isinstance(st, ast.If):
            yes, neg = is_type_checking(st.test)
            self.expr(st.test, sc)
            self.walk_block(st.body, sc, tc or yes)
            self.walk_block(st.orelse, sc, tc or neg)
        elif isinstance(st, ast.While):
            self.expr(st.test, sc)
            self.walk_block(st.body, sc, tc)
            self.walk_block(st.orelse, sc, tc)
        elif isinstance(st, ast.Import):
            at = src.end(st)
            for a in st.names:
                parts = a.name.split(".")
                off = src.start(a)
                for i, part in enumerate(parts):
                    p_off = src.ident_after(off, part, src.end(a))
                    if p_off is None:
                        break
                    self.occ("module", p_off, part, sc, ".".join(parts[: i + 1]))
                    off = p_off + len(part.encode())
                    if i == 0 and not a.asname:
                        self.bind(part, "import", sc, p_off, at, tc=tc, imp=("import", a.name, False))
                if a.asname:
                    aoff = src.ident_after(src.start(a) + len(a.name), a.asname, src.end(a))
                    if p_off is not None:
                        self.aliases[p_off] = (a.asname, sc.kind)
                    self.bind(a.asname, "import", sc, aoff, at, tc=tc, imp=("import", a.name, True))
                    self.occ("alias", aoff, a.asname, sc, ("import", a.name, True))
        elif isinstance(st, ast.ImportFrom):
            if st.module == "__future__":
                return
            at = src.end(st)
            module = absolute(st.module, st.level, self.pkg)
            # the module path: the names after the dots
            if st.module:
                off = src.start(st) + 4
                parts = st.module.split(".")
                for i, part in enumerate(parts):
                    p_off = src.ident_after(off, part)
                    if p_off is None:
                        break
                    prefix = absolute(".".join(parts[: i + 1]), st.level, self.pkg)
                    self.occ("module", p_off, part, sc, prefix)
                    off = p_off + len(part.encode())
            for a in st.names:
                if a.name == "*":
                    if sc.kind == "module" and module is not None:
                        self.stars.append((module, at, tc))
                    continue
                noff = src.start(a)
                imp = ("from", module, a.name)
                if a.asname:
                    aoff = src.ident_after(noff + len(a.name), a.asname, src.end(a))
                    self.aliases[noff] = (a.asname, sc.kind)
                    self.bind(a.asname, "from", sc, aoff, at, tc=tc, imp=imp)
                    self.occ("alias", aoff, a.asname, sc, imp)
                else:
                    self.bind(a.name, "from", sc, noff, at, tc=tc, imp=imp)
                self.occ("imported", noff, a.name, sc, imp)
        elif isinstance(st, (ast.Global, ast.Nonlocal)):
            off = src.start(st) + (6 if isinstance(st, ast.Global) else 8)
            for name in st.names:
                o = src.ident_after(off, name, src.end(st))
                if o is not None:
                    self.occ("declared", o, name, sc)
                    off = o + len(name.encode())
        elif isinstance(st, ast.Delete):
            for t in st.targets:
                self.expr(t, sc)
        elif isinstance(st, ast.Match):
            self.expr(st.subject, sc)
            for case in st.cases:
                self.pattern(case.pattern, sc, tc)
                if case.guard is not None:
                    self.expr(case.guard, sc)
                self.walk_block(case.body, sc, tc)
        else:
            for child in ast.iter_child_nodes(st):
                if isinstance(child, ast.expr):
                    self.expr(child, sc)
                elif isinstance(child, ast.stmt):
                    self.stmt(child, sc, tc)

    def pattern(self, p, sc, tc):
        for n in ast.walk(p):
            if isinstance(n, ast.MatchValue):
                self.expr(n.value, sc)
            elif isinstance(n, ast.MatchClass):
                self.expr(n.cls, sc)
            # captures are bindings: their definition is themselves

    def arguments_outer(self, args, sc):
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.expr(d, sc)
        for a in args.posonlyargs + args.args + args.kwonlyargs + [x for x in (args.vararg, args.kwarg) if x]:
            if a.annotation is not None:
                self.expr(a.annotation, sc)

    def arguments_inner(self, args, fs, at):
        ordered = args.posonlyargs + args.args + ([args.vararg] if args.vararg else []) + args.kwonlyargs + ([args.kwarg] if args.kwarg else [])
        for i, a in enumerate(ordered):
            b = self.bind(a.arg, "param", fs, self.src.start(a), at, index=i, node=a)
            if i == 0 and fs.method in ("instance", "class") and a in args.posonlyargs + args.args:
                fs.self_bind = b

    def target(self, t, sc, kind, at, tc, value=None):
        if isinstance(t, ast.Name):
            self.bind(t.id, kind, sc, self.src.start(t), at, value=value, tc=tc, node=t)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self.target(e, sc, kind, at, tc)
        elif isinstance(t, ast.Starred):
            self.target(t.value, sc, kind, at, tc)
        else:
            self.expr(t, sc)

    def expr(self, e, sc):
        src = self.src
        if isinstance(e, ast.Name):
            self.occ("read", src.start(e), e.id, sc)
        elif isinstance(e, ast.Attribute):
            self.expr(e.value, sc)
            self.occ("attribute", src.end(e) - len(e.attr.encode()), e.attr, sc, e)
        elif isinstance(e, ast.Call):
            self.expr(e.func, sc)
            for a in e.args:
                self.expr(a, sc)
            for k in e.keywords:
                if k.arg is not None:
                    self.occ("keyword", src.start(k), k.arg, sc, e)
                self.expr(k.value, sc)
        elif isinstance(e, ast.Lambda):
            self.arguments_outer(e.args, sc)
            ls = self.new_scope("lambda", e, sc)
            self.arguments_inner(e.args, ls, src.start(e))
            self.expr(e.body, ls)
        elif isinstance(e, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            gens = e.generators
            self.expr(gens[0].iter, sc)
            cs = self.new_scope("comprehension", e, sc)
            at = src.start(e)
            for i, g in enumerate(gens):
                if i > 0:
                    self.expr(g.iter, cs)
                self.target(g.target, cs, "for", at, False)
                for c in g.ifs:
                    self.expr(c, cs)
            if isinstance(e, ast.DictComp):
                self.expr(e.key, cs)
                self.expr(e.value, cs)
            else:
                self.expr(e.elt, cs)
        elif isinstance(e, ast.NamedExpr):
            self.expr(e.value, sc)
            target = sc
            while target.kind == "comprehension":
                target = target.parent
            self.bind(e.target.id, "walrus", target, src.start(e.target), src.end(e), value=e.value)
        elif isinstance(e, ast.JoinedStr) and sys.version_info < (3, 12):
            # Before 3.12 ast places the names inside f-strings unreliably.
            return
        else:
            for child in ast.iter_child_nodes(e):
                if isinstance(child, ast.expr):
                    self.expr(child, sc)
                elif isinstance(child, ast.keyword):
                    self.expr(child.value, sc)

    # --- resolution

    def lookup(self, name, sc, off):
        """symtable decides the scope; the rules of the module docstring
        choose the binding. Returns a LocalBind, or None."""
        immediate = True  # no function boundary crossed: the scope runs now
        crossed = False  # class bodies are invisible from the functions in them
        cur = sc
        while cur is not None:
            if crossed and cur.kind == "class":
                cur = cur.parent
                continue
            if cur.kind == "module":
                return self.choose_module(name, off, immediate)
            try:
                sym = cur.table.lookup(name)
            except KeyError:
                sym = None
            if sym is not None and sym.is_declared_global():
                return self.choose_module(name, off, False)
            if sym is not None and sym.is_nonlocal():
                cur, immediate, crossed = cur.parent, False, True
                continue
            if sym is not None and sym.is_local():
                binds = cur.binds.get(name, [])
                if cur.kind == "class":
                    # A class body reads its own dict, then the module's.
                    b = last_before(binds, off)
                    if b is not None:
                        return b
                    return self.choose_module(name, off, immediate)
                return choose(binds, off, immediate)
            if cur.kind in ("function", "lambda"):
                immediate, crossed = False, True
            elif cur.kind == "comprehension":
                crossed = True
            cur = cur.parent
        return None

    def choose_module(self, name, off, immediate):
        binds = list(self.scopes[0].binds.get(name, []))
        for module, at, tc in self.stars:
            sm = self.site.module(module)
            if sm is None or not self.res.exports(sm, name):
                continue
            try:
                self.res.module_attr(sm, name)  # a star import binds only what its module has
            except Undecided as e:
                if str(e) == "cycle":
                    raise
                continue
            binds.append(LocalBind(name, "star", self.scopes[0], at, at, tc=tc, imp=("star", module)))
        binds.sort(key=lambda b: b.at)
        return choose(binds, off, immediate)

    def enclosing_class(self, sc):
        """The class whose method sc is (through nested functions), and the
        method's scope."""
        cur = sc
        while cur is not None:
            if cur.kind == "function" and cur.parent is not None and cur.parent.kind == "class":
                return cur.parent, cur
            cur = cur.parent
        return None, None

    def class_ref_local(self, cs):
        def ev(expr):
            return self.eval_expr(expr, cs.parent, self.src.start(cs.node))
        return ClassRef(self.src, cs.node, ev)

    def ent_of_bind(self, b):
        """The Ent a local binding stands for; its site is the binding's."""
        site = self.src.site(b.off)
        if b.kind in ("import", "from", "star"):
            imp = b.imp
            if imp[0] == "star":
                return self.res.module_attr(self.site.module(imp[1]), b.name)
            if imp[0] == "import":
                target = imp[1] if imp[2] else imp[1].split(".")[0]
                tm = self.site.module(target)
                if tm is None:
                    return Ent("external", site)
                return self.res.module_ent(tm)
            fake = Bind(self.src, b.name, "from", b.off, module=imp[1], attr=imp[2])
            if imp[1] is None:
                return Ent("external", site)
            return self.res.import_ent(fake)
        if b.kind == "def":
            return Ent("function", site, func=(self.src, b.node))
        if b.kind == "class":
            cs = self.scope_of[id(b.node)]
            return Ent("class", site, cls=self.class_ref_local(cs))
        if b.kind == "param":
            fs = b.scope
            if fs.self_bind is b and fs.parent is not None and fs.parent.kind == "class":
                cref = self.class_ref_local(fs.parent)
                if fs.method == "instance":
                    return Ent("instance", site, cls=cref)
                return Ent("class", site, cls=cref)
            return Ent("opaque", site)
        if b.kind in ("var", "walrus") and b.value is not None:
            key = ("local", b.off)
            self.res.enter(key)
            try:
                v = b.value
                if isinstance(v, ast.Call):
                    f = self.eval_expr(v.func, b.scope, b.off)
                    if f.kind == "class":
                        return Ent("instance", site, cls=f.cls)
                elif is_dotted(v) and not is_constant_name(v):
                    n = self.eval_expr(v, b.scope, b.off)
                    return Ent(n.kind, site, module=n.module, cls=n.cls, func=n.func)
            except Undecided as e:
                if str(e) == "cycle":
                    raise
            finally:
                self.res.leave(key)
        return Ent("opaque", site)

    def eval_expr(self, e, sc, off):
        if isinstance(e, ast.Name):
            b = self.lookup(e.id, sc, off)
            if b is None:
                raise Undecided("builtin or unbound")
            return self.ent_of_bind(b)
        if isinstance(e, ast.Attribute):
            base = self.eval_expr(e.value, sc, off)
            return self.res.rebound(self.res.attr(base, e.attr))
        if isinstance(e, ast.Call):
            if isinstance(e.func, ast.Name) and e.func.id == "super" and not e.args:
                cs, fs = self.enclosing_class(sc)
                if cs is None:
                    raise Undecided("super outside a method")
                return Ent("super", None, cls=self.class_ref_local(cs), instance=fs.method == "instance")
            f = self.eval_expr(e.func, sc, off)
            if f.kind == "class":
                return Ent("instance", f.site, cls=f.cls)
            raise Undecided("value of a call")
        if isinstance(e, ast.Subscript):
            raise Undecided("subscript")
        raise Undecided("expression")

    def definition(self, kind, off, name, sc, extra):
        if kind == "read" or kind == "declared":
            b = self.lookup(name, sc, off)
            if b is None:
                raise Undecided("builtin or unbound")
            if b.kind in ("import", "from", "star"):
                e = self.ent_of_bind(b)
                if e.kind == "external":
                    return e.site
                return self.res.rebound(e).site
            return self.src.site(b.off)
        if kind == "attribute":
            base = self.eval_expr(extra.value, sc, off)
            return self.res.rebound(self.res.attr(base, name)).site
        if kind == "keyword":
            f = self.eval_expr(extra.func, sc, off)
            return self.parameter(f, name)
        if kind == "module":
            m = self.site.module(extra)
            if m is None:
                raise Undecided("module outside the site")
            return self.res.module_ent(m).site
        if kind in ("imported", "alias"):
            if extra[0] == "import":
                m = self.site.module(extra[1])
                if m is None:
                    raise Undecided("module outside the site")
                return self.res.module_ent(m).site
            if extra[1] is None or self.site.module(extra[1]) is None:
                raise Undecided("module outside the site")
            fake = Bind(self.src, name, "from", off, module=extra[1], attr=extra[2])
            e = self.res.import_ent(fake)
            if e.kind == "external":
                raise Undecided("not found in its module")
            return self.res.rebound(e).site
        raise Undecided(kind)

    def parameter(self, f, name):
        if f.kind == "class":
            f = self.res.rebound(self.res.class_attr(f.cls, "__init__", False))
        f = self.res.rebound(f)
        if f.kind != "function":
            raise Undecided("callee is not a function the text shows")
        src, node = f.func
        args = node.args
        for a in args.args + args.kwonlyargs:
            if a.arg == name:
                return src.site(src.start(a))
        raise Undecided("no such parameter")


def last_before(binds, off):
    out = None
    for b in binds:
        if b.at <= off:
            out = b
    return out


def choose(binds, off, immediate):
    if not binds:
        return None
    own = [b for b in binds if not b.declared] or binds
    if immediate:
        b = last_before(own, off)
        return b if b is not None else own[0]
    run = [b for b in own if not b.tc]
    return (run or own)[-1]


# ---------------------------------------------------------------- references


def site_key(site):
    return (site["file"], site["line"], site["col"])


def rebinding_ends(fa):
    """Where a plain rebinding "x = a.b.c" ends (the offset of its last
    name) -> (x, whether a module or class binds it)."""
    out = {}
    for sc in fa.scopes:
        for binds in sc.binds.values():
            for b in binds:
                v = b.value
                if b.kind != "var" or v is None or not is_dotted(v) or is_constant_name(v):
                    continue
                last = v.id if isinstance(v, ast.Name) else v.attr
                out[fa.src.end(v) - len(last.encode())] = (b.name, sc.kind in ("module", "class"))
    return out


def package_files(site):
    root = os.path.join(site.root, site.package) if site.package else site.root
    out = []
    if os.path.isfile(root + ".py"):
        out.append(os.path.relpath(root + ".py", site.root))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d.isidentifier())
        for f in sorted(filenames):
            if (f.endswith(".py") or f.endswith(".pyi")) and f.rsplit(".", 1)[0].isidentifier():
                out.append(os.path.relpath(os.path.join(dirpath, f), site.root).replace(os.sep, "/"))
    return out


def references(site, rel):
    """Every occurrence in the package whose definition is a top-level def
    of rel, found by deciding every occurrence of the names that can name
    it: the def's own, and the names that imports with "as" and plain
    module- or class-level rebindings give it (searched in the whole
    package), or that a function gives it (searched in its file). Prints
    one JSON object per def: {"def": site, "name": ..., "refs": [site...]}."""
    src = site.source(rel)
    targets = {}
    for st in src.tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            key = site_key(src.site(src.def_name(st)))
            targets[key] = st.name
    refs = {k: set() for k in targets}
    files = package_files(site)
    data = {}
    analyses = {}
    skipped = []
    done = set()  # (file, name) searched
    queue = sorted(set(targets.values()))
    searched = set(queue)
    while queue:
        names, queue = queue, []
        pattern = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")
        for f in files:
            if f not in data:
                with open(os.path.join(site.root, f), "rb") as fh:
                    data[f] = fh.read()
            if not pattern.search(data[f]):
                continue
            fa = analyses.get(f)
            if fa is None:
                try:
                    fa = FileAnalysis(site, f)
                except (SyntaxError, ValueError, RuntimeError, UnicodeDecodeError) as e:
                    skipped.append("%s: %s" % (f, e))
                    analyses[f] = False
                    continue
                fa.ends = rebinding_ends(fa)
                analyses[f] = fa
            if fa is False:
                continue
            local = [n for n in names if (f, n) not in done]
            while local:
                name = local.pop()
                done.add((f, name))
                for kind, off, oname, sc, extra in fa.occs:
                    if oname != name:
                        continue
                    fa.res.depth, fa.res.active = 0, set()
                    try:
                        d = fa.definition(kind, off, oname, sc, extra)
                    except (Undecided, RecursionError):
                        continue
                    if d is None or site_key(d) not in refs:
                        continue
                    here = fa.src.site(off)
                    if site_key(here) == site_key(d):
                        continue  # the declaration
                    refs[site_key(d)].add(site_key(here))
                    alias, wide = None, False
                    if kind in ("imported", "module") and off in fa.aliases:
                        alias, sk = fa.aliases[off]
                        wide = sk in ("module", "class")
                    elif kind in ("read", "attribute") and off in fa.ends:
                        alias, wide = fa.ends[off]
                    if alias is None or alias == name:
                        continue
                    if wide and alias not in searched:
                        searched.add(alias)
                        queue.append(alias)
                    if (f, alias) not in done and alias not in local:
                        local.append(alias)
    out = sys.stdout
    for key, name in targets.items():
        rec = {"def": {"file": key[0], "line": key[1], "col": key[2]}, "name": name,
               "refs": [{"file": r[0], "line": r[1], "col": r[2]} for r in sorted(refs[key])]}
        out.write(json.dumps(rec) + "\n")
    for s in skipped:
        sys.stderr.write("skipped %s\n" % s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", required=True)
    ap.add_argument("--package", default="")
    ap.add_argument("--refs", action="store_true", help="references of every top-level def of the one FILE")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    sys.setrecursionlimit(10000)
    site = Site(args.site, args.package)
    if args.refs:
        references(site, args.files[0])
        return
    out = sys.stdout
    for rel in args.files:
        fa = FileAnalysis(site, rel)
        for kind, off, name, sc, extra in fa.occs:
            line, col = fa.src.pos(off)
            rec = {"file": rel, "line": line, "col": col, "name": name, "kind": kind, "def": None}
            fa.res.depth, fa.res.active = 0, set()
            try:
                rec["def"] = fa.definition(kind, off, name, sc, extra)
            except Undecided as e:
                rec["why"] = str(e)
            except RecursionError:
                rec["why"] = "too deep"
            out.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
