package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// These tests run the torchlsp binary against hostile input: a cloned
// repository's torchlsp.toml, and targets whose interpreter sends hostile
// archives and answers (hostiletest.Runner patches the real helper and mirror
// script). Each says what the user sees, and logs the binary's peak RSS
// for docs/RELIABILITY.md.

// A workspace torchlsp.toml that is a link to /dev/zero or to the server's
// own stdin, or a named pipe, used to kill the server of out-of-memory or
// hang initialize. Now initialize is answered at once, the editor is told
// why the file is ignored, and the editor's own settings still work.
func TestHostileWorkspaceConfig(t *testing.T) {
	needPython(t)
	bin := buildServer(t)
	site := filepath.Join(repoRoot(t), "testdata", "site")
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, path string)
		want  string
	}{
		{"link to /dev/zero", func(t *testing.T, p string) { mustSymlink(t, "/dev/zero", p) }, "is a symbolic link"},
		{"link to /dev/stdin", func(t *testing.T, p string) { mustSymlink(t, "/dev/stdin", p) }, "is a symbolic link"},
		{"named pipe", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "is a named pipe, not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, file, text := hostileWorkspace(t)
			tt.plant(t, filepath.Join(ws, "torchlsp.toml"))
			env, _ := xdgEnv(t)

			settings := targetSettings(t, debianPython, map[string]string{"PYTHONPATH": site})
			start := time.Now()
			p := serveProcess(t, bin, ws, settings, env)
			ctx := testContext(t, 60*time.Second)
			if _, err := p.AwaitMessage(ctx, false, tt.want); err != nil {
				t.Fatalf("no message saying %q: %v", tt.want, err)
			}
			t.Logf("serve: initialize and the message after %v", time.Since(start).Round(time.Millisecond))
			uri := lsptest.FileURI(file)
			if err := p.DidOpen(uri, "python", text); err != nil {
				t.Fatal(err)
			}
			line, col := at(t, text, "nn.Linear", 0, 3)
			if h, err := p.Hover(ctx, uri, line, col); err != nil || h == nil || !strings.Contains(h.Contents.Value, "class Linear") {
				t.Errorf("hover with the editor's settings: %+v, %v", h, err)
			}
			rss := peakRSSMB(t, p.Cmd.Process.Pid)
			t.Logf("serve: peak RSS %.1f MB", rss)
			if rss > 200 {
				t.Errorf("serve peaked at %.1f MB", rss)
			}

			// The command line reads the same file for the same folder.
			cenv := append(env, "PYTHONPATH="+site)
			res := runCLI(t, bin, cenv, 2*time.Minute, "hover", "--python", debianPython, fmt.Sprintf("%s:%d:%d", file, line+1, col+1))
			t.Logf("hover CLI: exit %d in %v, peak RSS %.1f MB", res.code, res.took.Round(time.Millisecond), res.maxRSSMB)
			if res.code != 0 || !strings.Contains(res.stdout, "class Linear") || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("CLI hover: exit %d\nstdout: %s\nstderr: %s", res.code, tail(res.stdout, 500), tail(res.stderr, 1000))
			}
			if res.maxRSSMB > 200 {
				t.Errorf("the CLI peaked at %.1f MB", res.maxRSSMB)
			}
		})
	}
}

func mustSymlink(t *testing.T, dst, p string) {
	t.Helper()
	if err := os.Symlink(dst, p); err != nil {
		t.Fatal(err)
	}
}

// hostileMirror is a mirror script that sends the package's real files
// and then count files of size bytes of kind: "zeros", "assignments"
// (a0 = 0 lines), "packed" (200 statements a line) or "block" (a0 = 0
// lines in one if block), ignoring the per-file limit torchlsp asks for.
func hostileMirror(count int, size int64, kind string) string {
	return fmt.Sprintf(`
def main():
    s = Stream()
    files = real_files(s)
    count, size = %d, %d
    total = sum(len(d) for _, d in files) + count * size
    s.meta("header.json", {"files": len(files) + count, "bytes": total})
    for name, data in files:
        s.file(name, data)
    for i in range(count):
        s.file("torch/_huge%%d.py" %% i, %s=size)
    s.meta("summary.json", {"files": len(files) + count, "bytes": total, "skipped": []})
    s.close()
`, count, size, kind)
}

// One large mirrored file used to exhaust memory: four 256 MB files (1.6 MB
// gzipped) left 1.1 GB in the cache and crashed the indexer, and a 10 MB
// file of assignments took 2.6 GB to index. Now files over the per-file
// limit are skipped, the rest of the package is mirrored and answers,
// and a restart reuses the mirror.
func TestHostileMirrorFiles(t *testing.T) {
	needPython(t)
	bin := buildServer(t)
	_, file, text := hostileWorkspace(t)
	line, col := at(t, text, "nn.Linear", 0, 3)
	pos := fmt.Sprintf("%s:%d:%d", file, line+1, col+1)
	for _, tt := range []struct {
		name  string
		count int
		size  int64
		kind  string
	}{
		{"four 256 MiB files of zeros", 4, 256 << 20, "zeros"},
		{"a 10 MB file of assignments", 1, 10 << 20, "assignments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHostileTarget(t, "torchlsp_mirror", hostileMirror(tt.count, tt.size, tt.kind))
			env, cache := xdgEnv(t)
			for k, v := range h.env {
				env = append(env, k+"="+v)
			}
			for run := 1; run <= 2; run++ {
				res := runCLI(t, bin, env, 4*time.Minute, "definition", "--python", h.python, pos)
				t.Logf("run %d: exit %d in %v, peak RSS %.1f MB, cache %d bytes", run, res.code, res.took.Round(time.Millisecond), res.maxRSSMB, treeBytes(cache))
				if res.code != 0 || !strings.Contains(res.stdout, "torch/nn/modules/linear.py") {
					t.Fatalf("definition: exit %d\nstdout: %s\nstderr: %s", res.code, tail(res.stdout, 500), tail(res.stderr, 2000))
				}
				if res.maxRSSMB > 300 {
					t.Errorf("run %d peaked at %.1f MB", run, res.maxRSSMB)
				}
				if n := treeBytes(cache); n > 4<<20 {
					t.Errorf("the cache holds %d bytes", n)
				}
			}
		})
	}
}

// A file of assignments just under the per-file limit is mirrored, and
// its parse stops at the parse's memory limit (syntax.MemoryLimit): this
// measures what the index costs for the worst file the limits let through.
// The server indexes the whole package in the background after the first
// answer; the peak is read once its RSS has stopped growing.
func TestHostileMirrorFileUnderLimit(t *testing.T) {
	needPython(t)
	bin := buildServer(t)
	for _, tt := range []struct {
		kind string
		log  string // what the log says of the file
	}{
		// Top-level statements parse a chunk at a time, each far under
		// the parse's memory limit: the file is indexed up to its names
		// limit.
		{"assignments", "hold more names than the index keeps"},
		{"packed", "hold more names than the index keeps"},
		// One block cannot be parsed in pieces: its parse stops at its
		// memory limit, and the file is not indexed.
		{"block", "not indexed: their parse stopped"},
	} {
		kind := tt.kind
		t.Run(kind, func(t *testing.T) {
			h := newHostileTarget(t, "torchlsp_mirror", hostileMirror(1, (4<<20)-4096, kind))
			p, uri, text, _ := serveHostileWorkspace(t, bin, h.settings(t, nil))
			ctx := testContext(t, 3*time.Minute)
			line, col := at(t, text, "nn.Linear", 0, 3)
			if hov, err := p.Hover(ctx, uri, line, col); err != nil || hov == nil {
				t.Fatalf("hover: %+v, %v", hov, err)
			}
			last, stable := 0.0, time.Now()
			// A measurement, not a wait: the peak is sampled until it has
			// stopped growing for 8 s.
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && time.Since(stable) < 8*time.Second; time.Sleep(200 * time.Millisecond) {
				if rss := peakRSSMB(t, p.Cmd.Process.Pid); rss > last+1 {
					last, stable = rss, time.Now()
				}
			}
			t.Logf("serve with a %d-byte file of %s indexed: peak RSS %.1f MB", (4<<20)-4096, kind, last)
			// Before the parse's memory limit, the parse of that one file
			// was the peak (about 290 MB); now 83–88 MB.
			if last > 250 {
				t.Errorf("serve peaked at %.1f MB", last)
			}
			if _, err := p.Client.Await(ctx, func(e lsptest.Event) bool {
				var m lsptest.Message
				return e.Method == "window/logMessage" && e.Decode(&m) == nil && strings.Contains(m.Message, tt.log)
			}); err != nil {
				t.Errorf("no log message says %q: %v", tt.log, err)
				for _, e := range p.Client.Events() {
					var m lsptest.Message
					if (e.Method == "window/logMessage" || e.Method == "window/showMessage") && e.Decode(&m) == nil {
						t.Logf("the server said: %s", m.Message)
					}
				}
			}
		})
	}
}

// A hostile target points definitions outside the mirror: a relative
// package site (x/../..) and helper answers naming /etc/passwd,
// /dev/zero and relative paths. No location or link may leave the cache,
// and the server stays up.
func TestHostileTargetPaths(t *testing.T) {
	needPython(t)
	bin := buildServer(t)
	for _, tt := range []struct {
		name  string
		patch string
		msg   string // a showMessage that must come; empty for none
	}{
		{"relative site", `
_real_package_info = m_package_info
def m_package_info(params):
    r = _real_package_info(params)
    r["site"] = "x/../../../../../../../../.."
    r["location"] = r["site"] + "/" + r["member"]
    return r
METHODS["package_info"] = (m_package_info, True)
`, "not an absolute clean path"},
		{"inspect answers outside the package", `
_real_inspect = m_inspect
def m_inspect(params):
    r = _real_inspect(params)
    q = params.get("qualname")
    if q == "torch.add":
        r["file"], r["line"] = "/etc/passwd", 1
    elif q == "torch.ones":
        r["file"], r["line"] = "../../../../../../../../etc/passwd", 1
    elif q == "torch._C._is_key_in_tls":
        r["file"], r["line"] = "/dev/zero", 1
    return r
METHODS["inspect"] = (m_inspect, True)
`, ""},
		{"inspect answers inside the site but through ..", `
_real_inspect = m_inspect
def m_inspect(params):
    r = _real_inspect(params)
    site = os.path.dirname(os.path.dirname(os.path.realpath(__import__("torch").__file__)))
    r["file"], r["line"] = site + "/torch/../../../../../../../../dev/zero", 1
    return r
METHODS["inspect"] = (m_inspect, True)
`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHostileTarget(t, "torchlsp_helper", tt.patch)
			p, uri, text, cache := serveHostileWorkspace(t, bin, h.settings(t, nil))
			ctx := testContext(t, 2*time.Minute)
			if tt.msg != "" {
				if _, err := p.AwaitMessage(ctx, false, tt.msg); err != nil {
					t.Fatalf("no message saying %q: %v", tt.msg, err)
				}
			}
			for _, needle := range []string{"torch.add(", "torch.ones(", "_is_key_in_tls(", "nn.Linear("} {
				line, col := at(t, text, needle, 0, len(needle)-3)
				locs, err := p.Definition(ctx, uri, line, col)
				t.Logf("definition at %s: %v, %v", needle, locs, err)
				for _, l := range locs {
					path := strings.TrimPrefix(l.URI, "file://")
					if !strings.HasPrefix(path, cache+"/") {
						t.Errorf("definition at %s points outside the mirror: %s", needle, l.URI)
					}
				}
				hov, err := p.Hover(ctx, uri, line, col)
				if err == nil && hov != nil {
					for _, bad := range []string{"/etc/passwd", "/dev/zero", "../"} {
						if strings.Contains(hov.Contents.Value, bad) {
							t.Errorf("hover at %s names %s:\n%s", needle, bad, hov.Contents.Value)
						}
					}
				}
			}
			// Still up and answering.
			line, col := at(t, text, "nn.Linear", 0, 3)
			if _, err := p.Hover(ctx, uri, line, col); err != nil && !strings.Contains(tt.name, "relative") {
				t.Errorf("hover after the hostile answers: %v", err)
			}
			t.Logf("peak RSS %.1f MB", peakRSSMB(t, p.Cmd.Process.Pid))
		})
	}
}

// Oversized helper answers used to give 27 MB hover replies and make the
// lookup cache keep about 95 MB per name. Now each answer is cut to the
// helper limits, hovers stay small, and 40 names cost little memory.
func TestHostileHelperAnswers(t *testing.T) {
	needPython(t)
	bin := buildServer(t)
	h := newHostileTarget(t, "torchlsp_helper", `
_real_inspect = m_inspect
def m_inspect(params):
    q = params.get("qualname")
    if q.startswith("torch.zz"):
        r = _real_inspect({"qualname": "torch.is_grad_enabled"})
        big = "d" * (1900 << 10)
        r.update(qualname=q, doc=None, doc_summary=big, signature="(" + "a" * (1900 << 10) + ")", file=None, line=None,
                 has_source=False, stub_candidates=[])
        return r
    return _real_inspect(params)
METHODS["inspect"] = (m_inspect, True)
`)
	ws := t.TempDir()
	var b strings.Builder
	b.WriteString("import torch\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "torch.zz%d()\n", i)
	}
	text := b.String()
	file := filepath.Join(ws, "many.py")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env, _ := xdgEnv(t)
	p := serveProcess(t, bin, ws, h.settings(t, nil), env)
	ctx := testContext(t, 3*time.Minute)
	uri := lsptest.FileURI(file)
	if err := p.DidOpen(uri, "python", text); err != nil {
		t.Fatal(err)
	}
	largest := 0
	for i := 0; i < 40; i++ {
		line, col := at(t, text, "zz"+strconv.Itoa(i)+"(", 0, 1)
		hov, err := p.Hover(ctx, uri, line, col)
		if err != nil || hov == nil {
			t.Fatalf("hover %d: %+v, %v", i, hov, err)
		}
		largest = max(largest, len(hov.Contents.Value))
		if !strings.Contains(hov.Contents.Value, "…") {
			t.Errorf("hover %d is not marked as cut", i)
		}
	}
	rss := peakRSSMB(t, p.Cmd.Process.Pid)
	t.Logf("40 hovers with 3.8 MB answers: largest reply %d bytes, peak RSS %.1f MB", largest, rss)
	if largest > 64<<10 {
		t.Errorf("a hover of %d bytes", largest)
	}
	if rss > 250 {
		t.Errorf("serve peaked at %.1f MB", rss)
	}
}

// A mirror that stalls after its header used to hang hovers for good. Now
// it fails after the stall timeout (60 s) with a message, the hover is
// answered with that error, and the next hover mirrors again and is
// answered. Slow by nature: it waits out the real timeout.
func TestMirrorStallThenRetry(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 60 s stall timeout")
	}
	needPython(t)
	t.Parallel()
	bin := buildServer(t)
	h := newHostileTarget(t, "torchlsp_mirror", `
_real_main = main
def main():
    flag = os.path.join(os.environ["HOSTILE_DIR"], "stalled-once")
    if os.path.exists(flag):
        return _real_main()
    open(flag, "w").close()
    s = Stream()
    s.meta("header.json", {"files": 1, "bytes": 1})
    s.flush()
    _time.sleep(600)
`)
	p, uri, text, _ := serveHostileWorkspace(t, bin, h.settings(t, nil))
	ctx := testContext(t, 4*time.Minute)
	line, col := at(t, text, "nn.Linear", 0, 3)
	start := time.Now()
	// This hover waits for the mirror; it must be answered once the stall
	// is found, not hang.
	pending, err := p.StartHover(uri, line, col)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AwaitMessage(ctx, false, "the stream stalled: no data for 1m0s after the header"); err != nil {
		t.Fatalf("no stall message: %v", err)
	}
	t.Logf("stall reported after %v", time.Since(start).Round(time.Millisecond))
	waitCtx := testContext(t, 10*time.Second)
	resp, err := pending.Wait(waitCtx)
	if err != nil {
		t.Fatalf("the hover sent during the stall was not answered: %v", err)
	}
	t.Logf("the hover sent during the stall: error %v, result %s", resp.Error, resp.Result)
	// It is answered either from the on-demand tree (the files on the
	// name's import path, read through the helper while the bulk mirror
	// stalls) or with the stall; never left hanging.
	if resp.Error != nil && !strings.Contains(resp.Error.Message, "stalled") {
		t.Errorf("the hover sent during the stall failed without naming the stall: %+v", resp.Error)
	}
	if resp.Error == nil && !strings.Contains(string(resp.Result), "class Linear") {
		t.Errorf("the hover sent during the stall = %s, want class Linear or the stall", resp.Result)
	}
	var hov *lsptest.Hover
	for attempt := 0; attempt < 3; attempt++ {
		if hov, err = p.Hover(ctx, uri, line, col); err == nil && hov != nil {
			break
		}
		t.Logf("hover %d: %v", attempt, err)
	}
	if hov == nil || !strings.Contains(hov.Contents.Value, "class Linear") {
		t.Fatalf("no hover after the stall: %+v, %v", hov, err)
	}
	t.Logf("answered %v after the start", time.Since(start).Round(time.Millisecond))
}

// A helper stopped with SIGSTOP used to fail every helper-answered hover
// after 60 s until it resumed. Now the watchdog kills it within about
// 15 s and the same hover is answered by a new helper.
func TestStoppedHelperIsReplaced(t *testing.T) {
	needPython(t)
	t.Parallel()
	bin := buildServer(t)
	mark := marker(t)
	site := filepath.Join(repoRoot(t), "testdata", "site")
	p, uri, text, _ := serveHostileWorkspace(t, bin, targetSettings(t, debianPython, map[string]string{"PYTHONPATH": site, "FAULT_MARK": mark}))
	ctx := testContext(t, 3*time.Minute)
	line, col := at(t, text, "torch.add(", 0, 6)
	if h, err := p.Hover(ctx, uri, line, col); err != nil || h == nil {
		t.Fatalf("first hover: %v %v", h, err)
	}
	pid := awaitProcess(t, mark, "torchlsp_helper", 10*time.Second)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	line, col = at(t, text, "torch.ones(", 0, 6)
	start := time.Now()
	h, err := p.Hover(ctx, uri, line, col)
	took := time.Since(start)
	if err != nil || h == nil || !strings.Contains(h.Contents.Value, "ones") {
		t.Fatalf("hover on the stopped helper after %v: %+v, %v", took, h, err)
	}
	t.Logf("answered by a new helper after %v", took.Round(time.Millisecond))
	if took > 40*time.Second {
		t.Errorf("took %v", took)
	}
	if got := awaitProcess(t, mark, "torchlsp_helper", 10*time.Second); got == pid {
		t.Error("the stopped helper is still the one in use")
	}
}
