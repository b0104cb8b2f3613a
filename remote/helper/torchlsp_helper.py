# torchlsp resident helper.
#
# This program is sent over the interpreter's stdin by torchlsp and executed
# in place; nothing is installed on the target. After the source, the same
# stdin carries requests as frames: a 4-byte big-endian length followed by
# that many bytes of UTF-8 JSON. Replies go out on a private duplicate of the
# original stdout; fd 1 is pointed at stderr so that anything printed while
# importing user packages (C extensions included) cannot corrupt the frames.
#
# It must run on Python 3.8 and later, with only the standard library.

import importlib
import importlib.util
import inspect
import json
import linecache
import os
import struct
import sys
import threading
import time
import traceback

PROTOCOL = 1
MAX_FRAME = 64 << 20
# Replies larger than this are replaced by an error: torchlsp stops a
# helper whose frame passes its limit (remote.HelperLimits.MaxFrame).
MAX_REPLY = 4 << 20
# Characters; torchlsp's byte limits are four times these.
DOC_LIMIT = 16000
SUMMARY_LIMIT = 2000
SIGNATURE_LIMIT = 4000
REPR_LIMIT = 2000
SOURCE_SUFFIXES = (".py", ".pyi")


class Channel:
    """Framed JSON over a pair of file descriptors."""

    def __init__(self, reader, out_fd):
        self._reader = reader
        self._out = os.fdopen(out_fd, "wb", buffering=0)
        self._lock = threading.Lock()

    def read(self):
        head = self._reader.read(4)
        if not head:
            return None
        if len(head) != 4:
            raise EOFError("truncated frame header")
        (size,) = struct.unpack(">I", head)
        if size > MAX_FRAME:
            raise ValueError("frame of %d bytes exceeds the limit" % size)
        body = self._reader.read(size)
        if len(body) != size:
            raise EOFError("truncated frame body")
        return json.loads(body.decode("utf-8"))

    def write(self, message):
        try:
            body = json.dumps(message, ensure_ascii=True, default=repr).encode("ascii")
        except (TypeError, ValueError) as exc:
            body = json.dumps({"id": message.get("id"), "error": {
                "type": type(exc).__name__, "message": "reply not serializable: %s" % exc,
                "traceback": ""}}).encode("ascii")
        if len(body) > MAX_REPLY:
            body = json.dumps({"id": message.get("id"), "error": {
                "type": "ReplyTooLarge",
                "message": "the reply of %d bytes exceeds the helper's limit of %d bytes" % (len(body), MAX_REPLY),
                "traceback": ""}}).encode("ascii")
        data = struct.pack(">I", len(body)) + body
        with self._lock:
            view = memoryview(data)
            while view:
                n = self._out.write(view)
                view = view[n:]


class RequestError(Exception):
    """An error reported to the caller with a chosen type name."""

    def __init__(self, type_name, message):
        Exception.__init__(self, message)
        self.type_name = type_name


def hello():
    return {
        "protocol": PROTOCOL,
        "python": "%d.%d.%d" % sys.version_info[:3],
        "implementation": sys.implementation.name,
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "sys_path": [p for p in sys.path if isinstance(p, str)],
        "pid": os.getpid(),
        "platform": sys.platform,
        "cwd": os.getcwd(),
    }


def _require_str(params, key):
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise RequestError("ValueError", "parameter %r must be a non-empty string" % key)
    return value


def m_ping(params):
    return {"pong": True, "time": time.time()}


def m_find_spec(params):
    name = _require_str(params, "name")
    spec = importlib.util.find_spec(name)
    if spec is None:
        return {"name": name, "found": False}
    locations = spec.submodule_search_locations
    return {
        "name": name,
        "found": True,
        "origin": spec.origin if spec.has_location else None,
        "submodule_search_locations": list(locations) if locations is not None else None,
        "is_package": locations is not None,
    }


def _static_version(directory, filenames):
    """Reads __version__ or version from source files without importing."""
    import ast

    for filename in filenames:
        path = os.path.join(directory, filename)
        try:
            with open(path, "rb") as f:
                tree = ast.parse(f.read(), path)
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
                value = node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
                value = node.value
            for target in targets:
                if isinstance(target, ast.Name) and target.id in ("__version__", "version"):
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        return value.value
                    if isinstance(value, ast.Call) and value.args:
                        first = value.args[0]
                        if isinstance(first, ast.Constant) and isinstance(first.value, str):
                            return first.value
    return None


def _metadata_version(name, site):
    """Version of the distribution that installed name into site.

    Only metadata in the package's own directory counts: another copy of
    the package earlier or later on sys.path (a PYTHONPATH checkout over a
    system install) has its own, unrelated version.
    """
    try:
        import importlib.metadata as metadata
    except ImportError:
        return None, None
    try:
        dists = list(metadata.distributions(path=[site]))
    except Exception:
        return None, None
    wanted = name.replace("-", "_").lower()
    for dist in dists:
        try:
            dist_name = (dist.metadata["Name"] or "").replace("-", "_").lower()
        except Exception:
            continue
        if dist_name == wanted:
            return dist.version, dist.metadata["Name"]
    # The distribution may be named differently (PyYAML for yaml): look at
    # what each distribution in this directory declares as its top level.
    for dist in dists:
        try:
            top = (dist.read_text("top_level.txt") or "").split()
        except Exception:
            continue
        if name in top:
            return dist.version, dist.metadata["Name"]
    return None, None


def source_files(site, name, is_package):
    """Yields (relative path, absolute path) for the package's source files."""
    if not is_package:
        yield name, os.path.join(site, name)
        return
    root = os.path.join(site, name)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for filename in sorted(filenames):
            if not filename.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, filename)
            if os.path.isfile(path):
                yield os.path.relpath(path, site), path


def m_package_info(params):
    name = _require_str(params, "name")
    if "." in name:
        raise RequestError("ValueError", "package_info takes a top-level name, not %r" % name)
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise RequestError("ModuleNotFoundError", "no module named %r" % name)
    locations = spec.submodule_search_locations
    is_package = locations is not None
    if is_package:
        locations = list(locations)
        if not locations:
            raise RequestError("ValueError", "%r is a namespace package with no location" % name)
        location = os.path.realpath(locations[0])
        site = os.path.dirname(location)
        member = os.path.basename(location)
    else:
        if not spec.has_location or not spec.origin or not spec.origin.endswith(".py"):
            raise RequestError("ValueError", "%r has no Python source on disk" % name)
        location = os.path.realpath(spec.origin)
        site = os.path.dirname(location)
        member = os.path.basename(location)
    version, dist = _metadata_version(name, site)
    version_source = "metadata" if version else None
    if version is None and is_package:
        version = _static_version(location, ("version.py", "_version.py", "__init__.py"))
        version_source = "source" if version else None
    files = 0
    size = 0
    for _, path in source_files(site, member, is_package):
        try:
            size += os.stat(path).st_size
        except OSError:
            continue
        files += 1
    return {
        "name": name,
        "distribution": dist,
        "version": version,
        "version_source": version_source,
        "location": location,
        "site": site,
        "member": member,
        "is_package": is_package,
        "origin": spec.origin if spec.has_location else None,
        "files_count": files,
        "bytes": size,
        "imported": name in sys.modules,
    }


def m_import(params):
    module = _require_str(params, "module")
    already = module in sys.modules
    start = time.monotonic()
    mod = importlib.import_module(module)
    return {
        "module": module,
        "file": getattr(mod, "__file__", None),
        "already_imported": already,
        "seconds": time.monotonic() - start,
    }


def resolve(qualname):
    """Finds the object a dotted name denotes, importing modules as needed."""
    parts = qualname.split(".")
    obj = importlib.import_module(parts[0])
    path = parts[0]
    for part in parts[1:]:
        path = path + "." + part
        try:
            obj = getattr(obj, part)
            continue
        except AttributeError:
            pass
        if inspect.ismodule(obj):
            try:
                obj = importlib.import_module(path)
                continue
            except ModuleNotFoundError as exc:
                if exc.name != path:
                    raise
        raise RequestError("AttributeError", "%s has no attribute %r" % (path.rsplit(".", 1)[0], part))
    return obj


def kind_of(obj):
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if inspect.isfunction(obj):
        return "function"
    if inspect.ismethod(obj):
        return "method"
    if inspect.isbuiltin(obj):
        return "builtin"
    if inspect.ismethoddescriptor(obj) or type(obj).__name__ == "method-wrapper":
        return "method_descriptor"
    if isinstance(obj, property) or inspect.isdatadescriptor(obj):
        return "property"
    if callable(obj):
        return "callable"
    return "value"


def _decorated_def_line(filename, first):
    """Returns the 1-based line of the def/class statement at or after first.

    co_firstlineno and inspect.findsource point at the first decorator of a
    decorated definition; the definition itself is what a reader wants.
    """
    lines = linecache.getlines(filename)
    if not lines or first < 1 or first > len(lines):
        return first
    depth = 0
    for index in range(first - 1, min(len(lines), first - 1 + 400)):
        text = lines[index].strip()
        if depth > 0:
            depth += _paren_delta(text)
            continue
        if text.startswith("@"):
            depth = max(0, _paren_delta(text))
            continue
        if not text or text.startswith("#"):
            continue
        if text.startswith(("def ", "async def ", "class ")):
            return index + 1
        return first
    return first


def _paren_delta(text):
    # Good enough for decorator arguments; strings with brackets are rare there.
    code = text.split("#", 1)[0]
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def _source_file(obj):
    try:
        path = inspect.getsourcefile(obj)
    except (TypeError, OSError):
        path = None
    if path:
        return path, True
    try:
        path = inspect.getfile(obj)
    except (TypeError, OSError):
        return None, False
    return path, False


def _def_line(obj, path):
    if inspect.ismodule(obj):
        return 1
    code = getattr(obj, "__code__", None)
    if code is not None:
        return _decorated_def_line(path, code.co_firstlineno)
    first = getattr(obj, "__firstlineno__", None)
    if isinstance(first, int):
        return _decorated_def_line(path, first)
    try:
        _, lnum = inspect.findsource(obj)
    except (OSError, TypeError, IndexError):
        return None
    return _decorated_def_line(path, lnum + 1)


def _module_name(obj):
    if inspect.ismodule(obj):
        return obj.__name__
    name = getattr(obj, "__module__", None)
    return name if isinstance(name, str) else None


def stub_candidates(obj, requested):
    """Dotted names under which a .pyi stub may declare obj."""
    out = []

    def add(*parts):
        if all(isinstance(p, str) and p for p in parts):
            name = ".".join(parts)
            if name not in out:
                out.append(name)

    name = getattr(obj, "__name__", None)
    qualname = getattr(obj, "__qualname__", None)
    module = _module_name(obj)
    owner = getattr(obj, "__self__", None)
    objclass = getattr(obj, "__objclass__", None)
    if isinstance(qualname, str) and qualname.startswith("_VariableFunctionsClass."):
        add("torch._C._VariableFunctions", qualname.split(".", 1)[1])
    if inspect.ismodule(owner):
        add(owner.__name__, name)
    elif inspect.isclass(owner):
        add(owner.__module__, owner.__qualname__, name)
    if inspect.isclass(objclass):
        add(objclass.__module__, objclass.__qualname__, name)
    add(module, qualname)
    add(module, name)
    add(requested)
    return out


def _cut(text, limit):
    if text is None or len(text) <= limit:
        return text
    return text[:limit - 1] + "\u2026"


def _doc(obj):
    try:
        doc = inspect.getdoc(obj)
    except Exception:
        doc = None
    if not isinstance(doc, str):
        return None, None
    # Split only the head: a docstring may be megabytes long.
    summary = doc[:SUMMARY_LIMIT * 4].strip().split("\n\n", 1)[0].strip()
    return _cut(doc, DOC_LIMIT), _cut(summary, SUMMARY_LIMIT)


def m_inspect(params):
    qualname = _require_str(params, "qualname")
    obj = resolve(qualname)
    try:
        target = inspect.unwrap(obj)
    except ValueError:
        target = obj
    kind = kind_of(target)
    path, has_source = _source_file(target)
    if path and not path.endswith(SOURCE_SUFFIXES):
        has_source = False
    line = _def_line(target, path) if has_source else None
    try:
        signature = _cut(str(inspect.signature(obj)), SIGNATURE_LIMIT)
    except (TypeError, ValueError):
        signature = None
    doc, summary = _doc(obj)
    result = {
        "qualname": qualname,
        "kind": kind,
        "type": type(obj).__module__ + "." + type(obj).__qualname__,
        "module": _module_name(target),
        "object_qualname": getattr(target, "__qualname__", None) if not inspect.ismodule(target) else None,
        "file": os.path.realpath(path) if path else None,
        "line": line,
        "signature": signature,
        "doc": doc,
        "doc_summary": summary,
        "has_source": has_source,
        "wrapped": target is not obj,
        "stub_candidates": [],
    }
    if not has_source and kind != "module":
        result["stub_candidates"] = stub_candidates(target, qualname)
    if kind == "value":
        result["repr"] = _safe_repr(obj)
    return result


def _safe_repr(value, limit=REPR_LIMIT):
    try:
        text = repr(value)
    except Exception as exc:
        text = "<unrepresentable %s: %s>" % (type(value).__name__, exc)
    return text if len(text) <= limit else text[:limit] + "..."


def _plain(value, depth=0):
    """Reports whether value is plain data that JSON can carry as is."""
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, (int, float)):
        return isinstance(value, bool) or (value == value and value not in (float("inf"), float("-inf")))
    if depth > 4:
        return False
    if isinstance(value, (list, tuple)):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _config_value(value):
    entry = {"repr": _safe_repr(value)}
    if _plain(value):
        entry["json"] = value
    return entry


def _attribute_config(mod):
    """Config as module attributes and nested classes, for torch without _config."""
    out = {}

    def walk(holder, prefix, depth):
        for key, value in vars(holder).items():
            if key.startswith("_") or inspect.ismodule(value) or inspect.isroutine(value):
                continue
            if inspect.isclass(value):
                if depth < 4 and value.__module__ == mod.__name__ and value.__qualname__.endswith(key):
                    walk(value, prefix + key + ".", depth + 1)
                continue
            if _plain(value) or isinstance(value, (set, frozenset)):
                out[prefix + key] = value

    walk(mod, "", 0)
    return out


def m_eval_config(params):
    module = _require_str(params, "module")
    keys = params.get("keys")
    mod = importlib.import_module(module)
    source = None
    values = None
    entries = getattr(mod, "_config", None)
    if callable(getattr(mod, "get_config_copy", None)):
        values = mod.get_config_copy()
        source = "get_config_copy"
    elif isinstance(entries, dict):
        values = {k: getattr(mod, k) for k in entries}
        source = "_config"
    else:
        values = _attribute_config(mod)
        source = "attributes"
    if keys:
        wanted = set(keys)
        missing = sorted(wanted.difference(values))
        values = {k: v for k, v in values.items() if k in wanted}
    else:
        missing = []
    out = {}
    for key, value in values.items():
        entry = _config_value(value)
        meta = entries.get(key) if isinstance(entries, dict) else None
        if meta is not None and not isinstance(meta, (bool, int, float, str, type(None))):
            if hasattr(meta, "default"):
                entry["default_repr"] = _safe_repr(meta.default)
            for attr in ("env_name_default", "env_name_force"):
                names = getattr(meta, attr, None)
                if isinstance(names, str):
                    names = [names]
                if names:
                    entry.setdefault("env_names", []).extend(n for n in names if isinstance(n, str))
        out[key] = entry
    return {"module": module, "file": getattr(mod, "__file__", None), "source": source,
            "values": out, "missing": missing}


# What site_packages sends of a distribution's metadata directory: the files
# tools read (importlib.metadata, pip, mypy, jedi), never RECORD (it lists
# compiled files the mirror does not have).
DIST_FILES = ("METADATA", "PKG-INFO", "WHEEL", "INSTALLER", "REQUESTED",
              "top_level.txt", "entry_points.txt", "requires.txt")
DIST_FILE_LIMIT = 1 << 20
TYPED_LIMIT = 64
SITE_NAMES_LIMIT = 512


def _norm_dist(name):
    out = []
    last_dash = False
    for c in name.lower():
        if c in "-_.":
            if not last_dash:
                out.append("-")
            last_dash = True
        else:
            out.append(c)
            last_dash = False
    return "".join(out)


def _dist_top_level(dist):
    """The import names a distribution installs."""
    try:
        text = dist.read_text("top_level.txt")
    except Exception:
        text = None
    if text:
        return [n for n in text.split() if n.isidentifier()]
    names = []
    try:
        files = dist.files or []
    except Exception:
        files = []
    for f in files:
        parts = getattr(f, "parts", ())
        if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith((".dist-info", ".egg-info", ".data")):
            continue
        first = parts[0]
        if len(parts) == 1:
            if first.endswith(".py") and first[:-3].isidentifier():
                first = first[:-3]
            else:
                continue
        elif not first.isidentifier():
            continue
        if first not in names:
            names.append(first)
    return names


def _requirement(spec):
    """(distribution, needs an extra) of a Requires-Dist line."""
    head, _, marker = spec.partition(";")
    name = ""
    for i, c in enumerate(head.strip()):
        if not (c.isalnum() or c in "-_."):
            break
        name = head.strip()[: i + 1]
    needs_extra = False
    m = marker.replace(" ", "")
    if "extra==" in m or "extra!=" in m or "==extra" in m:
        needs_extra = True
    return name, needs_extra


class _SiteDists:
    """The distributions installed in one directory, read once per request."""

    def __init__(self, site):
        try:
            import importlib.metadata as metadata
            self.dists = list(metadata.distributions(path=[site]))
        except Exception:
            self.dists = []
        self.by_name = {}
        for dist in self.dists:
            try:
                key = _norm_dist(dist.metadata["Name"] or "")
            except Exception:
                continue
            if key and key not in self.by_name:
                self.by_name[key] = dist
        self._top = None

    def provider(self, name):
        """The distribution that provides import name, if any."""
        dist = self.by_name.get(_norm_dist(name))
        if dist is not None:
            return dist
        if self._top is None:
            self._top = {}
            for d in self.dists:
                for top in _dist_top_level(d):
                    self._top.setdefault(top, d)
        return self._top.get(name)


def _typed_markers(location):
    """py.typed files inside a package directory, relative to its parent."""
    out = []
    parent = os.path.dirname(location)
    for dirpath, dirnames, filenames in os.walk(location):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        if "py.typed" in filenames:
            path = os.path.join(dirpath, "py.typed")
            try:
                with open(path, "rb") as f:
                    data = f.read(4097)
            except OSError:
                continue
            if len(data) > 4096:
                continue
            out.append({"path": os.path.relpath(path, parent).replace(os.sep, "/"),
                        "text": data.decode("utf-8", "replace")})
            if len(out) >= TYPED_LIMIT:
                break
    return out


def m_site_packages(params):
    """Describes top-level names for a site-packages view of this install.

    For each name: whether the import system finds it, whether it is a
    third-party package (in a site-packages or dist-packages directory, or
    claimed by an installed distribution), its distribution's metadata
    files, the distributions it requires (those needing an extra are
    marked) with the import names each installs, and its py.typed markers.
    Nothing is imported.
    """
    names = params.get("names")
    if not isinstance(names, list) or len(names) > SITE_NAMES_LIMIT:
        raise RequestError("ValueError", "names must be a list of at most %d names" % SITE_NAMES_LIMIT)
    try:
        import importlib.metadata as metadata
    except ImportError:
        metadata = None
    installed = None
    sites = {}
    out = []
    for name in names:
        if not isinstance(name, str) or not name.isidentifier():
            raise RequestError("ValueError", "not a top-level name: %r" % (name,))
        entry = {"name": name, "found": False}
        out.append(entry)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        locations = spec.submodule_search_locations
        if locations is not None:
            locations = list(locations)
            if not locations:
                continue
            location = os.path.realpath(locations[0])
        elif spec.has_location and spec.origin and spec.origin.endswith(".py"):
            location = os.path.realpath(spec.origin)
        else:
            continue
        site = os.path.dirname(location)
        entry["found"] = True
        entry["site"] = site
        entry["is_package"] = locations is not None
        if site not in sites:
            sites[site] = _SiteDists(site)
        dist = sites[site].provider(name)
        entry["third_party"] = os.path.basename(site) in ("site-packages", "dist-packages") or dist is not None
        if dist is None:
            continue
        entry["distribution"] = dist.metadata["Name"]
        entry["version"] = dist.version
        path = getattr(dist, "_path", None)
        if path is not None and os.path.dirname(os.path.realpath(str(path))) == os.path.realpath(site):
            entry["dist_dir"] = os.path.basename(str(path))
            files = {}
            for fname in DIST_FILES:
                fpath = os.path.join(str(path), fname)
                try:
                    if os.path.getsize(fpath) > DIST_FILE_LIMIT:
                        continue
                    with open(fpath, "rb") as f:
                        files[fname] = f.read(DIST_FILE_LIMIT).decode("utf-8", "replace")
                except OSError:
                    continue
            entry["files"] = files
        if locations is not None:
            entry["typed"] = _typed_markers(location)
        requires = []
        for spec_line in dist.requires or []:
            dname, needs_extra = _requirement(spec_line)
            if not dname:
                continue
            req = {"spec": spec_line, "distribution": dname, "extra": needs_extra, "installed": False}
            if not needs_extra and metadata is not None:
                if installed is None:
                    installed = {}
                    try:
                        for d in metadata.distributions():
                            key = _norm_dist(d.metadata["Name"] or "")
                            if key and key not in installed:
                                installed[key] = d
                    except Exception:
                        pass
                found = installed.get(_norm_dist(dname))
                if found is not None:
                    req["installed"] = True
                    req["top_level"] = _dist_top_level(found)
            requires.append(req)
        entry["requires"] = requires
    return {"packages": out}


# On-demand reads: a few source files of one package, bounded in count and
# bytes, so that a first answer needs only the files on a name's import path.
READ_MAX_FILES = 64
READ_MAX_BYTES = 2 << 20
READ_MAX_FILE = 2 << 20
LIST_MAX_FILES = 20000


def _package_root(name):
    """Returns (site, member, location, is_package) without importing name."""
    if "." in name:
        raise RequestError("ValueError", "takes a top-level name, not %r" % name)
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise RequestError("ModuleNotFoundError", "no module named %r" % name)
    locations = spec.submodule_search_locations
    if locations is not None:
        locations = list(locations)
        if not locations:
            raise RequestError("ValueError", "%r is a namespace package with no location" % name)
        location = os.path.realpath(locations[0])
        return os.path.dirname(location), os.path.basename(location), location, True
    if not spec.has_location or not spec.origin or not spec.origin.endswith(".py"):
        raise RequestError("ValueError", "%r has no Python source on disk" % name)
    location = os.path.realpath(spec.origin)
    return os.path.dirname(location), os.path.basename(location), location, False


def m_list_files(params):
    name = _require_str(params, "name")
    site, member, location, is_package = _package_root(name)
    files = []
    for rel, path in source_files(site, member, is_package):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        files.append([rel.replace(os.sep, "/"), st.st_size])
        if len(files) > LIST_MAX_FILES:
            raise RequestError("ValueError", "%r has more than %d source files" % (name, LIST_MAX_FILES))
    return {"site": site, "member": member, "files": files}


_FROM_IMPORT = None


def _module_files(site, module):
    """The existing source files that define a dotted module, relative to site."""
    base = module.replace(".", "/")
    out = []
    for rel in (base + "/__init__.py", base + "/__init__.pyi", base + ".py", base + ".pyi"):
        if os.path.isfile(os.path.join(site, rel)):
            out.append(rel)
    return out


def _import_path(site, qualname, limit):
    """Guesses, from the text of the files, those on the import path of
    qualname: the deepest module its prefixes name, then the modules that
    re-export the next component (from X import name, from X import *),
    a few hops deep. A guess only: torchlsp reads anything it missed."""
    global _FROM_IMPORT
    import re
    if _FROM_IMPORT is None:
        _FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
    parts = qualname.split(".")
    out, seen = [], set()
    frontier = []
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        if _module_files(site, module):
            frontier = [(module, parts[i] if i < len(parts) else None)]
            break
    for _ in range(5):
        following = []
        for module, attr in frontier:
            if module in seen:
                continue
            seen.add(module)
            for rel in _module_files(site, module):
                if len(out) >= limit:
                    return out
                out.append(rel)
                if attr is None:
                    continue
                try:
                    with open(os.path.join(site, rel), "r", encoding="utf-8", errors="replace") as f:
                        text = f.read(READ_MAX_FILE)
                except OSError:
                    continue
                package = module if rel.endswith(("__init__.py", "__init__.pyi")) else module.rpartition(".")[0]
                for dots, source, names in _FROM_IMPORT.findall(text):
                    names = re.sub(r"#[^\n]*", "", names).strip().strip("()").replace("\\\n", " ")
                    imported = [n.split(" as ")[-1].strip() for n in names.split(",")]
                    if attr not in imported and "*" not in imported:
                        continue
                    if dots:
                        anchor = package.split(".")
                        if len(dots) > 1:
                            anchor = anchor[: len(anchor) - (len(dots) - 1)]
                        target = ".".join([p for p in anchor + source.split(".") if p])
                    else:
                        target = source
                    if not target:
                        continue
                    sub = target + "." + attr
                    if _module_files(site, sub):
                        following.append((sub, None))
                    following.append((target, attr))
        frontier = following
        if not frontier:
            break
    return out


def m_read_files(params):
    import base64
    name = _require_str(params, "name")
    paths = params.get("paths")
    if not isinstance(paths, list) or len(paths) > READ_MAX_FILES:
        raise RequestError("ValueError", "paths must be a list of at most %d paths" % READ_MAX_FILES)
    site, member, location, is_package = _package_root(name)
    follow = params.get("follow")
    if isinstance(follow, str) and follow.split(".")[0] == name and is_package:
        # The files the name's import path guesses, after those asked for.
        extra = [p for p in _import_path(site, follow, READ_MAX_FILES) if p not in paths]
        paths = list(paths) + extra[: max(0, READ_MAX_FILES - len(paths))]
    budget = READ_MAX_BYTES
    files, skipped = [], []
    for rel in paths:
        if not isinstance(rel, str) or not rel.endswith(SOURCE_SUFFIXES):
            skipped.append({"path": str(rel)[:200], "reason": "not a source file"})
            continue
        norm = os.path.normpath(rel)
        top = norm.split(os.sep)[0]
        if os.path.isabs(rel) or norm != rel.replace("/", os.sep) or top != member:
            skipped.append({"path": rel[:200], "reason": "outside the package"})
            continue
        path = os.path.join(site, norm)
        real = os.path.realpath(path)
        if real != location and not real.startswith(location + os.sep):
            skipped.append({"path": rel, "reason": "outside the package"})
            continue
        try:
            st = os.lstat(path)
            if not os.path.isfile(path) or os.path.islink(path):
                raise OSError("not a regular file")
            if st.st_size > READ_MAX_FILE:
                skipped.append({"path": rel, "reason": "too large"})
                continue
            if st.st_size > budget:
                skipped.append({"path": rel, "reason": "over the reply's budget"})
                continue
            with open(path, "rb") as f:
                data = f.read(READ_MAX_FILE + 1)
        except OSError as exc:
            skipped.append({"path": rel, "reason": "unreadable: %s" % exc})
            continue
        if len(data) > budget:
            skipped.append({"path": rel, "reason": "over the reply's budget"})
            continue
        budget -= len(data)
        files.append({"path": rel, "size": len(data), "data": base64.b64encode(data).decode("ascii")})
    return {"site": site, "files": files, "skipped": skipped}


METHODS = {
    "ping": (m_ping, False),
    "find_spec": (m_find_spec, True),
    # Only ping runs on the reader thread: it answers torchlsp's liveness
    # probe while other requests (an import of torch, a walk of a large
    # package) run on threads of their own.
    "package_info": (m_package_info, True),
    "import": (m_import, True),
    "inspect": (m_inspect, True),
    "eval_config": (m_eval_config, True),
    "site_packages": (m_site_packages, True),
    "list_files": (m_list_files, True),
    "read_files": (m_read_files, True),
}


def handle(channel, request):
    rid = request.get("id")
    method = request.get("method")
    params = request.get("params") or {}
    try:
        entry = METHODS.get(method)
        if entry is None:
            raise RequestError("UnknownMethod", "unknown method %r" % (method,))
        if not isinstance(params, dict):
            raise RequestError("ValueError", "params must be an object")
        reply = {"id": rid, "result": entry[0](params)}
    except BaseException as exc:
        type_name = getattr(exc, "type_name", None) or type(exc).__name__
        reply = {"id": rid, "error": {
            "type": type_name,
            "message": str(exc),
            "traceback": "" if isinstance(exc, RequestError) else traceback.format_exc(),
        }}
        if isinstance(exc, KeyboardInterrupt):
            channel.write(reply)
            raise
    channel.write(reply)


class _Prefixed:
    """A reader that returns some bytes before those of a file."""

    def __init__(self, prefix, f):
        self._prefix = prefix
        self._f = f

    def read(self, n):
        if not self._prefix:
            return self._f.read(n)
        head, self._prefix = self._prefix[:n], self._prefix[n:]
        if len(head) < n:
            rest = self._f.read(n - len(head))
            head += rest or b""
        return head


def _private_stdin():
    """Moves the request stream off fd 0, which then reads /dev/null.

    Code run by requests (input(), pdb, child processes) cannot steal frames.
    """
    buffered = sys.stdin.buffer
    # Whatever the bootstrap's buffered reader read ahead must be kept.
    os.set_blocking(0, False)
    try:
        pending = buffered.peek(1 << 16) or b""
    except BlockingIOError:
        pending = b""
    finally:
        os.set_blocking(0, True)
    if pending:
        pending = buffered.read(len(pending))
    in_fd = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, "r", closefd=False)
    return _Prefixed(pending, os.fdopen(in_fd, "rb", buffering=1 << 16))


def main():
    reader = _private_stdin()
    sys.stdout.flush()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel = Channel(reader, out_fd)
    channel.write(hello())
    while True:
        request = channel.read()
        if request is None:
            break
        entry = METHODS.get(request.get("method"))
        if entry is not None and entry[1]:
            threading.Thread(target=handle, args=(channel, request), daemon=True).start()
        else:
            handle(channel, request)
    # stdin closed: torchlsp is gone; leave without waiting for slow imports.
    sys.stderr.flush()
    os._exit(0)


main()
