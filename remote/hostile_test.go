package remote

import (
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// hostileRunner is the interpreter of a hostile target: it runs torchlsp's
// programs exactly as the bootstrap on /usr/bin/python3 does (a length
// line, the source, then the program's own input on the same stdin), but
// the program named in HOSTILE_PROGRAM gets the Python code in the file
// HOSTILE_PATCH inserted before its last line, `main()`: the patch may
// replace any function of the helper or the mirror script, main included.
// This is the fault injection: the rest is the real program on a real
// interpreter.
const hostileRunner = `#!/usr/bin/python3
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

// hostilePrelude is shared by the patches: a tar stream writer as the
// mirror script makes one, and a file object of n zero bytes that costs
// no memory.
const hostilePrelude = `
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
    def file(self, name, data=None, zeros=0):
        info = _tar.TarInfo(name)
        info.size = len(data) if data is not None else zeros
        self.tar.addfile(info, _io.BytesIO(data) if data is not None else Zeros(zeros))
    def flush(self):
        # tarfile's stream mode buffers 64 KiB of its own.
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
`

// hostileSpec returns a local target whose interpreter patches program
// (torchlsp_helper or torchlsp_mirror) with patch; the other program runs
// unchanged. The fixture site is on its path.
func hostileSpec(t testing.TB, program, patch string) Spec {
	t.Helper()
	spec := fixtureSpec(t)
	dir := t.TempDir()
	runner := filepath.Join(dir, "python3")
	if err := os.WriteFile(runner, []byte(hostileRunner), 0o755); err != nil {
		t.Fatal(err)
	}
	patchFile := filepath.Join(dir, "patch.py")
	if err := os.WriteFile(patchFile, []byte(hostilePrelude+patch), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.Python = runner
	spec.Env = map[string]string{"PYTHONPATH": spec.Env["PYTHONPATH"], "HOSTILE_PROGRAM": program, "HOSTILE_PATCH": patchFile}
	return spec
}

// heapPeak samples the Go heap while f runs and returns the largest
// in-use size seen, less what was in use before.
func heapPeak(f func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
				peak.Store(ms.HeapInuse - base)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}

// dirBytes is the size of the regular files under dir.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}
