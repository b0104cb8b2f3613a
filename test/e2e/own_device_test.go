package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestOwnCodeOnGPUHost runs the two actions on the user's own code against
// the GPU host's torch, through the real binary and the fake client: the
// threaded repro of a GPT compiled with reduce-overhead and called from two
// threads, with its first real call captured, and Explain compile on a step
// with two deliberate graph breaks. Like TestOnGPUHost it runs only where
// TORCHLSP_DEVICE_PYTHON names the host's interpreter.
func TestOwnCodeOnGPUHost(t *testing.T) {
	files, settings := gpuHostSetup(t, "own_gpt.py", "own_breaks.py")
	env := lsptest.Start(t, lsptest.Config{Server: program(t), Files: files, Settings: settings,
		Client: lsptest.Options{ShowDocument: true}, Timeout: 9 * time.Minute})
	c := env.Editor
	ctx := env.Ctx()
	ws := env.Sandbox.Workdir
	report := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		if out := os.Getenv("OUT"); out != "" {
			f, _ := os.OpenFile(filepath.Join(out, "own-code.md"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	type action struct {
		Title   string `json:"title"`
		Command *struct {
			Command   string            `json:"command"`
			Arguments []json.RawMessage `json:"arguments"`
		} `json:"command"`
	}
	// run opens f, asks for the code actions on the line holding needle,
	// and executes the one whose title starts with prefix.
	run := func(f, needle, prefix string) (string, string) {
		uri := lsptest.FileURI(filepath.Join(ws, f))
		text := files[f]
		if err := c.DidOpen(uri, "python", text); err != nil {
			t.Fatal(err)
		}
		idx := strings.Index(text, needle)
		line := strings.Count(text[:idx], "\n")
		col := idx - strings.LastIndex(text[:idx], "\n") - 1 + 2
		var actions []action
		err := c.Call(ctx, "textDocument/codeAction", map[string]any{
			"textDocument": map[string]string{"uri": uri},
			"range":        map[string]any{"start": map[string]int{"line": line, "character": col}, "end": map[string]int{"line": line, "character": col}},
			"context":      map[string]any{"diagnostics": []any{}},
		}, &actions)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range actions {
			if a.Command == nil || !strings.HasPrefix(a.Title, prefix) {
				continue
			}
			t0 := time.Now()
			var res struct {
				Markdown string `json:"markdown"`
				Path     string `json:"path"`
			}
			if err := c.Call(ctx, "workspace/executeCommand", map[string]any{"command": a.Command.Command, "arguments": waitFor(t, a.Command.Arguments)}, &res); err != nil {
				t.Fatalf("%s: %v", a.Title, err)
			}
			report("## %s (%s, %s)\n\nreport at %s\n\n%s", a.Title, f, time.Since(t0).Round(time.Second), res.Path, res.Markdown)
			return uri, res.Markdown
		}
		t.Fatalf("no code action %q on %s line %d", prefix, f, line+1)
		return "", ""
	}

	_, md := run("own_gpt.py", "torch.compile(model", "Run threaded repro with this code")
	for _, want := range []string{"GPT (own_gpt.py)", "captured", "int64[4, 64] cuda:0", "| threads | **FAIL**", "torch/_inductor/cudagraph_trees.py:359"} {
		if !strings.Contains(md, want) {
			t.Errorf("repro report lacks %q", want)
		}
	}

	uri, md := run("own_breaks.py", "torch.compile(step", "Explain compile on")
	if !strings.Contains(md, "graph break(s)") {
		t.Fatalf("explain gave no findings")
	}
	if !strings.Contains(md, "2 graph break(s)") {
		t.Errorf("explain report: want 2 graph breaks")
	}
	ev, err := c.Await(ctx, func(e lsptest.Event) bool {
		return e.Method == "textDocument/publishDiagnostics" && strings.Contains(string(e.Params), "own_breaks.py") && strings.Contains(string(e.Params), "Graph break")
	})
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Diagnostics []struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
			Range   struct {
				Start struct{ Line int } `json:"start"`
			} `json:"range"`
		} `json:"diagnostics"`
	}
	_ = json.Unmarshal(ev.Params, &p)
	var breaks []int
	report("diagnostics on own_breaks.py (%s): %d", uri, len(p.Diagnostics))
	for _, d := range p.Diagnostics {
		report("  line %d [%v] %s", d.Range.Start.Line+1, d.Code, d.Message)
		if strings.HasPrefix(d.Message, "Graph break") {
			breaks = append(breaks, d.Range.Start.Line+1)
		}
	}
	if fmt.Sprint(breaks) != "[13 14]" {
		t.Errorf("graph breaks on lines %v, want [13 14]", breaks)
	}
	env.Shutdown()
}
