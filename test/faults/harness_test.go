package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/config"
)

// debianPython is Debian's interpreter; python3-torch installs torch for it.
const debianPython = "/usr/bin/python3"

func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

func needPython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is missing: run scripts/setup.sh --test", debianPython)
	}
}

func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// marker returns a value unique to this test, put into a target's
// environment so the test can find exactly the processes it started.
func marker(t testing.TB) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "faults-" + hex.EncodeToString(b[:])
}

// slowSite copies the torch-shaped fixture and makes `import torch` sleep
// for $FAULT_IMPORT_DELAY seconds, as a real torch import takes seconds:
// long enough to kill the helper while it answers.
func slowSite(t testing.TB) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "testdata", "site")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return fs.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	init := filepath.Join(dst, "torch", "__init__.py")
	data, err := os.ReadFile(init)
	if err != nil {
		t.Fatal(err)
	}
	delay := "import os as _o, time as _t\n_t.sleep(float(_o.environ.get('FAULT_IMPORT_DELAY', '0')))\n"
	if err := os.WriteFile(init, append([]byte(delay), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// targetSettings is editor settings with one local target named fixture.
func targetSettings(t testing.TB, python string, env map[string]string) json.RawMessage {
	b, err := json.Marshal(map[string]any{
		"defaultTarget": "fixture",
		"targets":       map[string]any{"fixture": map[string]any{"python": python, "env": env}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// workspace copies the e2e training script into a fresh workspace.
func workspace(t testing.TB) (dir, file, text string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "test", "e2e", "testdata", "workspace", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	file = filepath.Join(dir, "train.py")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file, string(data)
}

// session is the real server in process, behind the real wire, and the
// fake editor talking to it over a pipe.
type session struct {
	t      testing.TB
	client *lsptest.Client
	dirs   config.Dirs
	done   chan int
}

type sessionOptions struct {
	dirs     config.Dirs
	ws       string
	settings json.RawMessage
	logger   *zap.Logger
}

func start(t testing.TB, o sessionOptions) *session {
	t.Helper()
	needPython(t)
	if o.dirs == (config.Dirs{}) {
		o.dirs = config.Dirs{Config: t.TempDir(), Cache: t.TempDir(), State: t.TempDir()}
	}
	if o.logger == nil {
		o.logger = zap.NewNop()
	}
	serverConn, clientConn := net.Pipe()
	eng := server.New(server.Options{Dirs: o.dirs, Opener: sshtarget.Opener{}})
	s := &session{t: t, dirs: o.dirs, done: make(chan int, 1)}
	go func() {
		code, _ := lsp.Serve(context.Background(), serverConn, lsp.NewEngine(eng), lsp.Options{Version: "faults", Logger: o.logger})
		s.done <- code
	}()
	s.client = lsptest.New(clientConn, lsptest.Options{
		RootDir: o.ws, InitializationOptions: o.settings, Settings: o.settings,
		Configuration: true, WorkDoneProgress: true,
	})
	t.Cleanup(func() {
		s.client.Close()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Error("server still running 30s after its connection closed")
		}
	})
	if _, err := s.client.Handshake(testContext(t, 60*time.Second)); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return s
}

// stop ends the session politely and waits for the server to return.
func (s *session) stop() {
	s.t.Helper()
	ctx := testContext(s.t, 30*time.Second)
	if err := s.client.Shutdown(ctx); err != nil {
		s.t.Fatalf("shutdown: %v", err)
	}
	_ = s.client.Exit()
	select {
	case <-s.done:
		s.done <- 0 // for the cleanup
	case <-ctx.Done():
		s.t.Fatal("server did not end after exit")
	}
}

// at returns the LSP position (UTF-16) of byte off within the n-th
// occurrence of needle in text.
func at(t testing.TB, text, needle string, n, off int) (uint32, uint32) {
	t.Helper()
	line, col, err := lsptest.Find(text, needle, n, off)
	if err != nil {
		t.Fatal(err)
	}
	return line, col
}

// processesWith returns the pids of live processes whose environment holds
// needle (a marker put into a target's env). Zombies count as gone.
func processesWith(t testing.TB, needle string) []int {
	return processesWithCmd(t, needle, "")
}

// processesWithCmd is processesWith limited to command lines holding cmd.
func processesWithCmd(t testing.TB, needle, cmd string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(needle)) {
			continue
		}
		if cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err != nil || !bytes.Contains(cl, []byte(cmd)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// awaitNoProcesses waits, bounded, until no process holds needle.
func awaitNoProcesses(t testing.TB, needle string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pids := processesWith(t, needle)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var cmds []string
			for _, p := range pids {
				cl, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
				cmds = append(cmds, strconv.Itoa(p)+": "+strings.ReplaceAll(string(cl), "\x00", " "))
			}
			t.Fatalf("processes left behind after %v:\n%s", within, strings.Join(cmds, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitProcess waits until a process holding needle, with cmd in its
// command line, runs and returns it.
func awaitProcess(t testing.TB, needle, cmd string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if pids := processesWithCmd(t, needle, cmd); len(pids) > 0 {
			return pids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process with %q started within %v", needle, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// buildServer builds the torchlsp binary once per test.
func buildServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "torchlsp")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/torchlsp")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}
