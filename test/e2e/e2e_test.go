// Package e2e drives the real torchlsp server through a fake editor over a
// pipe, against real Python interpreters: the torch-shaped fixture under
// testdata/site and Debian's python3-torch.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote"
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

// session is one in-process server and the fake editor talking to it.
type session struct {
	t      testing.TB
	client *lsptest.Client
	dirs   config.Dirs
	ws     string
	done   chan serveResult
}

type serveResult struct {
	code int
	err  error
}

type sessionOptions struct {
	dirs     *config.Dirs // shared cache for restart tests; fresh when nil
	ws       string       // workspace folder; the e2e workspace when empty
	settings json.RawMessage
	client   lsptest.Options
	// opener, when set, replaces the default server.Options.Opener (SSH tests
	// inject known_hosts, keys and keepalives through it).
	opener remote.Opener
}

func start(t testing.TB, o sessionOptions) *session {
	t.Helper()
	needPython(t)
	dirs := config.Dirs{Config: t.TempDir(), Cache: t.TempDir(), State: t.TempDir()}
	if o.dirs != nil {
		dirs = *o.dirs
	}
	ws := o.ws
	if ws == "" {
		ws = filepath.Join(repoRoot(t), "test", "e2e", "testdata", "workspace")
	}
	serverConn, clientConn := net.Pipe()
	opener := o.opener
	if opener == nil {
		opener = sshtarget.Opener{}
	}
	eng := server.New(server.Options{Dirs: dirs, Opener: opener})
	s := &session{t: t, dirs: dirs, ws: ws, done: make(chan serveResult, 1)}
	go func() {
		code, err := lsp.Serve(context.Background(), serverConn, lsp.NewEngine(eng), lsp.Options{Version: "e2e"})
		s.done <- serveResult{code, err}
	}()
	opts := o.client
	opts.RootDir = ws
	if o.settings != nil {
		opts.InitializationOptions = o.settings
		opts.Settings = o.settings
		opts.Configuration = true
	}
	opts.WorkDoneProgress = true
	s.client = lsptest.New(clientConn, opts)
	t.Cleanup(func() { s.client.Close() })
	ctx := s.ctx(30 * time.Second)
	if _, err := s.client.Handshake(ctx); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return s
}

func (s *session) ctx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	s.t.Cleanup(cancel)
	return ctx
}

// open sends didOpen for a workspace file and returns its URI and text.
func (s *session) open(rel string) (string, string) {
	s.t.Helper()
	path := filepath.Join(s.ws, rel)
	data, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	uri := lsptest.FileURI(path)
	if err := s.client.DidOpen(uri, "python", string(data)); err != nil {
		s.t.Fatal(err)
	}
	return uri, string(data)
}

// shutdown ends the session the polite way and checks the exit code.
func (s *session) shutdown() {
	s.t.Helper()
	if err := s.client.Shutdown(s.ctx(30 * time.Second)); err != nil {
		s.t.Fatalf("shutdown: %v", err)
	}
	if err := s.client.Exit(); err != nil {
		s.t.Fatalf("exit: %v", err)
	}
	select {
	case r := <-s.done:
		if r.code != 0 {
			s.t.Errorf("exit code after shutdown = %d, want 0 (err %v)", r.code, r.err)
		}
	case <-time.After(30 * time.Second):
		s.t.Fatal("server did not end after exit")
	}
}

// at finds the n-th (0-based) occurrence of needle in text and returns the
// LSP position (UTF-16 columns) of the byte offset off within it.
func at(t testing.TB, text, needle string, n, off int) (uint32, uint32) {
	t.Helper()
	line, col, err := lsptest.Find(text, needle, n, off)
	if err != nil {
		t.Fatal(err)
	}
	return line, col
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

// pythonLine asks the real interpreter for the def/class line (1-based,
// decorators skipped) of qualname; env adds to the environment.
func pythonLine(t testing.TB, env []string, module, attr string) (string, int) {
	t.Helper()
	script := fmt.Sprintf(`
import importlib, inspect
obj = importlib.import_module(%q)
for part in %q.split("."):
    obj = getattr(obj, part)
obj = inspect.unwrap(obj)
lines, start = inspect.getsourcelines(obj)
off = next(i for i, l in enumerate(lines) if l.lstrip().startswith(("def ", "class ", "async def ")))
print(inspect.getsourcefile(obj))
print(start + off)
`, module, attr)
	cmd := exec.Command(debianPython, "-c", script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	var file string
	var line int
	if _, err := fmt.Sscanf(string(out), "%s\n%d", &file, &line); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	return file, line
}

func timeoutCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
