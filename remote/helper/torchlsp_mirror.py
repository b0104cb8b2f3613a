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


def source_files(site, member, is_package):
    if not is_package:
        yield member, os.path.join(site, member)
        return
    root = os.path.join(site, member)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for filename in sorted(filenames):
            if filename.endswith(SOURCE_SUFFIXES):
                path = os.path.join(dirpath, filename)
                if os.path.isfile(path):
                    yield os.path.relpath(path, site).replace(os.sep, "/"), path


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
    max_file = params.get("max_file_bytes") or 0
    listing = []
    total = 0
    skipped = []
    for name, path in source_files(site, member, is_package):
        try:
            size = os.stat(path).st_size
        except OSError:
            continue
        if max_file and size > max_file:
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
            with open(path, "rb") as f:
                # A file that grew since the walk is cut at the limit
                # plus one byte, so it is still refused, not read whole.
                data = f.read(max_file + 1) if max_file else f.read()
            if max_file and len(data) > max_file:
                skipped.append({"name": name, "size": len(data), "error": "grew past the limit while read"})
                continue
            st = os.stat(path)
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
