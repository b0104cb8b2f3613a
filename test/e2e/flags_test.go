package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

type publishedDiagnostics struct {
	URI         string `json:"uri"`
	Diagnostics []struct {
		Range              lsptest.Range `json:"range"`
		Code               string        `json:"code"`
		Message            string        `json:"message"`
		Severity           int           `json:"severity"`
		RelatedInformation []struct {
			Location lsptest.Location `json:"location"`
			Message  string           `json:"message"`
		} `json:"relatedInformation"`
	} `json:"diagnostics"`
}

// awaitDiagnostics waits for diagnostics of uri that satisfy ok.
func awaitDiagnostics(t *testing.T, s *session, uri string, ok func(publishedDiagnostics) bool) publishedDiagnostics {
	t.Helper()
	var got publishedDiagnostics
	_, err := s.client.Await(s.ctx(60*time.Second), func(e lsptest.Event) bool {
		if e.Method != "textDocument/publishDiagnostics" {
			return false
		}
		var p publishedDiagnostics
		if json.Unmarshal(e.Params, &p) != nil || p.URI != uri {
			return false
		}
		got = p
		return ok(p)
	})
	if err != nil {
		t.Fatalf("diagnostics for %s: %v (last: %+v)", uri, err, got)
	}
	return got
}

func hasCode(p publishedDiagnostics, prefix string) bool {
	for _, d := range p.Diagnostics {
		if strings.HasPrefix(d.Code, prefix) {
			return true
		}
	}
	return false
}

// TestThreadedCompileDiagnostic: the threaded reduce-overhead pattern gets
// TL001 with the torch lines it rests on, its quick fix removes it, and
// the repro action is offered on the call.
func TestThreadedCompileDiagnostic(t *testing.T) {
	s := start(t, sessionOptions{settings: fixtureSettings(t), client: lsptest.Options{ShowDocument: true}})
	uri, text := s.open("train.py")

	p := awaitDiagnostics(t, s, uri, func(p publishedDiagnostics) bool { return hasCode(p, "TL001") })
	var diagLine uint32
	var diagRange lsptest.Range
	for _, d := range p.Diagnostics {
		if !strings.HasPrefix(d.Code, "TL001") {
			continue
		}
		diagLine, diagRange = d.Range.Start.Line, d.Range
		if len(d.RelatedInformation) == 0 {
			t.Error("TL001 cites no torch lines")
		}
		for _, r := range d.RelatedInformation {
			if path := uriPath(t, r.Location.URI); !strings.HasPrefix(path, s.dirs.Cache) {
				t.Errorf("related information outside the mirror: %s", path)
			}
		}
	}
	wantLine, _ := at(t, text, "torch.compile(model", 0, 0)
	if diagLine != wantLine {
		t.Errorf("TL001 on line %d, want the compile call's line %d", diagLine, wantLine)
	}

	var actions []struct {
		Title       string `json:"title"`
		IsPreferred bool   `json:"isPreferred"`
		Edit        *struct {
			Changes map[string][]struct {
				Range   lsptest.Range `json:"range"`
				NewText string        `json:"newText"`
			} `json:"changes"`
		} `json:"edit"`
		Command *struct {
			Command   string            `json:"command"`
			Arguments []json.RawMessage `json:"arguments"`
		} `json:"command"`
	}
	if err := s.client.Call(s.ctx(30*time.Second), "textDocument/codeAction", map[string]any{
		"textDocument": map[string]string{"uri": uri},
		"range":        diagRange,
		"context":      map[string]any{"diagnostics": []any{}},
	}, &actions); err != nil {
		t.Fatal(err)
	}
	var fixed string
	sawRepro := false
	for _, a := range actions {
		if a.Command != nil && a.Command.Command == "torchlsp.repro" {
			sawRepro = true
		}
		if a.Edit == nil || !a.IsPreferred || fixed != "" {
			continue
		}
		fixed = applyEdits(t, text, a.Edit.Changes[uri])
	}
	if !sawRepro {
		t.Error("no repro action on the compile call")
	}
	if fixed == "" {
		t.Fatalf("no preferred quick fix among %+v", actions)
	}
	if err := s.client.DidChange(uri, 2, lsptest.Change{Text: fixed}); err != nil {
		t.Fatal(err)
	}
	awaitDiagnostics(t, s, uri, func(p publishedDiagnostics) bool { return !hasCode(p, "TL001") })
	s.shutdown()
}

// applyEdits applies non-overlapping LSP edits to ASCII-positioned text
// (the edits of a quick fix touch the compile call's line only).
func applyEdits(t *testing.T, text string, edits []struct {
	Range   lsptest.Range `json:"range"`
	NewText string        `json:"newText"`
}) string {
	t.Helper()
	lines := strings.SplitAfter(text, "\n")
	offset := func(p lsptest.Position) int {
		n := 0
		for i := 0; i < int(p.Line); i++ {
			n += len(lines[i])
		}
		// Columns are UTF-16; the compile call's line is ASCII.
		return n + int(p.Character)
	}
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		text = text[:offset(e.Range.Start)] + e.NewText + text[offset(e.Range.End):]
	}
	return text
}

// TestFlagReferencesAndHover: a config flag's references are the places
// torch reads it plus its uses in open documents; hovering a string key
// names the flag.
func TestFlagReferencesAndHover(t *testing.T) {
	s := start(t, sessionOptions{settings: fixtureSettings(t)})
	uri, text := s.open("train.py")
	line, col := at(t, text, "triton.cudagraph_trees = False", 0, 7)
	var locs []lsptest.Location
	err := s.client.Call(s.ctx(30*time.Second), "textDocument/references", map[string]any{
		"textDocument": map[string]string{"uri": uri},
		"position":     map[string]uint32{"line": line, "character": col},
		"context":      map[string]bool{"includeDeclaration": true},
	}, &locs)
	if err != nil {
		t.Fatal(err)
	}
	var inTorch, inDoc int
	for _, l := range locs {
		if l.URI == uri {
			inDoc++
		} else if strings.Contains(l.URI, "/site/torch/") {
			inTorch++
		}
	}
	// The fixture's compile_fx.py reads the flag in one gate; config.py
	// defines it.
	if inTorch < 2 || inDoc != 1 {
		t.Errorf("references: %d in torch, %d in the document: %+v", inTorch, inDoc, locs)
	}

	const u = "untitled:opts"
	src := "import torch\nf = torch.compile(lambda x: x, options={\"triton.cudagraphs\": False})\n"
	if err := s.client.DidOpen(u, "python", src); err != nil {
		t.Fatal(err)
	}
	h, err := s.client.Hover(s.ctx(30*time.Second), u, 1, 50)
	if err != nil || h == nil || !strings.Contains(h.Contents.Value, "torch._inductor.config.triton.cudagraphs") || !strings.Contains(h.Contents.Value, "TORCHINDUCTOR_CUDAGRAPHS") {
		t.Fatalf("hover on an options key = %+v, %v", h, err)
	}
	s.shutdown()
}

// TestNoCompileOnOldTorch: Debian's torch 1.13 has no torch.compile, and
// the server says so rather than inventing flags.
func TestNoCompileOnOldTorch(t *testing.T) {
	s := start(t, sessionOptions{settings: debianSettings(t)})
	uri, _ := s.open("train.py")
	p := awaitDiagnostics(t, s, uri, func(p publishedDiagnostics) bool { return len(p.Diagnostics) > 0 })
	for _, d := range p.Diagnostics {
		if !strings.HasPrefix(d.Code, "TL005") {
			t.Errorf("diagnostic other than no-torch-compile on torch 1.13: %s %s", d.Code, d.Message)
		} else if !strings.Contains(d.Message, "1.13") {
			t.Errorf("TL005 does not name the version: %s", d.Message)
		}
	}
	s.shutdown()
}

// TestReproCommand runs the repro action on Debian's torch 1.13, where the
// stand-in backend fails the way CUDA graphs do, and checks the report,
// the files kept, and the summary diagnostic.
func TestReproCommand(t *testing.T) {
	ws := t.TempDir()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "test", "e2e", "testdata", "workspace", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "train.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, sessionOptions{ws: ws, settings: debianSettings(t), client: lsptest.Options{ShowDocument: true}})
	uri, text := s.open("train.py")
	line, _ := at(t, text, "torch.compile(model", 0, 0)
	var res struct {
		Markdown string `json:"markdown"`
		Path     string `json:"path"`
	}
	err = s.client.Call(s.ctx(5*time.Minute), "workspace/executeCommand", map[string]any{
		"command":   "torchlsp.repro",
		"arguments": []any{map[string]any{"uri": uri, "line": line}},
	}, &res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| threads | **FAIL**", "AssertionError", "| main-thread | ok", "| cudagraphs-off | ok", "wrong"} {
		if !strings.Contains(res.Markdown, want) {
			t.Errorf("report lacks %q:\n%s", want, res.Markdown)
		}
	}
	dir := filepath.Dir(res.Path)
	if !strings.HasPrefix(dir, filepath.Join(ws, ".torchlsp", "repros")+string(filepath.Separator)) {
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
	if _, err := s.client.Await(s.ctx(10*time.Second), func(e lsptest.Event) bool {
		return e.Method == "window/showDocument" && strings.Contains(string(e.Params), "report.md")
	}); err != nil {
		t.Errorf("the report was not opened: %v", err)
	}
	awaitDiagnostics(t, s, uri, func(p publishedDiagnostics) bool { return hasCode(p, "TL100") })
	s.shutdown()
}
