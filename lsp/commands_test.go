package lsp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// debianPython is the interpreter of Debian's python3-torch.
const debianPython = "/usr/bin/python3"

// TestCommandArguments: each command decodes its own argument: an object,
// a bare string where the command has one (a target, a run's id), null or
// nothing; a bad one is answered at once with what the command takes.
func TestCommandArguments(t *testing.T) {
	t.Parallel()
	env := lsptest.Start(t, lsptest.Config{})
	tests := []struct {
		name    string
		command string
		args    []any
		code    int    // 0: a result
		errHas  string // in the error's message
		result  string // in the result's JSON
	}{
		{"a bare string where an object is due", "torchlsp.repro", []any{"h200"}, -32602, "torchlsp.repro: arguments: want {uri, line", ""},
		{"a field of the wrong type", "torchlsp.repro", []any{map[string]any{"uri": "file:///t.py", "line": "twelve"}}, -32602, "Go struct field RunArgs.line", ""},
		{"a hazard without repro variants", "torchlsp.repro", []any{map[string]any{"uri": "file:///nowhere/t.py", "line": 3, "hazard": "TL001"}}, -32603, `no repro variants for "TL001": the hazards with them are TL011, TL013`, ""},
		{"a hazard of the wrong type", "torchlsp.repro", []any{map[string]any{"uri": "file:///t.py", "line": 3, "hazard": 11}}, -32602, "Go struct field RunArgs.hazard", ""},
		{"a document not open", "torchlsp.explain", []any{map[string]any{"uri": "file:///nowhere/t.py", "line": 3}}, -32603, "file:///nowhere/t.py: the document is not open", ""},
		{"a bare run id", "torchlsp.cancelRun", []any{"7"}, -32603, `no run "7": no run is in progress`, ""},
		{"a run id in an object", "torchlsp.cancelRun", []any{map[string]any{"run": "8"}}, -32603, `no run "8"`, ""},
		{"cancel all, no argument", "torchlsp.cancelRun", []any{}, 0, "", `{"cancelled":[]}`},
		{"cancel all, null", "torchlsp.cancelRun", []any{nil}, 0, "", `{"cancelled":[]}`},
		{"a bare target", "torchlsp.selectTarget", []any{"nosuch"}, -32603, "nosuch", ""},
		{"no target: the list", "torchlsp.selectTarget", nil, 0, "", `"default":"local"`},
		{"a command not known", "torchlsp.nosuch", nil, -32602, `unknown command "torchlsp.nosuch"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res json.RawMessage
			err := env.Editor.ExecuteCommand(env.Ctx(), tt.command, tt.args, &res)
			if tt.code == 0 {
				if err != nil || !strings.Contains(string(res), tt.result) {
					t.Errorf("%s %v = %s, %v; want a result holding %s", tt.command, tt.args, res, err, tt.result)
				}
				return
			}
			if lsptest.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("%s %v: %v; want code %d with %q", tt.command, tt.args, err, tt.code, tt.errHas)
			}
		})
	}
}

// runEnv starts the real server on a copy of the user code fixture, with
// Debian's torch as the default target, and opens never.py, whose entry
// point sleeps a minute before it would call what it compiles: a run is
// still capturing when the test cancels it.
func runEnv(t *testing.T) (*lsptest.Env, string, int) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is missing", debianPython)
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/torch/__init__.py"); err != nil {
		t.Skip("Debian's python3-torch is not installed")
	}
	settings, _ := json.Marshal(map[string]any{"defaultTarget": "deb", "targets": map[string]any{"deb": map[string]any{"python": debianPython}}})
	env := lsptest.Start(t, lsptest.Config{
		CopyFrom: filepath.Join("..", "server", "repro", "testdata", "ownws"),
		Settings: settings,
		Client:   lsptest.Options{ShowDocument: true},
		Timeout:  3 * time.Minute,
	})
	uri := env.OpenFile("never.py")
	return env, uri, int(env.At(uri, "torch.compile(f)", 0).Line)
}

// TestRunCancelledByRequest: a run waited for ("wait": true) is the
// request; $/cancelRequest of it stops the run, whose progress ends and
// whose report is still opened, and the request is answered as
// cancelled.
func TestRunCancelledByRequest(t *testing.T) {
	t.Parallel()
	env, uri, line := runEnv(t)
	pending, err := env.Editor.Start("workspace/executeCommand", map[string]any{
		"command": "torchlsp.repro", "arguments": []any{map[string]any{"uri": uri, "line": line, "wait": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	env.Await(lsptest.LoggedMessage(" status] started"))
	if err := env.Editor.Cancel(pending.ID); err != nil {
		t.Fatal(err)
	}
	resp, err := pending.Wait(env.Ctx())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil || resp.Error.Code != -32800 {
		t.Errorf("the cancelled run answered %s %+v; want RequestCancelled", resp.Result, resp.Error)
	}
	env.Await(lsptest.ProgressEnded("torchlsp: threaded repro", "done: "), lsptest.ShownMessage("context canceled"),
		lsptest.ServerRequest("window/showDocument", "report.md"))
	var left struct{ Cancelled []string }
	if err := env.Editor.ExecuteCommand(env.Ctx(), "torchlsp.cancelRun", nil, &left); err != nil || len(left.Cancelled) != 0 {
		t.Errorf("runs left after the cancel: %v %v", left, err)
	}
	env.Shutdown()
}

// TestRunCancelledByCommand: a run command answers at once with the run's
// id; torchlsp.cancelRun with that id (or with none: every run) stops it,
// its progress ends with its report, opened.
func TestRunCancelledByCommand(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args func(run string) []any
	}{
		{"by id", func(run string) []any { return []any{map[string]any{"run": run}} }},
		{"every run", func(string) []any { return nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, uri, line := runEnv(t)
			var started struct {
				Run   string `json:"run"`
				Title string `json:"title"`
			}
			if err := env.Editor.ExecuteCommand(env.Ctx(), "torchlsp.repro", []any{map[string]any{"uri": uri, "line": line}}, &started); err != nil {
				t.Fatal(err)
			}
			if want := "threaded repro of never.py:"; started.Run == "" || !strings.HasPrefix(started.Title, want) {
				t.Fatalf("answer %+v; want a run id and a title starting %q", started, want)
			}
			env.Await(lsptest.LoggedMessage(" status] started"))
			var hit struct{ Cancelled []string }
			if err := env.Editor.ExecuteCommand(env.Ctx(), "torchlsp.cancelRun", tt.args(started.Run), &hit); err != nil {
				t.Fatal(err)
			}
			if len(hit.Cancelled) != 1 || hit.Cancelled[0] != started.Run+": "+started.Title {
				t.Errorf("cancelled %q; want [%s: %s]", hit.Cancelled, started.Run, started.Title)
			}
			env.Await(lsptest.ProgressEnded("torchlsp: threaded repro", "done: "), lsptest.ShownMessage("context canceled"),
				lsptest.ServerRequest("window/showDocument", "report.md"))
			env.Shutdown()
		})
	}
}
