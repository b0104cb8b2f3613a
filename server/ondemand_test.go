package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
)

// torchEngine is an engine whose default target sees torch: Debian's, or
// the torch 2.11 tree on PYTHONPATH when site is set.
func torchEngine(t testing.TB, site string) *Engine {
	t.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	root := t.TempDir()
	eng := New(Options{Dirs: config.Dirs{Config: filepath.Join(root, "c"), Cache: filepath.Join(root, "k"), State: filepath.Join(root, "s")}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	target := map[string]any{"python": benchPython}
	if site != "" {
		target["env"] = map[string]string{"PYTHONPATH": site}
	}
	settings, _ := json.Marshal(map[string]any{"defaultTarget": "fx", "targets": map[string]any{"fx": target}})
	if err := eng.Initialize(context.Background(), InitializeParams{InitializationOptions: settings}); err != nil {
		t.Fatal(err)
	}
	return eng
}

// With an empty cache the first definition comes from the on-demand tree,
// later ones from the mirror, and both name the same file: the path the
// editor got first stays valid, holds the same text, and is the one every
// later answer names (no second copy of the file in the editor).
func TestFirstAnswerOnDemandThenMirror(t *testing.T) {
	t.Parallel()
	eng := torchEngine(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	text := "import torch\nfrom torch import nn\nnn.Linear(4, 4)\n"
	doc := eng.DidOpen(ctx, "file:///work/od.py", "", 1, text)
	p := posOf(t, text, "nn.Linear", 0, 3)
	locs, err := eng.Definition(ctx, doc, p)
	if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].Path, "torch/nn/modules/linear.py") {
		t.Fatalf("first definition = %+v, %v", locs, err)
	}
	first, _, err := eng.nav.DefinitionAt(ctx, doc, p)
	if err != nil || first == nil || first.LocalPath != locs[0].Path {
		t.Fatalf("first answer = %+v, %v; the definition named %s", first, err, locs[0].Path)
	}
	if !first.Package.Partial() {
		t.Fatalf("the first answer (%s) did not come on demand", first.LocalPath)
	}
	want, err := os.ReadFile(first.LocalPath)
	if err != nil {
		t.Fatal(err)
	}
	// The editor opens what it was given, and navigates in it.
	opened := eng.DidOpen(ctx, "file://"+first.LocalPath, "", 1, string(want))
	waitMirror(ctx, t, eng, "torch")
	locs, err = eng.Definition(ctx, doc, p)
	if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].Path, "torch/nn/modules/linear.py") {
		t.Fatalf("definition after the mirror = %+v, %v", locs, err)
	}
	if locs[0].Path != first.LocalPath {
		t.Errorf("once mirrored the definition is in %s, the first answer was in %s: two paths for one file", locs[0].Path, first.LocalPath)
	}
	got, err := os.ReadFile(first.LocalPath)
	if err != nil || string(got) != string(want) {
		t.Errorf("the first answer's file after the mirror: %v, same text: %v", err, string(got) == string(want))
	}
	lt, _, err := eng.nav.DefinitionAt(ctx, eng.Snapshot(opened.URI()), posOf(t, string(want), "class Linear(Module)", 0, len("class Linear(")))
	if err != nil || lt == nil || lt.Package.Partial() || !strings.HasSuffix(lt.LocalPath, "torch/nn/modules/module.py") {
		t.Errorf("navigation in the file first answered, once mirrored: %+v, %v", lt, err)
	}
}

// waitMirror waits until the default target's complete mirror of a
// package is ready (answers before it come from the on-demand tree).
func waitMirror(ctx context.Context, t testing.TB, eng *Engine, name string) {
	t.Helper()
	s, err := eng.session("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Package(ctx, name); err != nil {
		t.Fatal(err)
	}
}

// What needs the whole tree (the compiled-op table) is never taken from
// an on-demand one: the first hover leaves it out, the mirror's has it.
func TestOnDemandLeavesOutWholeTreeFeatures(t *testing.T) {
	eng, doc := startImplEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pos := implPos(t, implDoc, "torch.add(x", "add")
	first, _, err := eng.nav.DefinitionAt(ctx, doc, pos)
	if err != nil || first == nil {
		t.Fatalf("first answer = %v, %v", first, err)
	}
	if !first.Package.Partial() {
		t.Fatalf("the first answer is not from the on-demand tree: %s", first.LocalPath)
	}
	if md := eng.nav.CompilerStackSection(ctx, first); strings.Contains(md, "lowering") {
		t.Errorf("the on-demand answer shows a compiler stack from a partial tree:\n%s", md)
	}
	if n := len(globAll(t, first.Package.Mirror().Root, "opimpl.bin")); n != 0 {
		t.Errorf("an op table was scanned from the on-demand tree")
	}
	waitMirror(ctx, t, eng, "torch")
	h, err := eng.Hover(ctx, doc, pos)
	if err != nil || h == nil || !strings.Contains(h.Markdown, "lowering") {
		t.Errorf("the mirror's hover lacks the compiler stack: %v %v", h, err)
	}
}

func globAll(t *testing.T, root, name string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == name {
			out = append(out, p)
		}
		return nil
	})
	return out
}
