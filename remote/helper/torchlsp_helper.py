# torchlsp resident helper.
#
# This program is sent over the interpreter's stdin by torchlsp and executed
# in place; nothing is installed on the target. After the source, the same
# stdin carries requests as frames: a 4-byte big-endian length followed by
# that many bytes of UTF-8 JSON. Replies go out on a private duplicate of the
# original stdout; fd 1 is pointed at stderr so that anything printed while
# importing user packages (C extensions included) cannot corrupt the frames.
#
# It must run on Python 3.9 and later, with only the standard library:
# CI runs it on Debian 11's Python 3.9 behind the Docker hop (test/hops).

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


def _gil_facts():
    """Whether this interpreter is built without the GIL (sysconfig's
    Py_GIL_DISABLED, 3.13+), and whether the GIL is on now
    (sys._is_gil_enabled; None where Python has no such call)."""
    import sysconfig
    disabled = sysconfig.get_config_var("Py_GIL_DISABLED") == 1
    probe = getattr(sys, "_is_gil_enabled", None)
    enabled = bool(probe()) if callable(probe) else None
    return disabled, enabled


def hello():
    gil_disabled, gil_enabled = _gil_facts()
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
        "gil_disabled": gil_disabled,
        "gil_enabled": gil_enabled,
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


def _static_version(site, member, filenames):
    """Reads __version__ or version from the package's source files
    without importing, each read by the rule on links."""
    import ast

    for filename in filenames:
        rel = member + "/" + filename
        try:
            data, _ = plain_read(site, rel, READ_MAX_FILE)
            if len(data) > READ_MAX_FILE:
                continue
            tree = ast.parse(data, os.path.join(site, rel))
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


# ---- The one rule on the target's links. This block is the same, byte for
# byte, in torchlsp_helper.py and torchlsp_mirror.py: each program is sent
# alone, so neither can import it (TestTargetFileRuleIsShared holds them
# equal).
#
# Every file torchlsp reads from the target (a package's sources, its
# py.typed markers, a distribution's metadata, a .pth file) is named by a
# path relative to a real directory: the one that holds the package, as
# the interpreter's realpath found it, or a site directory. Below that
# directory no symbolic link is ever followed, whatever it points to,
# inside the package or out, and only a regular file is read: each
# directory on the way is opened with O_NOFOLLOW relative to the one
# before, the file itself with O_NOFOLLOW, O_NONBLOCK and O_NOCTTY, checked
# with fstat, and read through a bound. A walk of a package lists the same
# files: it enters no link and yields only regular files. So the bulk
# mirror, the on-demand reads and the site agree on every file.


def plain_open(base, rel):
    """(fd, stat) of the regular file rel (slash-separated, clean) below
    the directory base, with no link followed below base; OSError else."""
    import errno
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts):
        raise OSError(errno.EINVAL, "not a clean relative path: %r" % rel[:200])
    cloexec = getattr(os, "O_CLOEXEC", 0)
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | cloexec)
    try:
        for part in parts[:-1]:
            try:
                sub = os.open(part, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | nofollow | cloexec, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OSError(exc.errno, "%s is a symbolic link or not a directory: not followed" % part[:200])
                raise
            os.close(fd)
            fd = sub
        return _open_file_at(fd, parts[-1])
    finally:
        os.close(fd)


def _open_file_at(dir_fd, name):
    """(fd, stat) of the regular file name in the directory open as
    dir_fd, name not followed if it is a link; OSError else."""
    import errno
    import stat
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        f = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, "a symbolic link: not followed")
        raise
    try:
        st = os.fstat(f)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
    except BaseException:
        os.close(f)
        raise
    return f, st


def _read_fd(fd, limit):
    """At most limit + 1 bytes of fd, so that a caller sees a file over
    its limit."""
    chunks, total = [], 0
    while total <= limit:
        data = os.read(fd, min(1 << 20, limit + 1 - total))
        if not data:
            break
        chunks.append(data)
        total += len(data)
    return b"".join(chunks)


def plain_read(base, rel, limit):
    """(data, stat) of the regular file rel below base (see plain_open):
    at most limit + 1 bytes, so that a caller sees a file over its limit."""
    fd, st = plain_open(base, rel)
    try:
        return _read_fd(fd, limit), st
    finally:
        os.close(fd)


def plain_read_at(dir_fd, name, limit):
    """At most limit + 1 bytes of the regular file name in the directory
    open as dir_fd (source_files' with_dir), the name not followed if it
    is a link: plain_read's rule, without walking the path again."""
    fd, _ = _open_file_at(dir_fd, name)
    try:
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def plain_dir(base, rel):
    """Whether rel below base is a directory reached through no link."""
    import stat
    cur = base
    for part in rel.split("/"):
        cur = os.path.join(cur, part)
        try:
            if not stat.S_ISDIR(os.lstat(cur).st_mode):
                return False
        except OSError:
            return False
    return True


def plain_entries(fd):
    """(name, kind) of each entry of the open directory fd, sorted by
    name, kind "dir", "file" or "" (a link, or anything else)."""
    out = []
    with os.scandir(fd) as it:
        for e in it:
            try:
                if e.is_symlink():
                    kind = ""
                elif e.is_dir(follow_symlinks=False):
                    kind = "dir"
                elif e.is_file(follow_symlinks=False):
                    kind = "file"
                else:
                    kind = ""
            except OSError:
                kind = ""
            out.append((e.name, kind))
    out.sort()
    return out


def plain_dir_fd(base, rel):
    """A descriptor of the directory rel below base, opened one level at
    a time with O_NOFOLLOW, with no link followed below base; OSError
    else."""
    cloexec = getattr(os, "O_CLOEXEC", 0)
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | cloexec
    fd = os.open(base, flags)
    try:
        for part in rel.split("/"):
            sub = os.open(part, flags | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


# The walk of a package holds the descriptors of the directories it is
# in, at most this many; below that depth each directory is opened from
# the site again, one level at a time.
WALK_HELD_DIRS = 64


def source_files(site, member, is_package, with_dir=False):
    """Yields (relative path, path) for the package's regular .py and .pyi
    files, relative to site and slash-separated, in a sorted walk that
    enters no link and no __pycache__. Each directory is opened with
    O_NOFOLLOW relative to the descriptor of the one that listed it, so
    that a directory swapped for a link after its parent was listed is
    not entered, and costs one open however deep it lies (opened from the
    site level by level, torch's include tree doubled the walk). With
    with_dir, (relative path, path, dir_fd, name): the file's name in the
    directory open as dir_fd (valid until the next item; None when the
    walk holds no descriptor for it), to open it without a walk of its
    path."""
    import stat
    root = os.path.join(site, member)
    try:
        mode = os.lstat(root).st_mode
    except OSError:
        return
    if not is_package:
        if stat.S_ISREG(mode):
            yield (member, root, None, member) if with_dir else (member, root)
        return
    if not stat.S_ISDIR(mode):
        return
    nofollow = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    held = []  # (rel, fd or None, subdirectories left, last first) of the directories the walk is in
    fd = None
    try:
        try:
            fd = plain_dir_fd(site, member)
        except OSError:
            return
        rel = member
        while fd is not None:
            try:
                entries = plain_entries(fd)
            except OSError:
                entries = []
            dirs, files = [], []
            for name, kind in entries:
                if kind == "dir":
                    # A directory whose path is past PATH_MAX is not walked:
                    # its files could not be named by path.
                    if name != "__pycache__" and len(os.fsencode(os.path.join(site, rel, name))) < 4096:
                        dirs.append(name)
                elif kind == "file" and name.endswith(SOURCE_SUFFIXES):
                    files.append(name)
            if len(held) >= WALK_HELD_DIRS:
                os.close(fd)
                fd = None
            dirs.reverse()
            held.append((rel, fd, dirs))
            fd = None
            here = held[-1][1]
            for name in files:
                if with_dir:
                    yield rel + "/" + name, os.path.join(site, rel, name), here, name
                else:
                    yield rel + "/" + name, os.path.join(site, rel, name)
            while held and fd is None:
                parent, parent_fd, todo = held[-1]
                if not todo:
                    held.pop()
                    if parent_fd is not None:
                        os.close(parent_fd)
                    continue
                name = todo.pop()
                try:
                    if parent_fd is None:
                        fd = plain_dir_fd(site, parent + "/" + name)
                    else:
                        fd = os.open(name, nofollow, dir_fd=parent_fd)
                except OSError:
                    continue
                rel = parent + "/" + name
    finally:
        if fd is not None:
            os.close(fd)
        for _, parent_fd, _ in held:
            if parent_fd is not None:
                os.close(parent_fd)


# ---- End of the rule on links.


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
        version = _static_version(site, member, ("version.py", "_version.py", "__init__.py"))
        version_source = "source" if version else None
    files = 0
    size = 0
    for _, path in source_files(site, member, is_package):
        try:
            size += os.lstat(path).st_size
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


# Distributions, read for site_packages and package_info. Every read is
# bounded and opened without blocking: a distribution whose metadata passes
# a bound is answered as over that limit (torchlsp leaves its package out
# of the site and says why) instead of making a whole reply too large or
# the helper too big. The figures match remote/distinfo.go's; the
# reliability notes list them.
DIST_FILES = ("METADATA", "PKG-INFO", "WHEEL", "INSTALLER", "REQUESTED",
              "top_level.txt", "entry_points.txt", "requires.txt")
DIST_FILE_LIMIT = 1 << 20         # one metadata file
DIST_RECORD_LIMIT = 16 << 20      # RECORD or installed-files.txt
DIST_REQUIRES_LIMIT = 1024        # Requires-Dist lines of one distribution
DIST_TOP_LEVEL_LIMIT = 256        # top-level names one distribution installs
DIST_SCAN_LIMIT = 100000          # directory entries looked at for metadata, per directory
SITE_PACKAGE_LIMIT = 2 << 20      # one package's answer, as sent
SITE_REPLY_BUDGET = 3 << 20       # one reply; later names are deferred to the next request
SPEC_LIMIT = 256                  # characters of a Requires-Dist line sent back
TYPED_LIMIT = 64
SITE_NAMES_LIMIT = 512
STDLIB_NAMES_LIMIT = 4096
STARTUP_NAMES_LIMIT = 256         # modules the site directories' .pth files import
PTH_FILES_LIMIT = 256             # .pth files read, over all site directories
PTH_FILE_LIMIT = 64 << 10         # bytes read of one .pth file

_DIST_NAME = None
_DIST_DIR = None
_VERSION = None


def _patterns():
    global _DIST_NAME, _DIST_DIR, _VERSION
    if _DIST_NAME is None:
        import re
        # PEP 508 names; remote.distDirName; a version without spaces or controls.
        _DIST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$")
        _DIST_DIR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+!-]{0,200}\.(?:dist-info|egg-info)$")
        _VERSION = re.compile(r"^[A-Za-z0-9.+!_-]{1,128}$")
    return _DIST_NAME, _DIST_DIR, _VERSION


def _module_name_ok(name):
    """An import name torchlsp accepts: an ASCII identifier of at most 200 characters."""
    return isinstance(name, str) and 0 < len(name) <= 200 and name.isidentifier() and all(ord(c) < 128 for c in name)


class _OverLimit(Exception):
    """A distribution's metadata passed one of the bounds above."""

    def __init__(self, what, count, limit, file=None):
        Exception.__init__(self, "%s: %d over %d" % (what, count, limit))
        self.record = {"what": what, "count": count, "limit": limit}
        if file:
            self.record["file"] = file


def _read_regular(base, rel, limit, file):
    """The text of the regular file rel below base, of at most limit bytes,
    read by the rule on links; None when there is none.

    So a link in a metadata directory is not followed, and a FIFO or a
    device there neither blocks nor floods the helper.
    """
    try:
        fd, st = plain_open(base, rel)
    except OSError:
        return None
    try:
        if st.st_size > limit:
            raise _OverLimit("file", st.st_size, limit, file)
        chunks, total = [], 0
        while True:
            data = os.read(fd, min(1 << 16, limit + 1 - total))
            if not data:
                break
            chunks.append(data)
            total += len(data)
            if total > limit:
                raise _OverLimit("file", total, limit, file)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


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


class _Dist:
    """One metadata directory (NAME-VERSION.dist-info or .egg-info) in site,
    read lazily, each file once and within its bound."""

    def __init__(self, site, dirname):
        self.site = site
        self.dirname = dirname
        self.path = os.path.join(site, dirname)
        self.egg = dirname.endswith(".egg-info")
        base = dirname[: -len(".egg-info")] if self.egg else dirname[: -len(".dist-info")]
        self.base = base.split("-")[0]
        # importlib.metadata finds a distribution by its directory's name too.
        self.key = _norm_dist(self.base)
        self._texts = {}
        self._headers = None
        self._file_tops = False
        self._top_level = False

    def is_dir(self):
        """Whether the metadata is a directory, itself no link."""
        return plain_dir(self.site, self.dirname)

    def read(self, name, limit=DIST_FILE_LIMIT, what="file"):
        """A metadata file's text, None when missing; raises _OverLimit."""
        if name not in self._texts:
            if self.is_dir():
                rel = self.dirname + "/" + name
            elif self.egg and name == "PKG-INFO":
                rel = self.dirname  # an egg-info file is the PKG-INFO itself
            else:
                rel = None
            try:
                self._texts[name] = _read_regular(self.site, rel, limit, name) if rel else None
            except _OverLimit as exc:
                exc.record["what"] = what
                self._texts[name] = exc
        text = self._texts[name]
        if isinstance(text, _OverLimit):
            raise text
        return text

    def headers(self):
        """The header block of METADATA (PKG-INFO): {key: [values]}, keys lowercased."""
        if self._headers is None:
            text = self.read("PKG-INFO" if self.egg else "METADATA")
            if text is None and not self.egg:
                text = self.read("PKG-INFO")
            out = {}
            for line in (text or "").splitlines():
                if not line.strip():
                    break
                if line[0] in " \t":
                    continue  # a continued value: none of the keys read here
                key, sep, value = line.partition(":")
                if sep:
                    out.setdefault(key.strip().lower(), []).append(value.strip())
            self._headers = out
        return self._headers

    def name(self):
        dist_name = _patterns()[0]
        for candidate in self.headers().get("name", [])[:1] + [self.base]:
            if dist_name.match(candidate):
                return candidate
        return None

    def version(self):
        for v in self.headers().get("version", [])[:1]:
            if _patterns()[2].match(v):
                return v
        return None

    def requires(self):
        """The Requires-Dist lines (requires.txt for an egg), within the bound."""
        lines = self.headers().get("requires-dist", [])
        if not lines and self.egg:
            lines = []
            section = ""
            for line in (self.read("requires.txt") or "").splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1]
                    continue
                extra, _, marker = section.partition(":")
                if extra:
                    line += '; extra == "%s"' % extra
                elif marker:
                    line += "; " + marker
                lines.append(line)
        if len(lines) > DIST_REQUIRES_LIMIT:
            raise _OverLimit("requires", len(lines), DIST_REQUIRES_LIMIT)
        return lines

    def top_level_txt(self):
        """The names top_level.txt declares; None without one."""
        if self._top_level is False:
            text = self.read("top_level.txt")
            if text is None:
                self._top_level = None
            else:
                names = []
                for n in text.split():
                    if _module_name_ok(n) and n not in names:
                        names.append(n)
                        if len(names) > DIST_TOP_LEVEL_LIMIT:
                            raise _OverLimit("top_level", len(names), DIST_TOP_LEVEL_LIMIT)
                self._top_level = names
        return self._top_level

    def file_tops(self):
        """The top-level names the distribution's file list (RECORD, or an
        egg's installed-files.txt) puts in its directory; None without a list."""
        if self._file_tops is False:
            import csv
            list_name, base = ("installed-files.txt", self.dirname) if self.egg else ("RECORD", "")
            text = self.read(list_name, DIST_RECORD_LIMIT, "record")
            if text is None:
                self._file_tops = None
                return None
            tops = set()
            rows = csv.reader(text.splitlines()) if not self.egg else ([line] for line in text.splitlines())
            for row in rows:
                if not row or not row[0]:
                    continue
                rel = os.path.normpath(os.path.join(base, row[0]))
                if os.path.isabs(rel) or rel == ".." or rel.startswith(".." + os.sep):
                    continue
                parts = rel.split(os.sep)
                first = parts[0]
                if first == "__pycache__" or first.endswith((".dist-info", ".egg-info", ".data")):
                    continue
                if len(parts) == 1:
                    if not first.endswith((".py", ".pyi", ".so", ".pyd")):
                        continue
                    first = first.split(".")[0]
                if _module_name_ok(first) and first not in tops:
                    tops.add(first)
                    if len(tops) > DIST_TOP_LEVEL_LIMIT:
                        raise _OverLimit("top_level", len(tops), DIST_TOP_LEVEL_LIMIT)
            self._file_tops = tops
        return self._file_tops

    def owns(self, name):
        """Whether this distribution installed the top-level name into its
        directory: its file list holds it. A wheel's metadata always has
        its RECORD; an egg-info written by a system package manager may
        have no file list, and then owns what its top_level.txt names, or
        without one the module named like itself (the caller has found
        the module in the same directory)."""
        tops = self.file_tops()
        if tops is not None:
            return name in tops
        if not self.egg:
            return False
        declared = self.top_level_txt()
        if declared is not None:
            return name in declared
        return self.key == _norm_dist(name)

    def tops(self):
        """The import names the distribution installs: those of top_level.txt
        its file list holds (all of the list's without top_level.txt)."""
        files = self.file_tops()
        if files is None:
            if not self.egg:
                return []
            declared = self.top_level_txt()
            if declared is not None:
                return list(declared)
            return [self.base] if _module_name_ok(self.base) else []
        declared = self.top_level_txt()
        if declared is None:
            return sorted(files)
        return [n for n in declared if n in files]


class _SiteDists:
    """The distributions whose metadata lies in one directory."""

    def __init__(self, site):
        self.dists = []
        self.by_key = {}
        try:
            with os.scandir(site) as it:
                for seen, e in enumerate(it):
                    if seen >= DIST_SCAN_LIMIT:
                        break
                    if e.name.endswith((".dist-info", ".egg-info")) and not e.name.startswith(".") and not e.is_symlink():
                        self.dists.append(_Dist(site, e.name))
        except OSError:
            pass
        self.dists.sort(key=lambda d: d.dirname)
        for d in self.dists:
            self.by_key.setdefault(d.key, []).append(d)

    def provider(self, name, owner=None):
        """The distribution that installed the top-level name into this
        directory: the one named owner if it did, then one named like the
        module, then any whose top_level.txt or file list claims it; each
        only if its file list holds the name. A claimant whose metadata is
        over a limit is passed over; when no other owns the name, its
        _OverLimit is raised."""
        over = None
        tried = []
        keys = ([_norm_dist(owner)] if owner else []) + [_norm_dist(name)]
        for d in [d for k in keys for d in self.by_key.get(k, [])] + self.dists:
            if d in tried:
                continue
            tried.append(d)
            try:
                declared = d.top_level_txt()
                if d.key not in keys and declared is not None and name not in declared:
                    continue  # it does not claim the name
                if d.owns(name):
                    return d
            except _OverLimit as exc:
                over = over or exc
        if over is not None:
            raise over
        return None


class _SiteScan:
    """What one request has read of the metadata on this interpreter's path."""

    def __init__(self):
        self._dirs = {}
        self._installed = None

    def dists(self, site):
        if site not in self._dirs:
            self._dirs[site] = _SiteDists(site)
        return self._dirs[site]

    def installed(self, dist_name):
        """The distribution of that name first on sys.path, as importlib.metadata finds it."""
        if self._installed is None:
            self._installed = {}
            for entry in sys.path:
                if not isinstance(entry, str) or not entry:
                    continue
                site = os.path.realpath(entry)
                if os.path.isdir(site):
                    for d in self.dists(site).dists:
                        self._installed.setdefault(d.key, d)
        return self._installed.get(_norm_dist(dist_name))


def _metadata_version(name, site):
    """Version and name of the distribution that installed name into site.

    Only metadata in the package's own directory counts: another copy of
    the package earlier or later on sys.path (a PYTHONPATH checkout over a
    system install) has its own, unrelated version.
    """
    try:
        dist = _SiteDists(site).provider(name)
        if dist is not None:
            return dist.version(), dist.name()
    except _OverLimit:
        pass
    return None, None


def _typed_markers(location):
    """py.typed files inside a package directory, relative to its parent;
    only where every directory on the way is an import name. The walk
    enters no link, and each marker is read by the rule on links."""
    out = []
    parent = os.path.dirname(location)
    for dirpath, dirnames, filenames in os.walk(location):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and _module_name_ok(d))
        if "py.typed" in filenames:
            rel = os.path.relpath(os.path.join(dirpath, "py.typed"), parent).replace(os.sep, "/")
            try:
                text = _read_regular(parent, rel, 4096, "py.typed")
            except _OverLimit:
                continue
            if text is None:
                continue
            out.append({"path": rel, "text": text})
            if len(out) >= TYPED_LIMIT:
                break
    return out


def _site_package(scan, name, owner):
    """One name's answer to site_packages."""
    entry = {"name": name, "found": False}
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return entry
    locations = spec.submodule_search_locations
    if locations is not None:
        locations = list(locations)
        if not locations:
            return entry
        location = os.path.realpath(locations[0])
    elif spec.has_location and spec.origin and spec.origin.endswith(".py"):
        location = os.path.realpath(spec.origin)
    else:
        return entry
    site = os.path.dirname(location)
    entry["found"] = True
    entry["site"] = site
    entry["is_package"] = locations is not None
    in_site_packages = os.path.basename(site) in ("site-packages", "dist-packages")
    entry["third_party"] = in_site_packages
    try:
        dist = scan.dists(site).provider(name, owner)
    except _OverLimit as exc:
        entry["third_party"] = True
        entry["over_limit"] = exc.record
        return entry
    if dist is None:
        return entry
    entry["third_party"] = True
    try:
        _describe(scan, dist, entry, location)
    except _OverLimit as exc:
        for key in ("version", "dist_dir", "files", "typed", "requires"):
            entry.pop(key, None)
        entry["over_limit"] = exc.record
    return entry


def _describe(scan, dist, entry, location):
    """Fills entry with dist's version, metadata files, py.typed markers and
    requirements; raises _OverLimit."""
    entry["distribution"] = dist.name()
    entry["version"] = dist.version()
    if dist.is_dir() and _patterns()[1].match(dist.dirname):
        entry["dist_dir"] = dist.dirname
        files = {}
        for fname in DIST_FILES:
            text = dist.read(fname)
            if text is not None:
                files[fname] = text
        entry["files"] = files
    if entry["is_package"]:
        entry["typed"] = _typed_markers(location)
    requires = []
    dist_name = _patterns()[0]
    for spec_line in dist.requires():
        dname, needs_extra = _requirement(spec_line)
        if not dist_name.match(dname):
            continue
        req = {"spec": spec_line[:SPEC_LIMIT], "distribution": dname, "extra": needs_extra, "installed": False}
        if not needs_extra:
            found = scan.installed(dname)
            if found is not None:
                req["installed"] = True
                try:
                    req["top_level"] = found.tops()
                except _OverLimit as exc:
                    req["over_limit"] = exc.record
        requires.append(req)
    entry["requires"] = requires


def m_site_packages(params):
    """Describes top-level names for a site-packages view of this install.

    For each name: whether the import system finds it, whether it is a
    third-party package (in a site-packages or dist-packages directory, or
    installed by a distribution whose file list holds it), that
    distribution's metadata files, the distributions it requires (those
    needing an extra are marked) with the import names each installs, and
    its py.typed markers. owners, when given, names for each name the
    distribution expected to own it. A package whose metadata passes a
    bound is answered with over_limit and nothing else of its metadata;
    once the reply would pass its budget, the remaining names are answered
    deferred, to be asked again. Nothing is imported.
    """
    names = params.get("names")
    if not isinstance(names, list) or len(names) > SITE_NAMES_LIMIT:
        raise RequestError("ValueError", "names must be a list of at most %d names" % SITE_NAMES_LIMIT)
    owners = params.get("owners") or [None] * len(names)
    if not isinstance(owners, list) or len(owners) != len(names):
        raise RequestError("ValueError", "owners must be a list as long as names")
    scan = _SiteScan()
    out = []
    used = 0
    for name, owner in zip(names, owners):
        if not isinstance(name, str) or not name.isidentifier():
            raise RequestError("ValueError", "not a top-level name: %r" % (name,))
        if owner is not None and not isinstance(owner, str):
            raise RequestError("ValueError", "not a distribution name: %r" % (owner,))
        if used > SITE_REPLY_BUDGET:
            out.append({"name": name, "deferred": True})
            continue
        entry = _site_package(scan, name, owner)
        size = len(json.dumps(entry, ensure_ascii=True, default=repr))
        if size > SITE_PACKAGE_LIMIT:
            entry = {"name": name, "found": True, "third_party": True, "site": entry.get("site"),
                     "is_package": entry.get("is_package", False), "distribution": entry.get("distribution"),
                     "over_limit": {"what": "package", "count": size, "limit": SITE_PACKAGE_LIMIT}}
            size = len(json.dumps(entry, ensure_ascii=True, default=repr))
        if used + size > SITE_REPLY_BUDGET:
            used = SITE_REPLY_BUDGET + 1
            out.append({"name": name, "deferred": True})
            continue
        used += size + 2
        out.append(entry)
    return {"packages": out}


def _stdlib_scan():
    """The standard library's top-level names, from its directories, for
    Pythons before 3.10 (no sys.stdlib_module_names)."""
    import importlib.machinery
    import sysconfig
    suffixes = sorted(importlib.machinery.all_suffixes(), key=len, reverse=True)
    dirs = []
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib"):
        d = paths.get(key)
        if d and d not in dirs:
            dirs += [d, os.path.join(d, "lib-dynload")]
    names = set()
    for d in dirs:
        try:
            entries = os.listdir(d)
        except OSError:
            continue
        for e in entries[:DIST_SCAN_LIMIT]:
            if e in ("site-packages", "dist-packages", "__pycache__"):
                continue
            if os.path.isdir(os.path.join(d, e)):
                names.add(e)
                continue
            for s in suffixes:
                if e.endswith(s):
                    names.add(e[: -len(s)])
                    break
    return names


def _pth_site_dirs():
    """The directories whose .pth files this interpreter's site module
    reads at start-up: the site-packages directories, and the user's when
    it is enabled."""
    import site
    dirs = []
    try:
        dirs += list(site.getsitepackages())
    except AttributeError:
        pass
    if site.ENABLE_USER_SITE:
        try:
            dirs.append(site.getusersitepackages())
        except AttributeError:
            pass
    return dirs


def _pth_line_imports(line):
    """The top-level modules a .pth line that site executes imports: its
    import statements, and __import__ or import_module of a literal name."""
    import ast
    try:
        tree = ast.parse(line)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
        elif isinstance(node, ast.Call) and node.args:
            func, first = node.func, node.args[0]
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called in ("__import__", "import_module") and isinstance(first, ast.Constant) and isinstance(first.value, str):
                out.append(first.value)
    return [n.split(".")[0] for n in out]


def _startup_modules():
    """The top-level modules the .pth files of the site directories import
    when the interpreter starts: site executes each of their lines that
    starts with "import". Each file is read by the rule on links, within
    PTH_FILE_LIMIT; at most PTH_FILES_LIMIT files and STARTUP_NAMES_LIMIT
    names."""
    names, seen, read = [], set(), 0
    for d in _pth_site_dirs():
        real = os.path.realpath(d)
        if real in seen:
            continue
        seen.add(real)
        try:
            pth = sorted(n for n in os.listdir(real) if n.endswith(".pth"))
        except OSError:
            continue
        for name in pth:
            if read >= PTH_FILES_LIMIT:
                return names
            read += 1
            try:
                data, _ = plain_read(real, name, PTH_FILE_LIMIT)
            except OSError:
                continue
            # Python 3.13's site drops a byte order mark before the first
            # line ("utf-8-sig"), and then runs that line when it imports.
            for line in data[:PTH_FILE_LIMIT].decode("utf-8-sig", "replace").splitlines():
                if not line.startswith(("import ", "import\t")):
                    continue
                for n in _pth_line_imports(line):
                    if _module_name_ok(n) and n not in names:
                        if len(names) >= STARTUP_NAMES_LIMIT:
                            return names
                        names.append(n)
    return names


def m_stdlib_modules(params):
    """The top-level module names of this interpreter's standard library:
    sys.stdlib_module_names (3.10 and later), or else what its directories
    hold, with the built-in modules either way; and under "startup" the
    modules the .pth files of its site directories import at start-up."""
    names = set(sys.builtin_module_names)
    listed = getattr(sys, "stdlib_module_names", None)
    if listed is not None:
        names.update(listed)
        source = "stdlib_module_names"
    else:
        names.update(_stdlib_scan())
        source = "scan"
    return {"names": sorted(n for n in names if _module_name_ok(n))[:STDLIB_NAMES_LIMIT], "source": source,
            "startup": sorted(_startup_modules())}


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
    """The source files that define a dotted module, relative to site:
    those the rule on links would read."""
    base = module.replace(".", "/")
    out = []
    for rel in (base + "/__init__.py", base + "/__init__.pyi", base + ".py", base + ".pyi"):
        try:
            fd, _ = plain_open(site, rel)
        except OSError:
            continue
        os.close(fd)
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
                    data, _ = plain_read(site, rel, READ_MAX_FILE)
                except OSError:
                    continue
                text = data[:READ_MAX_FILE].decode("utf-8", "replace")
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
        # Read by the rule on links: no link below the site is followed,
        # in the package or out, and only a regular file is read.
        try:
            fd, st = plain_open(site, rel)
        except OSError as exc:
            skipped.append({"path": rel, "reason": "unreadable: %s" % exc})
            continue
        try:
            if st.st_size > READ_MAX_FILE:
                skipped.append({"path": rel, "reason": "too large"})
                continue
            if st.st_size > budget:
                skipped.append({"path": rel, "reason": "over the reply's budget"})
                continue
            data = os.read(fd, READ_MAX_FILE + 1)
            while len(data) <= READ_MAX_FILE:
                more = os.read(fd, READ_MAX_FILE + 1 - len(data))
                if not more:
                    break
                data += more
        except OSError as exc:
            skipped.append({"path": rel, "reason": "unreadable: %s" % exc})
            continue
        finally:
            os.close(fd)
        if len(data) > READ_MAX_FILE:
            skipped.append({"path": rel, "reason": "too large"})
            continue
        if len(data) > budget:
            skipped.append({"path": rel, "reason": "over the reply's budget"})
            continue
        budget -= len(data)
        files.append({"path": rel, "size": len(data), "data": base64.b64encode(data).decode("ascii")})
    return {"site": site, "files": files, "skipped": skipped}


# Text search: the files of one package whose text names one of a few
# words, so that a cross-reference query on a cold start reads only those
# instead of the whole package (torchlsp confirms each by parsing it).
SEARCH_MAX_WORDS = 64
SEARCH_MAX_WORD = 256
_SEARCH_IDENT = b"A-Za-z0-9_"


def m_search_files(params):
    """{"name", "words"} or {"name", "subsequence"} -> the package's source
    files (as list_files names them) whose text holds one of words as a
    whole word (an occurrence whose neighbours are not ASCII identifier
    characters), or a word (a run of ASCII identifier characters and bytes
    past ASCII) holding subsequence's characters in order, ASCII case
    folded: in strings and comments too, a superset of the files whose code
    names them or defines a name a workspace-symbol query matches. A file
    over READ_MAX_FILE is listed as a match: it is not read here, and
    torchlsp decides what to do with it. No file is imported."""
    import re
    name = _require_str(params, "name")
    words, subsequence = params.get("words"), params.get("subsequence")
    if (words is None) == (subsequence is None):
        raise RequestError("ValueError", "give words or subsequence")
    if words is not None:
        if not isinstance(words, list) or not words or len(words) > SEARCH_MAX_WORDS:
            raise RequestError("ValueError", "words must be a list of 1 to %d words" % SEARCH_MAX_WORDS)
        for w in words:
            if not isinstance(w, str) or not w or len(w) > SEARCH_MAX_WORD or "\0" in w:
                raise RequestError("ValueError", "each word must be a string of 1 to %d characters" % SEARCH_MAX_WORD)
        raw = [w.encode("utf-8") for w in words]
        alts = b"|".join(re.escape(w) for w in raw)
        pattern = re.compile(b"(?<![" + _SEARCH_IDENT + b"])(?:" + alts + b")(?![" + _SEARCH_IDENT + b"])")
    else:
        if not isinstance(subsequence, str) or not subsequence or len(subsequence) > SEARCH_MAX_WORD or "\0" in subsequence:
            raise RequestError("ValueError", "subsequence must be a string of 1 to %d characters" % SEARCH_MAX_WORD)
        chars = subsequence.encode("utf-8")
        # A word is the one isSymbolWordByte makes: letters, digits, "_"
        # and any byte past ASCII; re's case folding of bytes is ASCII's.
        within = b"[" + _SEARCH_IDENT + b"\x80-\xff]*?"
        pattern = re.compile(within.join(re.escape(chars[i:i + 1]) for i in range(len(chars))), re.IGNORECASE)
        raw = None
    site, member, location, is_package = _package_root(name)
    paths, scanned = [], 0
    for rel, path, dir_fd, base in source_files(site, member, is_package, with_dir=True):
        rel = rel.replace(os.sep, "/")
        scanned += 1
        if scanned > LIST_MAX_FILES:
            raise RequestError("ValueError", "%r has more than %d source files" % (name, LIST_MAX_FILES))
        try:
            data = plain_read_at(dir_fd, base, READ_MAX_FILE) if dir_fd is not None else plain_read(site, rel, READ_MAX_FILE)[0]
        except OSError:
            continue
        if len(data) > READ_MAX_FILE:
            paths.append(rel)
            continue
        # The cheapest test first: a file that holds none of the words at
        # all is not matched against the pattern.
        if raw is not None and not any(w in data for w in raw):
            continue
        if pattern.search(data):
            paths.append(rel)
    return {"site": site, "member": member, "paths": paths, "scanned": scanned}


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
    "stdlib_modules": (m_stdlib_modules, True),
    "list_files": (m_list_files, True),
    "read_files": (m_read_files, True),
    "search_files": (m_search_files, True),
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
