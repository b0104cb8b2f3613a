package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote"
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

type torchTree struct {
	name string
	site string // PYTHONPATH; "" for Debian's torch
}

func torchTrees(t testing.TB) []torchTree {
	trees := []torchTree{{"debian", ""}}
	if site := os.Getenv("TORCHLSP_TORCH211_SITE"); site != "" {
		trees = append(trees, torchTree{"torch211", site})
	} else {
		t.Log("TORCHLSP_TORCH211_SITE is unset: the torch 2.11 tree is not tried")
	}
	return trees
}

// The on-demand tree resolves a name from the few files on its import path,
// and is never taken for a mirror.
func TestOnDemandResolve(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/lib/python3/dist-packages/torch/__init__.py"); err != nil {
		t.Skip("Debian's python3-torch is not installed")
	}
	for _, tree := range torchTrees(t) {
		t.Run(tree.name, func(t *testing.T) {
			t.Parallel()
			eng := torchEngine(t, tree.site)
			s, err := eng.session("")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ps, err := s.openQuick(ctx, "torch", "torch.nn.Linear")
			if err != nil {
				t.Fatal(err)
			}
			// The first round trip brought the import path.
			if _, err := os.Stat(filepath.Join(ps.mirror.SiteDir, "torch", "nn", "modules", "linear.py")); err != nil {
				t.Errorf("the import path of nn.Linear was not read at once: %v", err)
			}
			for _, tt := range []struct{ name, file, line string }{
				{"torch.nn.Linear", "torch/nn/modules/linear.py", "class Linear"},
				{"torch.nn.functional.relu", "torch/nn/functional.py", "def relu"},
			} {
				res, err := ps.index.Resolve(tt.name)
				if err != nil {
					t.Fatalf("resolve %s: %v", tt.name, err)
				}
				if !strings.HasPrefix(res.Symbol.Path, ps.mirror.SiteDir) || !strings.HasSuffix(res.Symbol.Path, tt.file) {
					t.Errorf("%s in %s, want %s under %s", tt.name, res.Symbol.Path, tt.file, ps.mirror.SiteDir)
				}
				data, err := os.ReadFile(res.Symbol.Path)
				if err != nil {
					t.Fatal(err)
				}
				if line := strings.Split(string(data), "\n")[res.Symbol.Line]; !strings.Contains(line, tt.line) {
					t.Errorf("%s at line %d: %q, want %q", tt.name, res.Symbol.Line+1, line, tt.line)
				}
				if local, ok := ps.mirror.LocalPath(ps.mirror.TargetPath(res.Symbol.Path)); !ok || local != res.Symbol.Path {
					t.Errorf("%s: target path does not map back: %q %v", tt.name, local, ok)
				}
			}
			st := ps.index.Stats()
			if st.Files < 1000 || st.Parsed > 20 {
				t.Errorf("listing of %d files, %d parsed: want the whole listing and only the import path parsed", st.Files, st.Parsed)
			}
			var fetched int
			var bytes int64
			_ = filepath.Walk(ps.mirror.SiteDir, func(p string, info os.FileInfo, err error) error {
				if err == nil && info.Mode().IsRegular() {
					fetched++
					bytes += info.Size()
				}
				return nil
			})
			t.Logf("%s: %d files listed, %d parsed, %d fetched (%d bytes)", tree.name, st.Files, st.Parsed, fetched, bytes)
			if bytes > 3<<20 {
				t.Errorf("fetched %d bytes, over 3 MB", bytes)
			}
			if m, err := remote.LookupMirror(s.env.cacheDir, s.spec, "torch"); err == nil && m != nil && strings.Contains(m.Root, "ondemand") {
				t.Errorf("the on-demand tree %s was taken for a mirror", m.Root)
			}
		})
	}
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
	if _, err := s.pkg(ctx, "torch"); err != nil {
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
	if _, err := s.pkg(ctx, name); err != nil {
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
