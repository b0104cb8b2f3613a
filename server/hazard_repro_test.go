package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/source"
)

// hazardsDoc holds a TL011 (outputs kept in a list), a TL013 (more
// sizes than the CUDA graphs record without warning), a TL016 (a module's
// outputs bound in a loop in grad mode) and a TL017 (the first call
// inside a capture; a bare @torch.compile is no call the repro can take
// its settings from, so the decorator is called).
const hazardsDoc = `import torch


@torch.compile(mode="reduce-overhead")
def double(x):
    return x * 2


def collect(x):
    outs = []
    for _ in range(4):
        outs.append(double(x))
    return outs


model = torch.compile(torch.nn.Linear(16, 16), mode="reduce-overhead")
for bs in [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48]:
    model(torch.randn(bs, 16))

net = torch.compile(torch.nn.Linear(16, 16), mode="reduce-overhead")
for _ in range(12):
    y = net(torch.randn(4, 16))


@torch.compile()
def sine(x):
    return x.sin()


def capture(x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = sine(x)
    return g, y
`

// hazardEngine starts an engine whose default target "shipped" has the
// torch-shaped fixture with the shapes torch 2.11 ships (the overlay the
// hazard checks are tested on), and a second target "debian" with
// Debian's torch 1.13, where repros run on the stand-in; it opens
// hazards.py.
func hazardEngine(t *testing.T, n Notifier) (*Engine, *Snapshot) {
	t.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	root := t.TempDir()
	site := filepath.Join(root, "site")
	for _, src := range []string{filepath.Join("..", "testdata", "site"), filepath.Join("diagnose", "testdata", "hazards", "shipped")} {
		if err := os.MkdirAll(site, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-R", src+"/.", site).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", src, err, out)
		}
	}
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, "hazards.py")
	if err := os.WriteFile(path, []byte(hazardsDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	eng := initEngine(t, n, root, ws, "shipped", map[string]any{
		"shipped": map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site}},
		"debian":  map[string]any{"python": benchPython},
	})
	return eng, eng.DidOpen(context.Background(), source.FileURI(path), "", 1, hazardsDoc)
}

// TestHazardReproActions: on a TL011 diagnostic the code actions run the
// kept-outputs repro, on TL013 the varying-sizes repro, each of the
// compile call before it, on the default target, with the user's code
// and on every target; a range on neither offers neither.
func TestHazardReproActions(t *testing.T) {
	t.Parallel()
	eng, doc := hazardEngine(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	diags, err := eng.Diagnostics(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]Diagnostic{}
	for _, d := range diags {
		found[strings.Fields(d.Code)[0]] = d
	}
	decorator := lineOf(t, hazardsDoc, "@torch.compile")
	compiled := lineOf(t, hazardsDoc, "model = torch.compile")
	tests := []struct {
		code, name string
		callLine   int
	}{
		{"TL011", "kept-outputs", decorator},
		{"TL013", "varying-sizes", compiled},
		{"TL016", "pending-backward", lineOf(t, hazardsDoc, "net = torch.compile")},
		{"TL017", "first-call-in-capture", lineOf(t, hazardsDoc, "def sine") - 1},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			d, ok := found[tt.code]
			if !ok {
				t.Fatalf("no %s among %v", tt.code, diags)
			}
			acts, err := eng.CodeActions(ctx, doc, d.Range, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]RunArgs{
				"Run " + tt.name + " repro on shipped":      {URI: doc.URI(), Line: tt.callLine, Hazard: tt.code},
				"Run " + tt.name + " repro with this code":  {URI: doc.URI(), Line: tt.callLine, Hazard: tt.code, Own: true},
				"Run " + tt.name + " repro on every target": {URI: doc.URI(), Line: tt.callLine, Hazard: tt.code, All: true},
			}
			var titles []string
			for _, a := range acts {
				titles = append(titles, a.Title)
				w, ok := want[a.Title]
				if !ok {
					continue
				}
				delete(want, a.Title)
				if a.Kind != KindRepro || a.Command == nil || a.Command.Name != CommandRepro || len(a.Command.Arguments) != 1 || a.Command.Arguments[0] != w {
					t.Errorf("%q: kind %s command %+v; want %s with %+v", a.Title, a.Kind, a.Command, CommandRepro, w)
				}
				if strings.HasPrefix(a.Title, "Run threaded repro") {
					t.Errorf("threaded repro offered on %s, away from the compile call", tt.code)
				}
			}
			for title := range want {
				t.Errorf("no action %q among %q", title, titles)
			}
		})
	}
	// The compile call itself: the threaded repro, no hazard's.
	acts, err := eng.CodeActions(ctx, doc, Range{Start: Position{Line: compiled, Column: 10}, End: Position{Line: compiled, Column: 10}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if strings.Contains(a.Title, "kept-outputs") || strings.Contains(a.Title, "varying-sizes") || strings.Contains(a.Title, "pending-backward") || strings.Contains(a.Title, "first-call-in-capture") {
			t.Errorf("%q offered on the compile call, away from its diagnostic", a.Title)
		}
	}
}

// TestHazardReproRuns runs each hazard's repro through the runner, as
// the code action does, on Debian's torch (the stand-in): the report is
// the hazard's, and the note left on the compile call says so.
func TestHazardReproRuns(t *testing.T) {
	t.Parallel()
	eng, doc := hazardEngine(t, newRunNotes(false))
	tests := []struct {
		hazard, title string
		line          int
		want          []string
	}{
		{"TL011", "kept-outputs repro of hazards.py:%d on debian", lineOf(t, hazardsDoc, "@torch.compile"), []string{
			"## torch.compile kept-outputs repro (TL011) on `debian`", "| kept-outputs | **hazard shown** |",
			"- kept-outputs: kept outputs overwritten: 3 of 4 read wrong — the hazard TL011 describes.",
			"- kept-outputs-cloned: cloned: 4 of 4 right."}},
		{"TL013", "varying-sizes repro of hazards.py:%d on debian", lineOf(t, hazardsDoc, "model = torch.compile"), []string{
			"## torch.compile varying-sizes repro (TL013) on `debian`", "| sizes | **hazard shown** |",
			"12 CUDA graphs recorded, past cudagraph_dynamic_shape_warn_limit (8)", "We have observed 9 distinct sizes",
			"- sizes-bucketed: bucketed sizes: 12 sizes padded to 5"}},
		{"TL016", "pending-backward repro of hazards.py:%d on debian", lineOf(t, hazardsDoc, "net = torch.compile"), []string{
			"## torch.compile pending-backward repro (TL016) on `debian`", "| pending-backward | **hazard shown** |",
			"- pending-backward: pending backwards: 12 calls, torch warned (fast path missed), none replayed a CUDA graph — the hazard TL016 describes.",
			"- pending-backward-no-grad: no_grad: 12 calls, no warning, 11 replayed a CUDA graph."}},
		{"TL017", "first-call-in-capture repro of hazards.py:%d on debian", lineOf(t, hazardsDoc, "def sine") - 1, []string{
			"## torch.compile first-call-in-capture repro (TL017) on `debian`", "| first-call-in-capture | **hazard shown** |",
			"- first-call-in-capture: first call in capture: raised BackendCompilerFailed — the hazard TL017 describes.",
			"- first-call-in-capture-warmed: warmed up (3 calls): captured, 4 of 4 replays right."}},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		res, err := eng.Repro(ctx, RunArgs{URI: doc.URI(), Line: tt.line, Target: "debian", StandIn: true, Hazard: tt.hazard, Wait: true})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tt.hazard, err)
		}
		if want := strings.Replace(tt.title, "%d", strconv.Itoa(tt.line+1), 1); res.Title != want {
			t.Errorf("%s: title %q, want %q", tt.hazard, res.Title, want)
		}
		for _, w := range tt.want {
			if !strings.Contains(res.Markdown, w) {
				t.Errorf("%s: report lacks %q:\n%s", tt.hazard, w, res.Markdown)
			}
		}
		if strings.Contains(res.Markdown, "| threads |") {
			t.Errorf("%s: the threading variants ran:\n%s", tt.hazard, res.Markdown)
		}
		notes := eng.runs.Notes(doc)
		if len(notes) != 1 || !strings.HasPrefix(strings.ToLower(notes[0].Message), strings.Split(tt.title, " of ")[0]+": ") || notes[0].Severity != SeverityWarning {
			t.Errorf("%s: note %+v", tt.hazard, notes)
		}
	}
}
