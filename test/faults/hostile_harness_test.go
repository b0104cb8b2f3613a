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
	"github.com/torchlsp/torchlsp/remote/hostiletest"
)

// hostileTarget is a hostile interpreter and the environment that selects
// its patch.
type hostileTarget struct {
	python string
	env    map[string]string // for the target's env (or the CLI's process)
}

func newHostileTarget(t testing.TB, program, patch string) hostileTarget {
	t.Helper()
	needPython(t)
	python, env := hostiletest.Install(t, t.TempDir(), program, patch)
	env["PYTHONPATH"] = filepath.Join(repoRoot(t), "testdata", "site")
	return hostileTarget{python: python, env: env}
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

// serveHostileWorkspace starts serve with settings on a fresh
// hostileWorkspace and fresh XDG directories, and opens the workspace's
// file; it returns the process, the file's URI and text, and the cache
// directory.
func serveHostileWorkspace(t testing.TB, bin string, settings json.RawMessage) (p *lsptest.Process, uri, text, cache string) {
	t.Helper()
	ws, file, text := hostileWorkspace(t)
	env, cache := xdgEnv(t)
	p = serveProcess(t, bin, ws, settings, env)
	uri = lsptest.FileURI(file)
	if err := p.DidOpen(uri, "python", text); err != nil {
		t.Fatal(err)
	}
	return p, uri, text, cache
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
	return runCLIIn(t, bin, "", env, within, args...)
}

// runCLIIn is runCLI in the working directory dir ("" for the test's).
func runCLIIn(t testing.TB, bin, dir string, env []string, within time.Duration, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
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
	// Announced as the packaged editors do: the site is built in the
	// background only for a client that hears of it.
	p, err := lsptest.StartProcess(cmd, lsptest.Options{RootDir: ws, InitializationOptions: settings, Settings: settings, Configuration: true, WorkDoneProgress: true,
		Notifications: []string{"torchlsp/status", "torchlsp/site"}})
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
