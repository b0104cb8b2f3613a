// Package hostiletest makes hostile targets for tests: an interpreter that
// runs torchlsp's programs (the helper, the mirror script) exactly as the
// bootstrap on /usr/bin/python3 does, except that one of them gets a patch
// of Python code put in before its last line, main(). The patch may
// replace any function of that program, main included: this is the fault
// injection, and the rest is the real program on a real interpreter.
package hostiletest

import (
	"os"
	"path/filepath"
	"testing"
)

// Runner is the interpreter: a length line, the source, then the
// program's own input on the same stdin, as the bootstrap reads them. The
// program named in HOSTILE_PROGRAM gets the file HOSTILE_PATCH inserted.
const Runner = `#!/usr/bin/python3
import os, sys
sys.dont_write_bytecode = True
n = int(sys.stdin.buffer.readline())
src = sys.stdin.buffer.read(n).decode("utf-8")
name = sys.argv[-1]
if name == os.environ.get("HOSTILE_PROGRAM"):
    with open(os.environ["HOSTILE_PATCH"]) as f:
        patch = f.read()
    head, sep, tail = src.rpartition("\nmain()")
    src = head + "\n" + patch + "\nmain()" + tail
exec(compile(src, name, "exec"), {"__name__": "__torchlsp__"})
`

// Prelude comes before every patch: a tar stream writer as the mirror
// script makes one (Stream, raw_entry), files of n zero bytes or of
// generated assignments that cost no memory (Zeros, Assignments), and the
// package's real files as the mirror script lists them (real_files).
const Prelude = `
import gzip as _gz, io as _io, json as _json, tarfile as _tar, time as _time

class Zeros(_io.RawIOBase):
    def __init__(self, n):
        self.n = n
    def readable(self):
        return True
    def readinto(self, b):
        k = min(len(b), self.n)
        b[:k] = bytes(k)
        self.n -= k
        return k

class Assignments(_io.RawIOBase):
    """n bytes of lines a0 = 0, a1 = 1, ..., made as they are read; packed
    puts 200 statements on a line, a0=0;a1=1;...; block puts them all in
    one block, under if True:"""
    def __init__(self, n, packed=False, block=False):
        self.n = n
        self.i = 0
        self.packed = packed
        self.indent = b"    " if block else b""
        self.pending = b"if True:\n" if block else b""
    def readable(self):
        return True
    def readinto(self, b):
        while len(self.pending) < len(b) and len(self.pending) < self.n:
            if self.packed:
                self.pending += b";".join(b"a%d=%d" % (j, j) for j in range(self.i, self.i + 200)) + b"\n"
                self.i += 200
                continue
            self.pending += b"".join(self.indent + b"a%d = %d\n" % (j, j) for j in range(self.i, self.i + 1000))
            self.i += 1000
        k = min(len(b), self.n, len(self.pending))
        b[:k] = self.pending[:k]
        self.pending = self.pending[k:]
        self.n -= k
        return k

def raw_entry(name, data):
    info = _tar.TarInfo(name)
    info.size = len(data)
    return info.tobuf(_tar.PAX_FORMAT) + data + b"\0" * ((512 - len(data) % 512) % 512)

class Stream:
    def __init__(self):
        self.params = _json.loads(sys.stdin.buffer.readline().decode("utf-8"))
        self.out = sys.stdout.buffer
        self.z = None
        if self.params.get("compress") == "gzip":
            self.z = _gz.GzipFile(fileobj=self.out, mode="wb", compresslevel=1, mtime=0)
        self.tar = _tar.open(fileobj=self.z or self.out, mode="w|", format=_tar.PAX_FORMAT, bufsize=1 << 16)
    def meta(self, name, value):
        data = _json.dumps(value).encode()
        info = _tar.TarInfo(".torchlsp/" + name)
        info.size = len(data)
        self.tar.addfile(info, _io.BytesIO(data))
    def file(self, name, data=None, zeros=0, assignments=0, packed=0, block=0):
        info = _tar.TarInfo(name)
        if data is not None:
            info.size, src = len(data), _io.BytesIO(data)
        elif assignments:
            info.size, src = assignments, Assignments(assignments)
        elif packed:
            info.size, src = packed, Assignments(packed, packed=True)
        elif block:
            info.size, src = block, Assignments(block, block=True)
        else:
            info.size, src = zeros, Zeros(zeros)
        self.tar.addfile(info, src)
    def flush(self):
        st = self.tar.fileobj
        st.fileobj.write(st.buf)
        st.buf = b""
        if self.z is not None:
            self.z.flush()
        self.out.flush()
    def close(self):
        self.tar.close()
        if self.z is not None:
            self.z.close()
        self.out.flush()

def real_files(s):
    """The package's files, as the real mirror script lists them."""
    p = s.params
    out = []
    for name, path in source_files(p["site"], p["member"], p.get("is_package", True)):
        with open(path, "rb") as f:
            out.append((name, f.read()))
    return out
`

// Install writes the interpreter and Prelude+patch into dir, and returns
// the interpreter's path and the environment that makes it patch program
// (torchlsp_helper or torchlsp_mirror): HOSTILE_PROGRAM, HOSTILE_PATCH and
// HOSTILE_DIR (dir, for patches that keep state).
func Install(t testing.TB, dir, program, patch string) (python string, env map[string]string) {
	t.Helper()
	python = filepath.Join(dir, "python3")
	if err := os.WriteFile(python, []byte(Runner), 0o755); err != nil {
		t.Fatal(err)
	}
	patchFile := filepath.Join(dir, "patch.py")
	if err := os.WriteFile(patchFile, []byte(Prelude+patch), 0o644); err != nil {
		t.Fatal(err)
	}
	return python, map[string]string{"HOSTILE_PROGRAM": program, "HOSTILE_PATCH": patchFile, "HOSTILE_DIR": dir}
}
