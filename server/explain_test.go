package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
	"github.com/torchlsp/torchlsp/server/source"
)

// startOwnEngine starts an engine whose workspace is a copy of the user
// code fixture, on Debian's interpreter (torch 1.13: no Dynamo, so the
// stand-ins run), and opens file.
func startOwnEngine(t *testing.T, file string) (*Engine, *Snapshot, string) {
	t.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.CopyFS(ws, os.DirFS(filepath.Join("repro", "testdata", "ownws"))); err != nil {
		t.Fatal(err)
	}
	eng := initEngine(t, nil, root, ws, "debian", map[string]any{"debian": map[string]any{"python": benchPython}})
	path := filepath.Join(ws, file)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return eng, eng.DidOpen(context.Background(), source.FileURI(path), "", 1, string(text)), ws
}

func lineOf(t *testing.T, text, needle string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, needle) {
			return i
		}
	}
	t.Fatalf("no line holds %q", needle)
	return -1
}

// TestExplainOnUserLines puts the step's two deliberate graph breaks and
// its recompile on the user's lines, with the factory the directive names.
func TestExplainOnUserLines(t *testing.T) {
	t.Parallel()
	eng, doc, ws := startOwnEngine(t, "breaks.py")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := eng.Explain(ctx, RunArgs{URI: doc.URI(), Line: lineOf(t, doc.Text(), "torch.compile(step)"), Caller: &RunCaller{}})
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, res.Markdown)
	}
	type found struct {
		line int
		code string
	}
	var got []found
	for _, d := range res.Diagnostics[doc.URI()] {
		got = append(got, found{d.Range.Start.Line, strings.Fields(d.Code)[0]})
	}
	want := []found{
		{lineOf(t, doc.Text(), "print("), CodeGraphBreak},
		{lineOf(t, doc.Text(), ".item()"), CodeGraphBreak},
		{lineOf(t, doc.Text(), "def step"), CodeRecompile},
		{lineOf(t, doc.Text(), "torch.compile(step)"), "TL202"},
	}
	if len(got) != len(want) {
		t.Fatalf("diagnostics %+v, want %+v", res.Diagnostics, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("diagnostic %d at line %d code %s, want line %d code %s", i, got[i].line, got[i].code, want[i].line, want[i].code)
		}
	}
	if d := res.Diagnostics[doc.URI()][0]; d.Range.Start.Column != 4 || !strings.Contains(d.Message, "print()") {
		t.Errorf("first graph break %+v", d)
	}
	if notes := eng.runs.Notes(doc); len(notes) != 4 {
		t.Errorf("published with the document: %d diagnostics, want 4", len(notes))
	}
	if !strings.Contains(res.Markdown, "factory breaks:make_x") || !strings.Contains(res.Markdown, "2 graph break(s), 1 recompile(s)") {
		t.Errorf("report:\n%s", res.Markdown)
	}
	if !strings.HasPrefix(res.Reports[0].Dir, filepath.Join(ws, ".torchlsp", "repros")) {
		t.Errorf("run files in %q", res.Reports[0].Dir)
	}
	saved, err := os.ReadFile(filepath.Join(res.Reports[0].Dir, "report.md"))
	if err != nil || !strings.Contains(string(saved), "graph break(s)") {
		t.Errorf("saved report: %v %q", err, saved)
	}
}

// TestReproOwnCode runs the threaded repro on the user's own model, with
// its first real call captured from the entry point.
func TestReproOwnCode(t *testing.T) {
	t.Parallel()
	eng, doc, _ := startOwnEngine(t, "train.py")
	line := lineOf(t, doc.Text(), "torch.compile(model")
	acts, err := eng.CodeActions(context.Background(), doc, Range{Start: Position{Line: line, Column: 20}, End: Position{Line: line, Column: 20}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, a := range acts {
		titles = append(titles, a.Title)
	}
	for _, want := range []string{"Run threaded repro with this code", "Explain compile on debian"} {
		if !strings.Contains(strings.Join(titles, "\n"), want) {
			t.Errorf("code actions %q lack %q", titles, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := eng.Repro(ctx, RunArgs{URI: doc.URI(), Line: line, Own: true, Caller: &RunCaller{}})
	if err != nil {
		t.Fatalf("repro: %v", err)
	}
	for _, want := range []string{"TinyGPT (tinygpt/model.py)", "captured", "arg 0: int64[3, 12] cpu", "| threads | **FAIL**", "AssertionError",
		"| main-thread | ok", "| threads-per-gpu | not run", "one thread per GPU needs two or more CUDA devices"} {
		if !strings.Contains(res.Markdown, want) {
			t.Errorf("report lacks %q:\n%s", want, res.Markdown)
		}
	}
}

// hostileNamesStep compiles, at run time, source under a file name of the
// workspace: torch (here the stand-in) then names that file in its
// findings, and explain places them by reading it.
const hostileNamesStep = `"""Source compiled under a name the workspace decides."""
import torch

NS = {}
exec(compile("def body(x):\n    print('body')\n    return x + 1\n", "NAME", "exec"), NS)


def make_x(seed):
    return (torch.ones(2),)


def step(x):
    return NS["body"](x)

# torchlsp: inputs=make_x
compiled = torch.compile(step)
`

// TestExplainHostileFileNames: the file a run names is read, to place its
// findings, only inside the workspace and only as a bounded regular file.
// A link to /dev/zero, a named pipe and a link out are not read: explain
// answers, with the finding at the line's start. (Explain followed the
// link and read without a bound: /dev/zero ran the process out of memory,
// a pipe hung it past every deadline.)
func TestExplainHostileFileNames(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	outside := filepath.Join(t.TempDir(), "outside.py")
	if err := os.WriteFile(outside, []byte("def body(x):\n    print('body')\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, file string
		plant      func(path string) error
	}{
		{"link to /dev/zero", "zero.py", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"named pipe", "pipe.py", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"link out of the workspace", "out.py", func(p string) error { return os.Symlink(outside, p) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			ws := filepath.Join(root, "ws")
			src := strings.Replace(hostileNamesStep, "NAME", tt.file, 1)
			if err := os.MkdirAll(ws, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "step.py"), []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := tt.plant(filepath.Join(ws, tt.file)); err != nil {
				t.Fatal(err)
			}
			eng := New(Options{Dirs: config.Dirs{Config: filepath.Join(root, "config"), Cache: filepath.Join(root, "cache"), State: filepath.Join(root, "state")}})
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = eng.Shutdown(ctx)
			})
			settings, _ := json.Marshal(map[string]any{"defaultTarget": "debian", "targets": map[string]any{"debian": map[string]any{"python": benchPython}}})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := eng.Initialize(ctx, InitializeParams{WorkspaceFolders: []string{ws}, InitializationOptions: settings}); err != nil {
				t.Fatal(err)
			}
			doc := eng.DidOpen(ctx, source.FileURI(filepath.Join(ws, "step.py")), "", 1, src)
			type result struct {
				res *RunResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := eng.Explain(ctx, RunArgs{URI: doc.URI(), Line: lineOf(t, src, "torch.compile(step)"), Caller: &RunCaller{}})
				done <- result{res, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(4 * time.Minute):
				t.Fatalf("explain still running after 4 minutes: it is stuck reading %s", tt.file)
			}
			if r.err != nil {
				t.Fatalf("explain: %v", r.err)
			}
			diags := r.res.Diagnostics[source.FileURI(filepath.Join(ws, tt.file))]
			if len(diags) != 1 || diags[0].Range.Start != (Position{Line: 1}) || diags[0].Range.End != (Position{Line: 1}) || !strings.Contains(diags[0].Message, "print()") {
				t.Errorf("findings on %s: %+v; want the print() graph break at the start of line 2, the file unread", tt.file, r.res.Diagnostics)
			}
		})
	}
}
