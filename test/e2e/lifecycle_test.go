package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/server/config"
)

// TestSlowTargetCancel: a hover stuck on a target that never answers does
// not hold up other requests, and $/cancelRequest with a numeric id ends
// it with RequestCancelled.
func TestSlowTargetCancel(t *testing.T) {
	hang := filepath.Join(t.TempDir(), "python-that-hangs")
	// A fault injector: an "interpreter" that never speaks the helper
	// protocol.
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := mustJSON(t, map[string]any{
		"defaultTarget": "stuck",
		"targets":       map[string]any{"stuck": map[string]any{"python": hang}},
	})
	s := start(t, sessionOptions{settings: settings})
	uri, text := s.open("train.py")

	line, col := at(t, text, "torch.compile(model", 0, 6)
	slow, err := s.client.StartHover(uri, line, col)
	if err != nil {
		t.Fatal(err)
	}
	// The user's own name needs no target: it must answer while the slow
	// hover waits.
	mline, mcol := at(t, text, "Model()", 0, 0)
	if h, err := s.client.Hover(s.ctx(10*time.Second), uri, mline, mcol); err != nil || h != nil {
		t.Fatalf("second hover = %+v, %v", h, err)
	}
	if err := s.client.Cancel(slow.ID); err != nil {
		t.Fatal(err)
	}
	err = slow.Decode(s.ctx(10*time.Second), nil)
	if lsptest.ErrorCode(err) != lsptest.CodeRequestCancelled {
		t.Fatalf("cancelled hover: err = %v, want RequestCancelled", err)
	}
	s.shutdown()
}

// TestBadInput: malformed JSON-RPC, unknown methods and out-of-range
// positions get errors, and the server keeps answering.
func TestBadInput(t *testing.T) {
	s := start(t, sessionOptions{settings: fixtureSettings(t)})
	uri, text := s.open("train.py")
	ctx := s.ctx(30 * time.Second)

	if err := s.client.WriteFrame([]byte(`{"jsonrpc":"2.0","id":99,"method":`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.Await(ctx, func(e lsptest.Event) bool {
		return e.Response != nil && e.Response.Error != nil && e.Response.Error.Code == lsptest.CodeParseError
	}); err != nil {
		t.Fatalf("no ParseError reply to a malformed body: %v", err)
	}
	err := s.client.Call(ctx, "textDocument/inlayHint", map[string]any{"textDocument": map[string]string{"uri": uri}}, nil)
	if lsptest.ErrorCode(err) != lsptest.CodeMethodNotFound {
		t.Errorf("unknown method: %v, want MethodNotFound", err)
	}
	if _, err := s.client.Hover(ctx, uri, 10_000, 0); lsptest.ErrorCode(err) != lsptest.CodeInvalidParams {
		t.Errorf("line past the end: %v, want InvalidParams", err)
	}
	err = s.client.Call(ctx, "textDocument/hover", map[string]any{"textDocument": 42, "position": "x"}, nil)
	if lsptest.ErrorCode(err) != lsptest.CodeInvalidParams {
		t.Errorf("wrong param types: %v, want InvalidParams", err)
	}
	// Still serving.
	line, col := at(t, text, "nn.Linear(4, 4)", 0, 3)
	if locs, err := s.client.Definition(ctx, uri, line, col); err != nil || len(locs) != 1 {
		t.Fatalf("definition after bad input = %+v, %v", locs, err)
	}
	s.shutdown()
}

// TestRestartUsesCache: a second server on the same cache answers from the
// persisted mirror and index, without mirroring again.
func TestRestartUsesCache(t *testing.T) {
	dirs := config.Dirs{Config: t.TempDir(), Cache: t.TempDir(), State: t.TempDir()}
	query := func(s *session) {
		uri, text := s.open("train.py")
		line, col := at(t, text, "nn.Linear(4, 4)", 0, 3)
		locs, err := s.client.Definition(s.ctx(60*time.Second), uri, line, col)
		if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "torch/nn/modules/linear.py") {
			t.Fatalf("definition = %+v, %v", locs, err)
		}
	}
	first := start(t, sessionOptions{dirs: &dirs, settings: fixtureSettings(t)})
	query(first)
	if !mirrored(first.client.Events()) {
		t.Error("the first server did not report mirroring")
	}
	first.shutdown()

	second := start(t, sessionOptions{dirs: &dirs, settings: fixtureSettings(t)})
	query(second)
	if mirrored(second.client.Events()) {
		t.Error("the second server mirrored again instead of using the cache")
	}
	second.shutdown()
}

func mirrored(events []lsptest.Event) bool {
	for _, e := range events {
		if e.Method == "$/progress" && strings.Contains(string(e.Params), "mirroring") {
			return true
		}
	}
	return false
}

// TestUntrustedWorkspace: a workspace torchlsp.toml does nothing until the
// user trusts it, the editor is told which command to run, and a changed
// file needs trust again.
func TestUntrustedWorkspace(t *testing.T) {
	ws := t.TempDir()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "test", "e2e", "testdata", "workspace", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "train.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	// If this file were obeyed before it is trusted, the "interpreter"
	// would leave a marker behind.
	evil := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\ntouch "+marker+"\nexec "+debianPython+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(repoRoot(t), "testdata", "site")
	toml := "default = \"w\"\n[targets.w]\npython = \"" + evil + "\"\nenv = { PYTHONPATH = \"" + site + "\" }\n"
	tomlPath := filepath.Join(ws, config.WorkspaceFile)
	if err := os.WriteFile(tomlPath, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := config.Dirs{Config: t.TempDir(), Cache: t.TempDir(), State: t.TempDir()}
	s := start(t, sessionOptions{dirs: &dirs, ws: ws, client: lsptest.Options{Configuration: true}})
	ctx := s.ctx(60 * time.Second)
	if _, err := s.client.AwaitMessage(ctx, false, "torchlsp trust "+ws); err != nil {
		t.Fatalf("no message naming `torchlsp trust`: %v", err)
	}
	uri, text := s.open("train.py")
	line, col := at(t, text, "nn.Linear(4, 4)", 0, 3)
	_, _ = s.client.Definition(ctx, uri, line, col)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the untrusted workspace's interpreter ran")
	}

	if _, err := config.NewTrustStore(dirs).Trust(tomlPath); err != nil {
		t.Fatal(err)
	}
	if err := s.client.DidChangeConfiguration(json.RawMessage("null")); err != nil {
		t.Fatal(err)
	}
	// The configuration is read again asynchronously; the new target
	// announces itself on the status channel.
	if _, err := s.client.Await(ctx, func(e lsptest.Event) bool {
		return e.Method == "torchlsp/status" && strings.Contains(string(e.Params), `"target":"w"`)
	}); err != nil {
		t.Fatalf("the trusted target did not start: %v", err)
	}
	locs, err := s.client.Definition(ctx, uri, line, col)
	if err != nil || len(locs) != 1 {
		t.Fatalf("definition once trusted = %+v, %v", locs, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the trusted workspace's interpreter did not run")
	}
	s.shutdown()

	// A changed file is distrusted again.
	if err := os.WriteFile(tomlPath, []byte(toml+"# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, sessionOptions{dirs: &dirs, ws: ws, client: lsptest.Options{Configuration: true}})
	if _, err := s2.client.AwaitMessage(s2.ctx(30*time.Second), false, "changed since you trusted it"); err != nil {
		t.Fatalf("no message about the changed file: %v", err)
	}
	s2.shutdown()
}

// binary builds torchlsp once for the tests that run it as a process.
var binary = sync.OnceValues(func() (string, error) {
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

// process runs `torchlsp serve --stdio` with its own XDG directories.
func process(t *testing.T, opts lsptest.Options) (*lsptest.Client, *exec.Cmd, chan error) {
	t.Helper()
	if os.Getenv("TORCHLSP_DEVICE_PYTHON") == "" {
		needPython(t)
	}
	bin := os.Getenv("TORCHLSP_BIN")
	if bin == "" {
		var err error
		if bin, err = binary(); err != nil {
			t.Fatalf("build: %v", err)
		}
	}
	cmd := exec.Command(bin, "serve", "--stdio", "--log-level", "info")
	tmp := t.TempDir()
	logFile, err := os.Create(filepath.Join(tmp, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logFile
	t.Cleanup(func() {
		if t.Failed() {
			data, _ := os.ReadFile(logFile.Name())
			t.Logf("server stderr:\n%s", data)
		}
	})
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+tmp+"/config", "XDG_CACHE_HOME="+tmp+"/cache", "XDG_STATE_HOME="+tmp+"/state")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	c := lsptest.New(pipeConn{stdout, stdin}, opts)
	return c, cmd, done
}

type pipeConn struct {
	r interface{ Read([]byte) (int, error) }
	w interface {
		Write([]byte) (int, error)
		Close() error
	}
}

func (p pipeConn) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipeConn) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeConn) Close() error                { return p.w.Close() }

func exitCode(t *testing.T, done chan error) int {
	t.Helper()
	select {
	case err := <-done:
		if err == nil {
			return 0
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		t.Fatalf("wait: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("torchlsp did not exit")
	}
	return -1
}

// TestProcessExitCodes: the binary exits 0 after shutdown+exit, and 1 after
// an exit without shutdown or when stdin closes. (A client process that
// dies is covered by lsp's TestClientProcessDeathEndsServer and test/faults' TestClientVanishes.)
func TestProcessExitCodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("shutdown then exit", func(t *testing.T) {
		c, _, done := process(t, lsptest.Options{})
		if _, err := c.Handshake(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		_ = c.Exit()
		if code := exitCode(t, done); code != 0 {
			t.Errorf("exit code %d, want 0", code)
		}
	})
	t.Run("exit without shutdown", func(t *testing.T) {
		c, _, done := process(t, lsptest.Options{})
		if _, err := c.Handshake(ctx); err != nil {
			t.Fatal(err)
		}
		_ = c.Exit()
		if code := exitCode(t, done); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	})
	t.Run("stdin closed", func(t *testing.T) {
		c, _, done := process(t, lsptest.Options{})
		if _, err := c.Handshake(ctx); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		if code := exitCode(t, done); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	})
}
