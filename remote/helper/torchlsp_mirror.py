# torchlsp mirror script.
#
# Sent over stdin like the helper. After the source, stdin carries one line
# of JSON parameters: {"site", "member", "is_package", "compress",
# "max_file_bytes"}. It writes to stdout a tar stream (gzip level 1 when
# compress is "gzip") holding:
#   .torchlsp/header.json   {"files", "bytes"} as counted before sending
#   <member>/...            the .py and .pyi files, as regular files
#   .torchlsp/summary.json  {"files", "bytes", "skipped"} as actually sent
# A stream without the summary entry is incomplete. Files larger than
# max_file_bytes are not sent: torchlsp would not keep them. They, and
# files that cannot be read, are listed in "skipped" as
# {"name", "size", "error"}; the header counts only the files it sends.
# Which files it reads, and how, is the rule on links below, shared with
# the helper: no link is followed, only regular files are sent.
#
# It must run on Python 3.9 and later, with only the standard library:
# CI runs it on Debian 11's Python 3.9 behind the Docker hop (test/hops).

import gzip
import io
import json
import os
import sys
import tarfile
import time

SOURCE_SUFFIXES = (".py", ".pyi")
# The skip list is kept short: torchlsp reads at most 1 MiB of summary.
MAX_SKIPPED = 1000
DEFAULT_MAX_FILE = 4 << 20


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


def add_json(tar, name, value):
    data = json.dumps(value).encode("utf-8")
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def main():
    params = json.loads(sys.stdin.buffer.readline().decode("utf-8"))
    site = params["site"]
    member = params["member"]
    is_package = bool(params.get("is_package", True))
    # The per-file bound; torchlsp always states it (its default is 4 MiB).
    max_file = int(params.get("max_file_bytes") or 0) or DEFAULT_MAX_FILE
    listing = []
    total = 0
    skipped = []
    for name, path in source_files(site, member, is_package):
        try:
            size = os.lstat(path).st_size
        except OSError:
            continue
        if size > max_file:
            skipped.append({"name": name, "size": size, "error": "too large: %d bytes" % size})
            continue
        listing.append((name, path))
        total += size
    out = sys.stdout.buffer
    zipped = None
    if params.get("compress") == "gzip":
        # Level 1: the link, not the CPU, is what a mirror waits for.
        zipped = gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1, mtime=0)
    tar = tarfile.open(fileobj=zipped or out, mode="w|", format=tarfile.PAX_FORMAT, bufsize=1 << 16)
    add_json(tar, ".torchlsp/header.json", {"files": len(listing), "bytes": total})
    sent_files = 0
    sent_bytes = 0
    for name, path in listing:
        try:
            # A file that grew since the walk is cut at the limit plus
            # one byte, so it is still refused, not read whole; one that
            # became a link or a FIFO since is refused by the rule.
            data, st = plain_read(site, name, max_file)
            if len(data) > max_file:
                skipped.append({"name": name, "size": len(data), "error": "grew past the limit while read"})
                continue
        except OSError as exc:
            skipped.append({"name": name, "error": str(exc)})
            continue
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mtime = int(st.st_mtime)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
        sent_files += 1
        sent_bytes += len(data)
    summary = {"files": sent_files, "bytes": sent_bytes, "skipped": skipped[:MAX_SKIPPED]}
    if len(skipped) > MAX_SKIPPED:
        summary["skipped_more"] = len(skipped) - MAX_SKIPPED
    add_json(tar, ".torchlsp/summary.json", summary)
    tar.close()
    if zipped is not None:
        zipped.close()
    out.flush()


main()
