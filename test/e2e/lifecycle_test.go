package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/server/config"
)

// TestSlowTargetCancel: a hover stuck on a target that never answers does
// not hold up other requests, and $/cancelRequest with a numeric id ends
// it with RequestCancelled.
func TestSlowTargetCancel(t *testing.T) {
	t.Parallel()
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
	env := start(t, options{settings: settings})
	uri := env.OpenFile("train.py")

	pos := env.At(uri, "torch.compile(model", 6)
	slow, err := env.Editor.StartHover(uri, pos.Line, pos.Character)
	if err != nil {
		t.Fatal(err)
	}
	// The user's own name needs no target: it must answer while the slow
	// hover waits.
	if h := env.Hover(uri, env.At(uri, "Model()", 0)); h != nil {
		t.Fatalf("second hover = %+v", h)
	}
	if err := env.Editor.Cancel(slow.ID); err != nil {
		t.Fatal(err)
	}
	err = slow.Decode(env.Ctx(), nil)
	if lsptest.ErrorCode(err) != lsptest.CodeRequestCancelled {
		t.Fatalf("cancelled hover: err = %v, want RequestCancelled", err)
	}
	env.Shutdown()
}

// TestBadInput: malformed JSON-RPC, unknown methods and out-of-range
// positions get errors, and the server keeps answering.
func TestBadInput(t *testing.T) {
	t.Parallel()
	env := start(t, options{settings: fixtureSettings(t)})
	uri := env.OpenFile("train.py")
	ctx := env.Ctx()
	c := env.Client()

	if err := c.WriteFrame([]byte(`{"jsonrpc":"2.0","id":99,"method":`)); err != nil {
		t.Fatal(err)
	}
	env.Await(lsptest.Expectation{Description: "a ParseError reply to a malformed body", Match: func(e lsptest.Event) bool {
		return e.Response != nil && e.Response.Error != nil && e.Response.Error.Code == lsptest.CodeParseError
	}})
	err := c.Call(ctx, "textDocument/inlayHint", map[string]any{"textDocument": map[string]string{"uri": uri}}, nil)
	if lsptest.ErrorCode(err) != lsptest.CodeMethodNotFound {
		t.Errorf("unknown method: %v, want MethodNotFound", err)
	}
	if _, err := c.Hover(ctx, uri, 10_000, 0); lsptest.ErrorCode(err) != lsptest.CodeInvalidParams {
		t.Errorf("line past the end: %v, want InvalidParams", err)
	}
	err = c.Call(ctx, "textDocument/hover", map[string]any{"textDocument": 42, "position": "x"}, nil)
	if lsptest.ErrorCode(err) != lsptest.CodeInvalidParams {
		t.Errorf("wrong param types: %v, want InvalidParams", err)
	}
	// Still serving.
	if locs := env.Definition(uri, env.At(uri, "nn.Linear(4, 4)", 3)); len(locs) != 1 {
		t.Fatalf("definition after bad input = %+v", locs)
	}
	env.Shutdown()
}

// TestRestartUsesCache: a second server on the same cache answers from the
// persisted mirror and index, without mirroring again.
func TestRestartUsesCache(t *testing.T) {
	t.Parallel()
	sb := lsptest.NewSandbox(t)
	query := func(env *lsptest.Env) {
		uri := env.OpenFile("train.py")
		locs := env.Definition(uri, env.At(uri, "nn.Linear(4, 4)", 3))
		if len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "torch/nn/modules/linear.py") {
			t.Fatalf("definition = %+v", locs)
		}
	}
	first := start(t, options{sandbox: &sb, settings: fixtureSettings(t)})
	query(first)
	// Progress is sent apart from replies: wait for the load to end.
	first.Await(lsptest.ProgressEnded("torchlsp: torch on fixture", "mirrored"))
	if !mirrored(first.Editor.Events()) {
		t.Error("the first server did not report mirroring")
	}
	first.Shutdown()

	second := start(t, options{sandbox: &sb, settings: fixtureSettings(t)})
	query(second)
	if mirrored(second.Editor.Events()) {
		t.Error("the second server mirrored again instead of using the cache")
	}
	second.Shutdown()
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
	t.Parallel()
	sb := lsptest.NewSandbox(t)
	marker := filepath.Join(t.TempDir(), "ran")
	// If this file were obeyed before it is trusted, the "interpreter"
	// would leave a marker behind.
	evil := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\ntouch "+marker+"\nexec "+debianPython+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(repoRoot(t), "testdata", "site")
	toml := "default = \"w\"\n[targets.w]\npython = \"" + evil + "\"\nenv = { PYTHONPATH = \"" + site + "\" }\n"
	tomlPath := filepath.Join(sb.Workdir, config.WorkspaceFile)
	env := start(t, options{sandbox: &sb, files: map[string]string{config.WorkspaceFile: toml},
		client: lsptest.Options{Configuration: true, Notifications: []string{"torchlsp/status"}}})
	env.AwaitMessage("torchlsp trust " + sb.Workdir)
	uri := env.OpenFile("train.py")
	pos := env.At(uri, "nn.Linear(4, 4)", 3)
	_, _ = env.Editor.Definition(env.Ctx(), uri, pos.Line, pos.Character)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the untrusted workspace's interpreter ran")
	}

	if _, err := config.NewTrustStore(sb.Dirs()).Trust(tomlPath); err != nil {
		t.Fatal(err)
	}
	if err := env.Editor.DidChangeConfiguration(json.RawMessage("null")); err != nil {
		t.Fatal(err)
	}
	// The configuration is read again asynchronously; the new target
	// announces itself on the status channel.
	env.Await(lsptest.StatusIs("w", ""))
	if locs := env.Definition(uri, pos); len(locs) != 1 {
		t.Fatalf("definition once trusted = %+v", locs)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the trusted workspace's interpreter did not run")
	}
	env.Shutdown()

	// A changed file is distrusted again.
	if err := os.WriteFile(tomlPath, []byte(toml+"# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again := start(t, options{sandbox: &sb, client: lsptest.Options{Configuration: true}})
	again.AwaitMessage("changed since you trusted it")
	again.Shutdown()
}

// TestProcessExitCodes: the binary exits 0 after shutdown+exit, and 1 after
// an exit without shutdown or when stdin closes. (A client process that
// dies is covered by lsp's TestClientProcessDeathEndsServer and test/faults' TestClientVanishes.)
func TestProcessExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		end  func(env *lsptest.Env)
		want int
	}{
		{"shutdown then exit", func(env *lsptest.Env) {
			if err := env.Editor.Shutdown(env.Ctx()); err != nil {
				t.Error(err)
			}
			_ = env.Editor.Exit()
		}, 0},
		{"exit without shutdown", func(env *lsptest.Env) { _ = env.Editor.Exit() }, 1},
		{"stdin closed", func(env *lsptest.Env) { _ = env.Editor.Close() }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := lsptest.Start(t, lsptest.Config{Server: program(t)})
			tt.end(env)
			if code := env.ExitCode(); code != tt.want {
				t.Errorf("exit code %d, want %d", code, tt.want)
			}
		})
	}
}
