package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// hostileRunner is the interpreter of a hostile target: it runs
// torchlsp's programs as the bootstrap on /usr/bin/python3 does, but the
// program named in HOSTILE_PROGRAM gets the Python code of the file
// HOSTILE_PATCH inserted before its last line, `main()`, so the patch can
// replace any function of the helper or the mirror script. The rest is
// the real program on the real interpreter.
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

// hostilePrelude gives mirror patches a tar stream writer and a file of n
// zero bytes that costs no memory.
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

class Assignments(_io.RawIOBase):
    """n bytes of lines a0 = 0, a1 = 1, ..., made as they are read; packed
    puts 200 statements on a line, a0=0;a1=1;..."""
    def __init__(self, n, packed=False):
        self.n = n
        self.i = 0
        self.packed = packed
        self.pending = b""
    def readable(self):
        return True
    def readinto(self, b):
        while len(self.pending) < len(b) and len(self.pending) < self.n:
            if self.packed:
                self.pending += b";".join(b"a%d=%d" % (j, j) for j in range(self.i, self.i + 200)) + b"\n"
                self.i += 200
                continue
            self.pending += b"".join(b"a%d = %d\n" % (j, j) for j in range(self.i, self.i + 1000))
            self.i += 1000
        k = min(len(b), self.n, len(self.pending))
        b[:k] = self.pending[:k]
        self.pending = self.pending[k:]
        self.n -= k
        return k

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
    def file(self, name, data=None, zeros=0, assignments=0, packed=0):
        info = _tar.TarInfo(name)
        if data is not None:
            info.size, src = len(data), _io.BytesIO(data)
        elif assignments:
            info.size, src = assignments, Assignments(assignments)
        elif packed:
            info.size, src = packed, Assignments(packed, packed=True)
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

// hostileTarget is a hostile interpreter and the environment that selects
// its patch.
type hostileTarget struct {
	python string
	env    map[string]string // for the target's env (or the CLI's process)
}

func newHostileTarget(t testing.TB, program, patch string) hostileTarget {
	t.Helper()
	needPython(t)
	dir := t.TempDir()
	runner := filepath.Join(dir, "python3")
	if err := os.WriteFile(runner, []byte(hostileRunner), 0o755); err != nil {
		t.Fatal(err)
	}
	patchFile := filepath.Join(dir, "patch.py")
	if err := os.WriteFile(patchFile, []byte(hostilePrelude+patch), 0o644); err != nil {
		t.Fatal(err)
	}
	return hostileTarget{python: runner, env: map[string]string{
		"PYTHONPATH":      filepath.Join(repoRoot(t), "testdata", "site"),
		"HOSTILE_PROGRAM": program,
		"HOSTILE_PATCH":   patchFile,
		"HOSTILE_DIR":     dir,
	}}
}

// settings are editor settings whose default target is the hostile one.
func (h hostileTarget) settings(t testing.TB, extra map[string]string) json.RawMessage {
	env := map[string]string{}
	for k, v := range h.env {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	return targetSettings(t, h.python, env)
}

// xdgEnv points the binary's config, cache and state at fresh directories
// and returns them with the environment.
func xdgEnv(t testing.TB) ([]string, string) {
	tmp := t.TempDir()
	return append(os.Environ(), "XDG_CONFIG_HOME="+tmp+"/config", "XDG_CACHE_HOME="+tmp+"/cache", "XDG_STATE_HOME="+tmp+"/state"), tmp + "/cache"
}

// cliResult is one run of the torchlsp command line.
type cliResult struct {
	stdout, stderr string
	code           int
	maxRSSMB       float64 // peak RSS of the binary (and of its largest reaped child)
	took           time.Duration
}

// runCLI runs the binary with args and extra environment, bounded.
func runCLI(t testing.TB, bin string, env []string, within time.Duration, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := cliResult{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start), code: -1}
	if ctx.Err() != nil {
		t.Fatalf("torchlsp %s still running after %v\nstderr: %s", strings.Join(args, " "), within, tail(res.stderr, 2000))
	}
	if cmd.ProcessState != nil {
		res.code = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.maxRSSMB = float64(ru.Maxrss) / 1024
		}
	} else if err != nil {
		t.Fatalf("torchlsp %s: %v", strings.Join(args, " "), err)
	}
	return res
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// peakRSSMB reads a live process's peak RSS (VmHWM) from /proc.
func peakRSSMB(t testing.TB, pid int) float64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc status: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// serveProcess starts `torchlsp serve --stdio` with a fake editor, in
// workspace ws, and completes the handshake.
func serveProcess(t testing.TB, bin, ws string, settings json.RawMessage, env []string) *lsptest.Process {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--stdio")
	cmd.Env = env
	cmd.Dir = ws
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p, err := lsptest.StartProcess(cmd, lsptest.Options{RootDir: ws, InitializationOptions: settings, Settings: settings, Configuration: true, WorkDoneProgress: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		done := make(chan struct{})
		go func() { _, _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	ctx := testContext(t, 30*time.Second)
	if _, err := p.Handshake(ctx); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return p
}

// treeBytes is the size of the regular files under dir.
func treeBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// testContext is a context that ends after d or with the test.
func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// hostileWorkspace is a workspace holding the e2e training script, for
// the tests that start the binary themselves.
func hostileWorkspace(t testing.TB) (dir, file, text string) {
	t.Helper()
	files, text := workspace(t)
	dir = t.TempDir()
	file = filepath.Join(dir, "train.py")
	if err := os.WriteFile(file, []byte(files["train.py"]), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file, text
}

// at is the LSP position of the n-th needle in text, off bytes into it.
func at(t testing.TB, text, needle string, n, off int) (uint32, uint32) {
	t.Helper()
	line, col, err := lsptest.Find(text, needle, n, off)
	if err != nil {
		t.Fatal(err)
	}
	return line, col
}
