// Package e2e drives the real torchlsp server through the fake editor of
// lsp/lsptest, against real Python interpreters (the torch-shaped fixture
// under testdata/site and Debian's python3-torch), real OpenSSH servers
// and the real binary. What the engine answers (hover text, definition
// places, diagnostics, quick fixes) is tested at the engine boundary by
// the marker files of server/testdata/markers; this package keeps what
// needs the wire, SSH or the editor's side of the protocol.
package e2e

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server"
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

// fixtureSettings targets the fixture torch through Debian's interpreter.
func fixtureSettings(t testing.TB) json.RawMessage {
	site := filepath.Join(repoRoot(t), "testdata", "site")
	return mustJSON(t, map[string]any{
		"defaultTarget": "fixture",
		"targets": map[string]any{
			"fixture": map[string]any{"python": debianPython, "env": map[string]string{"PYTHONPATH": site}},
		},
	})
}

// debianSettings targets Debian's torch 1.13.
func debianSettings(t testing.TB) json.RawMessage {
	return mustJSON(t, map[string]any{
		"defaultTarget": "deb",
		"targets":       map[string]any{"deb": map[string]any{"python": debianPython}},
	})
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// options are what differs between the sessions of these tests.
type options struct {
	sandbox  *lsptest.Sandbox // shared cache and workspace for restarts
	settings json.RawMessage
	client   lsptest.Options
	files    map[string]string
	// opener, when set, replaces the default server.Options.Opener (SSH tests
	// inject known_hosts, keys and keepalives through it).
	opener remote.Opener
}

// start runs the server in process behind the real wire, in a sandbox
// whose workspace holds the e2e training script.
func start(t testing.TB, o options) *lsptest.Env {
	t.Helper()
	needPython(t)
	return lsptest.Start(t, lsptest.Config{
		Server:   lsptest.InProcess{Engine: server.Options{Opener: o.opener}},
		Sandbox:  o.sandbox,
		CopyFrom: filepath.Join(repoRoot(t), "test", "e2e", "testdata", "workspace"),
		Files:    o.files,
		Settings: o.settings,
		Client:   o.client,
	})
}

// uriPath returns the local path of a file URI.
func uriPath(t testing.TB, uri string) string {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		t.Fatalf("not a file URI: %q (%v)", uri, err)
	}
	return u.Path
}

// lineText returns a file's 0-based line.
func lineText(t testing.TB, path string, line int) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if line < 0 || line >= len(lines) {
		t.Fatalf("%s has no line %d", path, line)
	}
	return lines[line]
}

// binary builds torchlsp once for the tests that run it as a process
// (TORCHLSP_BIN names a prebuilt one, as on the GPU host).
var binary = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("TORCHLSP_BIN"); bin != "" {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "torchlsp-e2e-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "torchlsp")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/torchlsp/torchlsp/cmd/torchlsp")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{err: err, out: string(out)}
	}
	return bin, nil
})

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// program is the torchlsp binary as a Server, at info log level.
func program(t testing.TB) lsptest.Program {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return lsptest.Program{Path: bin, Args: []string{"serve", "--stdio", "--log-level", "info"}}
}
