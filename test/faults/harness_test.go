package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
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
// long enough to kill the helper while it answers. When the import
// starts, it writes its process id to the file $FAULT_IMPORT_STARTED
// names, if set.
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
	delay := "import os as _o, time as _t\n" +
		"if _o.environ.get('FAULT_IMPORT_STARTED'):\n" +
		"    with open(_o.environ['FAULT_IMPORT_STARTED'] + '.tmp', 'w') as _f: _f.write(str(_o.getpid()))\n" +
		"    _o.rename(_o.environ['FAULT_IMPORT_STARTED'] + '.tmp', _o.environ['FAULT_IMPORT_STARTED'])\n" +
		"_t.sleep(float(_o.environ.get('FAULT_IMPORT_DELAY', '0')))\n"
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

// workspace is the e2e training script, to be written into a sandbox's
// workspace, and its text.
func workspace(t testing.TB) (files map[string]string, text string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "test", "e2e", "testdata", "workspace", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"train.py": string(data)}, string(data)
}

type sessionOptions struct {
	sandbox  *lsptest.Sandbox // a shared cache and workspace; fresh when nil
	settings json.RawMessage
	logger   *zap.Logger
}

// start runs the real server in process, behind the real wire, with the
// fake editor talking to it over a pipe, in a workspace holding the e2e
// training script.
func start(t testing.TB, o sessionOptions) *lsptest.Env {
	t.Helper()
	needPython(t)
	if o.logger == nil {
		o.logger = zap.NewNop()
	}
	files, _ := workspace(t)
	return lsptest.Start(t, lsptest.Config{
		Server:   lsptest.InProcess{Wire: lsp.Options{Version: "faults", Logger: o.logger}},
		Sandbox:  o.sandbox,
		Files:    files,
		Settings: o.settings,
		// As torchlsp's own editor packages do: the status and the site
		// reach only a client that announces them.
		Client: lsptest.Options{Notifications: []string{"torchlsp/status", "torchlsp/site"}},
	})
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
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := await.Gone(ctx, func() []int { return processesWith(t, needle) }); err != nil {
		var cmds []string
		for _, p := range processesWith(t, needle) {
			cl, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
			cmds = append(cmds, strconv.Itoa(p)+": "+strings.ReplaceAll(string(cl), "\x00", " "))
		}
		t.Fatalf("processes left behind after %v (%v):\n%s", within, err, strings.Join(cmds, "\n"))
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
		// A process starting announces itself to nobody a test can ask
		// without privileges (the proc connector needs CAP_NET_ADMIN).
		time.Sleep(20 * time.Millisecond)
	}
}

// binary builds the torchlsp binary once for the tests that run it.
var binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "torchlsp-faults-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "torchlsp")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/torchlsp/torchlsp/cmd/torchlsp").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build: %w\n%s", err, out)
	}
	return bin, nil
})

// buildServer returns the torchlsp binary, built once.
func buildServer(t testing.TB) string {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
