package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestDiagnosticsAndQuickFixOnTheWire: diagnostics reach the editor
// unasked, for the version it has, with related information as file URIs
// in the mirror; the quick fix comes back as a workspace edit in UTF-16
// positions, and once the editor applies it the next version's
// diagnostics no longer hold the finding. What is found and where is
// tested by server/testdata/markers/fixture_diagnostics.txtar.
func TestDiagnosticsAndQuickFixOnTheWire(t *testing.T) {
	t.Parallel()
	env := start(t, options{settings: fixtureSettings(t), client: lsptest.Options{ShowDocument: true, RelatedInformation: true}})
	uri := env.OpenFile("train.py")

	p := env.AwaitDiagnostics(uri, func(d lsptest.Diagnostics) bool { return d.Has("TL001") })
	var tl001 *lsptest.Diagnostic
	for i, d := range p.Diagnostics {
		if strings.HasPrefix(string(d.Code), "TL001") {
			tl001 = &p.Diagnostics[i]
		}
	}
	if tl001 == nil {
		t.Fatalf("no TL001 among %+v", p.Diagnostics)
	}
	if tl001.Source != "torchlsp" || tl001.Severity == 0 || len(tl001.RelatedInformation) == 0 {
		t.Errorf("TL001 = %+v, want source torchlsp, a severity and related information", tl001)
	}
	for _, r := range tl001.RelatedInformation {
		if path := uriPath(t, r.Location.URI); !strings.HasPrefix(path, env.Sandbox.Cache) {
			t.Errorf("related information outside the mirror: %s", path)
		}
	}

	var fix *lsptest.CodeAction
	sawRepro := false
	actions := env.CodeActions(uri, tl001.Range)
	for i, a := range actions {
		sawRepro = sawRepro || (a.Command != nil && a.Command.Command == "torchlsp.repro")
		if a.Edit != nil && a.IsPreferred && fix == nil {
			fix = &actions[i]
		}
	}
	if !sawRepro {
		t.Error("no repro action on the compile call")
	}
	if fix == nil || fix.Kind != "quickfix" || len(fix.Edit.Changes[uri]) == 0 {
		t.Fatalf("no preferred quick fix with edits for %s among %+v", uri, actions)
	}
	env.ApplyEdits(uri, fix.Edit.Changes[uri])
	env.AwaitDiagnostics(uri, func(d lsptest.Diagnostics) bool { return !d.Has("TL001") })
	env.Shutdown()
}

// TestReproCommand runs the repro action on Debian's torch 1.13, where the
// stand-in backend fails the way CUDA graphs do, and checks the report,
// the files kept, the report opened in the editor and the summary
// diagnostic.
func TestReproCommand(t *testing.T) {
	t.Parallel()
	env := start(t, options{settings: debianSettings(t), client: lsptest.Options{ShowDocument: true}})
	uri := env.OpenFile("train.py")
	line := env.At(uri, "torch.compile(model", 0).Line
	var res struct {
		Markdown string `json:"markdown"`
		Path     string `json:"path"`
	}
	if err := env.Editor.ExecuteCommand(env.CtxFor(5*time.Minute), "torchlsp.repro", []any{map[string]any{"uri": uri, "line": line, "standIn": true, "wait": true}}, &res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| threads | **FAIL**", "AssertionError", "| main-thread | ok", "| cudagraphs-off | ok", "wrong"} {
		if !strings.Contains(res.Markdown, want) {
			t.Errorf("report lacks %q:\n%s", want, res.Markdown)
		}
	}
	dir := filepath.Dir(res.Path)
	if !strings.HasPrefix(dir, filepath.Join(env.Sandbox.Workdir, ".torchlsp", "repros")+string(filepath.Separator)) {
		t.Fatalf("report %s is not under the workspace's .torchlsp/repros", res.Path)
	}
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("run directory %s: %v %v, want mode 0700", dir, info.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) < 10 {
		t.Errorf("run directory holds %d files, want script, stdout, stderr and result for each variant", len(entries))
	}
	env.Await(lsptest.ServerRequest("window/showDocument", "report.md"))
	env.Await(lsptest.DiagnosticsAt(uri, 0, func(d lsptest.Diagnostics) bool { return d.Has("TL100") }))
	env.Shutdown()
}
