package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestOnGPUHost drives the real binary through the fake client against the
// torch of a GPU host, as the closing checks of the foundation, gates and
// repro work ask: definitions into torch 2.11, the threaded-compile
// diagnostic and its fixed twin, and the repro code action run for real.
// It runs only where TORCHLSP_DEVICE_PYTHON names that interpreter (and
// TORCHLSP_BIN the binary, since the host has no Go toolchain).
func TestOnGPUHost(t *testing.T) {
	files, settings := gpuHostSetup(t, "threaded.py", "fixed.py", "symbols.py")
	start := time.Now()
	env := lsptest.Start(t, lsptest.Config{Server: program(t), Files: files, Settings: settings,
		Client: lsptest.Options{ShowDocument: true}, Timeout: 9 * time.Minute})
	c := env.Editor
	ctx := env.Ctx()
	ws := env.Sandbox.Workdir
	report := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		if out := os.Getenv("OUT"); out != "" {
			f, _ := os.OpenFile(filepath.Join(out, "gpu-host.md"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			fmt.Fprintln(f, line)
			f.Close()
		}
	}

	// Definitions, the first one cold.
	symURI := lsptest.FileURI(filepath.Join(ws, "symbols.py"))
	symText, _ := os.ReadFile(filepath.Join(ws, "symbols.py"))
	if err := c.DidOpen(symURI, "python", string(symText)); err != nil {
		t.Fatal(err)
	}
	for i, q := range []struct{ needle, want string }{
		{"torch.compile\n", "torch/__init__.py"},
		{"nn.Linear\n", "torch/nn/modules/linear.py"},
		{"compile_fx.compile_fx\n", "torch/_inductor/compile_fx.py"},
		{"checkpoint\n", "torch/utils/checkpoint.py"},
		{"triton.cudagraph_trees\n", "torch/_inductor/config.py"},
	} {
		text := string(symText)
		idx := strings.LastIndex(text, q.needle)
		line := strings.Count(text[:idx], "\n")
		col := idx - strings.LastIndex(text[:idx], "\n") - 1 + len(q.needle) - 3
		t0 := time.Now()
		locs, err := c.Definition(ctx, symURI, uint32(line), uint32(col))
		if err != nil || len(locs) != 1 {
			t.Errorf("definition of %q: %+v %v", q.needle, locs, err)
			continue
		}
		note := "warm"
		if i == 0 {
			note = fmt.Sprintf("cold, %s after start", time.Since(start).Round(time.Millisecond))
		}
		report("definition %-32q → %s:%d  (%s, %s)", strings.TrimSpace(q.needle), tail(uriPath(t, locs[0].URI), q.want), locs[0].Range.Start.Line+1, time.Since(t0).Round(10*time.Microsecond), note)
	}
	// Warm hover latency.
	var lat []time.Duration
	for i := 0; i < 200; i++ {
		t0 := time.Now()
		if _, err := c.Hover(ctx, symURI, 7, 8); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	report("warm hover over 200 requests: p50 %s, p99 %s", lat[100], lat[197])

	// Diagnostics on the threaded script and its fixed twin.
	for _, f := range []string{"threaded.py", "fixed.py"} {
		uri := lsptest.FileURI(filepath.Join(ws, f))
		text, _ := os.ReadFile(filepath.Join(ws, f))
		if err := c.DidOpen(uri, "python", string(text)); err != nil {
			t.Fatal(err)
		}
		ev, err := c.Await(ctx, func(e lsptest.Event) bool {
			return e.Method == "textDocument/publishDiagnostics" && strings.Contains(string(e.Params), f)
		})
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Diagnostics []struct {
				Code    any    `json:"code"`
				Message string `json:"message"`
			} `json:"diagnostics"`
		}
		_ = json.Unmarshal(ev.Params, &p)
		report("diagnostics on %s: %d", f, len(p.Diagnostics))
		for _, d := range p.Diagnostics {
			report("  [%v] %s", d.Code, d.Message)
		}
	}

	// The repro code action, run for real.
	uri := lsptest.FileURI(filepath.Join(ws, "threaded.py"))
	var actions []struct {
		Title   string `json:"title"`
		Command *struct {
			Command   string            `json:"command"`
			Arguments []json.RawMessage `json:"arguments"`
		} `json:"command"`
	}
	err := c.Call(ctx, "textDocument/codeAction", map[string]any{
		"textDocument": map[string]string{"uri": uri},
		"range":        map[string]any{"start": map[string]int{"line": 10, "character": 20}, "end": map[string]int{"line": 10, "character": 20}},
		"context":      map[string]any{"diagnostics": []any{}},
	}, &actions)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		report("code action: %s", a.Title)
	}
	for _, a := range actions {
		if a.Command == nil || !strings.HasPrefix(a.Title, "Run threaded repro on") {
			continue
		}
		t0 := time.Now()
		var res struct {
			Markdown string `json:"markdown"`
			Path     string `json:"path"`
		}
		if err := c.Call(ctx, "workspace/executeCommand", map[string]any{"command": a.Command.Command, "arguments": waitFor(t, a.Command.Arguments)}, &res); err != nil {
			t.Fatalf("repro: %v", err)
		}
		report("repro took %s; report at %s\n\n%s", time.Since(t0).Round(time.Second), res.Path, res.Markdown)
		break
	}
	env.Shutdown()
}

func tail(path, suffix string) string {
	if i := strings.Index(path, suffix); i >= 0 {
		return path[i:]
	}
	return path
}

// gpuHostSetup is what both GPU-host tests start from: the host's
// interpreter (the test is skipped where TORCHLSP_DEVICE_PYTHON does not
// name it), the named files of testdata/h200, and settings whose default
// target, h200, is that interpreter.
func gpuHostSetup(t *testing.T, names ...string) (files map[string]string, settings json.RawMessage) {
	t.Helper()
	python := os.Getenv("TORCHLSP_DEVICE_PYTHON")
	if python == "" {
		t.Skip("TORCHLSP_DEVICE_PYTHON is not set: this test runs on the GPU host")
	}
	files = map[string]string{}
	for _, f := range names {
		data, err := os.ReadFile(filepath.Join("testdata", "h200", f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(data)
	}
	return files, mustJSON(t, map[string]any{
		"defaultTarget": "h200",
		"targets":       map[string]any{"h200": map[string]any{"python": python}},
	})
}

// waitFor makes a run command's arguments ask for the report in the
// reply ("wait": true) instead of the run's id at once.
func waitFor(t *testing.T, args []json.RawMessage) []any {
	t.Helper()
	if len(args) == 0 {
		t.Fatal("a run command without arguments")
	}
	var arg map[string]any
	if err := json.Unmarshal(args[0], &arg); err != nil {
		t.Fatalf("run command arguments %s: %v", args[0], err)
	}
	arg["wait"] = true
	return []any{arg}
}
