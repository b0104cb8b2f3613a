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

// With an empty cache the first definition comes from the on-demand tree;
// once the mirror is ready, answers come from it.
func TestFirstAnswerOnDemandThenMirror(t *testing.T) {
	t.Parallel()
	eng := torchEngine(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	text := "import torch\nfrom torch import nn\nnn.Linear(4, 4)\n"
	doc := eng.DidOpen(ctx, "file:///work/od.py", 1, text)
	p := posOf(t, text, "nn.Linear", 0, 3)
	locs, err := eng.Definition(ctx, doc, p)
	if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].Path, "torch/nn/modules/linear.py") {
		t.Fatalf("first definition = %+v, %v", locs, err)
	}
	if !strings.Contains(locs[0].Path, string(filepath.Separator)+"ondemand"+string(filepath.Separator)) {
		t.Errorf("first definition %s is not from the on-demand tree", locs[0].Path)
	}
	s, err := eng.session("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Package(ctx, "torch"); err != nil {
		t.Fatal(err)
	}
	locs, err = eng.Definition(ctx, doc, p)
	if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].Path, "torch/nn/modules/linear.py") {
		t.Fatalf("definition after the mirror = %+v, %v", locs, err)
	}
	if strings.Contains(locs[0].Path, string(filepath.Separator)+"ondemand"+string(filepath.Separator)) {
		t.Errorf("definition %s still from the on-demand tree once the mirror is ready", locs[0].Path)
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
	h, err := eng.Hover(ctx, doc, pos)
	if err != nil || h == nil {
		t.Fatalf("hover = %v, %v", h, err)
	}
	if !strings.Contains(h.Markdown, string(filepath.Separator)+"ondemand"+string(filepath.Separator)) {
		t.Fatalf("the first hover is not from the on-demand tree:\n%s", h.Markdown)
	}
	if strings.Contains(h.Markdown, "lowering") {
		t.Errorf("the on-demand hover shows a compiler stack from a partial tree:\n%s", h.Markdown)
	}
	if n := len(globAll(t, filepath.Join(eng.opts.Dirs.Cache, "ondemand"), "opimpl.bin")); n != 0 {
		t.Errorf("an op table was scanned from the on-demand tree")
	}
	waitMirror(ctx, t, eng, "torch")
	h, err = eng.Hover(ctx, doc, pos)
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
