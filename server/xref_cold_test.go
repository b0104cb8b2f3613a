package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
)

// stalledMirrorEngine is torchEngine whose target's bulk mirror does not
// start until the returned release is called: the target's interpreter
// is a wrapper that holds the mirror's process (named torchlsp_mirror in
// its argv) as a stalled link would, and runs every other one at once.
// The workspace folder holds the files given.
func stalledMirrorEngine(t *testing.T, files map[string]string) (eng *Engine, root string, release func()) {
	t.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/torch/_tensor_str.py"); err != nil {
		t.Skip("Debian's python3-torch is not installed")
	}
	dir := t.TempDir()
	gate := filepath.Join(dir, "release")
	wrapper := filepath.Join(dir, "python3")
	script := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in *torchlsp_mirror*) while [ ! -e %q ]; do sleep 0.05; done ;; esac\nexec %s \"$@\"\n", gate, benchPython)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(dir, "ws")
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eng = New(Options{Dirs: config.Dirs{Config: filepath.Join(dir, "c"), Cache: filepath.Join(dir, "k"), State: filepath.Join(dir, "s")}})
	release = func() {
		if err := os.WriteFile(gate, nil, 0o644); err != nil && !os.IsExist(err) {
			t.Error(err)
		}
	}
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings, _ := json.Marshal(map[string]any{"defaultTarget": "fx", "targets": map[string]any{"fx": map[string]any{"python": wrapper}}})
	if err := eng.Initialize(context.Background(), InitializeParams{WorkspaceFolders: []string{root}, InitializationOptions: settings}); err != nil {
		t.Fatal(err)
	}
	return eng, root, release
}

// symbolQueries are workspace-symbol queries asked before and after the
// mirror: an exact name, a fuzzy one, one with a container.
var symbolQueries = []string{"set_printoptions", "tnsrstr", "nn.Linear"}

// noNameQuery is a workspace-symbol query with no name: every file may
// match it, so the complete mirror answers it, waited for.
const noNameQuery = "torch.nn."

// symbolKeys are workspace symbols as comparable strings.
func symbolKeys(syms []SymbolInfo) []string {
	out := make([]string, 0, len(syms))
	for _, s := range syms {
		out = append(out, fmt.Sprintf("%s %s %s:%d", s.Name, s.Container, s.Location.Path, s.Location.Range.Start.Line))
	}
	return out
}

// locationKeys are locations as comparable strings.
func locationKeys(locs []Location) []string {
	out := make([]string, 0, len(locs))
	for _, l := range locs {
		out = append(out, fmt.Sprintf("%s:%d:%d", l.Path, l.Range.Start.Line, l.Range.Start.Column))
	}
	slices.Sort(out)
	return out
}

// On a cold start the first references and incoming calls do not wait for
// the bulk mirror: the target says which files name the definition, and
// only those are read. The answer is the one the complete mirror gives,
// re-exports through the workspace's own modules included (read from the
// workspace's imports while the model, which needs the whole mirror,
// is not built).
func TestColdReferencesBeforeTheMirror(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"mylib/__init__.py": "from torch import set_printoptions as configure\n",
		"app.py":            "import torch\nfrom mylib import configure\n\ntorch.set_printoptions(precision=2)\nconfigure(precision=3)\n",
	}
	eng, root, release := stalledMirrorEngine(t, files)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	app := filepath.Join(root, "app.py")
	doc := eng.DidOpen(ctx, "file://"+app, "", 1, files["app.py"])
	pos := posOf(t, files["app.py"], "torch.set_printoptions(", 0, len("torch.set_"))
	s, err := eng.session("")
	if err != nil {
		t.Fatal(err)
	}

	cold, err := eng.References(ctx, doc, pos, true)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mirrored("torch") {
		t.Fatal("the mirror completed while it was held")
	}
	items, err := eng.PrepareCallHierarchy(ctx, doc, pos)
	if err != nil || len(items) != 1 {
		t.Fatalf("call hierarchy item: %+v, %v", items, err)
	}
	coldCalls, err := eng.IncomingCalls(ctx, items[0])
	if err != nil {
		t.Fatal(err)
	}
	coldSymbols := map[string][]string{}
	for _, q := range symbolQueries {
		syms, err := eng.WorkspaceSymbols(ctx, q)
		if err != nil {
			t.Fatalf("workspace symbol %q: %v", q, err)
		}
		coldSymbols[q] = symbolKeys(syms)
	}
	if s.Mirrored("torch") {
		t.Fatal("the mirror completed while it was held")
	}

	type answer struct {
		syms []SymbolInfo
		err  error
	}
	waited := make(chan answer, 1)
	go func() {
		syms, err := eng.WorkspaceSymbols(ctx, noNameQuery)
		waited <- answer{syms, err}
	}()
	release()
	waitMirror(ctx, t, eng, "torch")
	warm, err := eng.References(ctx, doc, pos, true)
	if err != nil {
		t.Fatal(err)
	}
	warmCalls, err := eng.IncomingCalls(ctx, items[0])
	if err != nil {
		t.Fatal(err)
	}
	noName := <-waited
	if noName.err != nil {
		t.Fatalf("workspace symbol %q asked before the mirror: %v", noNameQuery, noName.err)
	}
	coldSymbols[noNameQuery] = symbolKeys(noName.syms)
	for _, q := range append(symbolQueries, noNameQuery) {
		syms, err := eng.WorkspaceSymbols(ctx, q)
		if err != nil {
			t.Fatalf("workspace symbol %q: %v", q, err)
		}
		if got, want := coldSymbols[q], symbolKeys(syms); !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("workspace symbol %q before the mirror:\n%s\nonce mirrored:\n%s", q, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	got, want := locationKeys(cold), locationKeys(warm)
	if !slices.Equal(got, want) {
		t.Errorf("references before the mirror:\n%s\nonce mirrored:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var inTorch, inWorkspace, throughMylib int
	for _, l := range cold {
		switch {
		case strings.Contains(l.Path, "/torch/"):
			inTorch++
		case l.Path == app && l.Range.Start.Line == 4:
			throughMylib++ // configure(precision=3): a re-export of the workspace's own
			inWorkspace++
		case strings.HasPrefix(l.Path, root):
			inWorkspace++
		}
	}
	if inTorch < 2 || inWorkspace < 3 || throughMylib != 1 {
		t.Errorf("references before the mirror: %d in torch, %d in the workspace, %d through mylib's re-export; want at least 2, at least 3, 1:\n%s",
			inTorch, inWorkspace, throughMylib, strings.Join(got, "\n"))
	}
	callers := func(links []CallLink) []string {
		var out []string
		for _, c := range links {
			out = append(out, fmt.Sprintf("%s %s:%d (%d)", c.Item.Name, c.Item.Location.Path, c.Item.Location.Range.Start.Line, len(c.Ranges)))
		}
		slices.Sort(out)
		return out
	}
	if gc, wc := callers(coldCalls), callers(warmCalls); !slices.Equal(gc, wc) || len(gc) == 0 {
		t.Errorf("incoming calls before the mirror:\n%s\nonce mirrored:\n%s", strings.Join(gc, "\n"), strings.Join(wc, "\n"))
	}
}
