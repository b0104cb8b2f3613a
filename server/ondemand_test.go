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
			if m, err := remote.LookupMirror(s.env.cacheDir, s.spec, "torch"); err == nil && m != nil {
				t.Errorf("the on-demand tree %s was taken for a mirror", m.Root)
			}
			if want := remote.MirrorDir(s.env.cacheDir, s.spec, ps.info); ps.mirror.Root != want {
				t.Errorf("the on-demand tree is in %s, want where its mirror will be, %s", ps.mirror.Root, want)
			}
		})
	}
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
	doc := eng.DidOpen(ctx, "file:///work/od.py", 1, text)
	p := posOf(t, text, "nn.Linear", 0, 3)
	first, err := eng.lookup(ctx, doc, p)
	if err != nil || first == nil || !strings.HasSuffix(first.localPath, "torch/nn/modules/linear.py") {
		t.Fatalf("first answer = %+v, %v", first, err)
	}
	if !first.pkg.partial {
		t.Fatalf("the first answer (%s) did not come on demand", first.localPath)
	}
	want, err := os.ReadFile(first.localPath)
	if err != nil {
		t.Fatal(err)
	}
	// The editor opens what it was given, and navigates in it.
	opened := eng.DidOpen(ctx, "file://"+first.localPath, 1, string(want))
	waitMirror(ctx, t, eng, "torch")
	locs, err := eng.Definition(ctx, doc, p)
	if err != nil || len(locs) != 1 {
		t.Fatalf("definition after the mirror = %+v, %v", locs, err)
	}
	if locs[0].Path != first.localPath {
		t.Errorf("once mirrored the definition is in %s, the first answer was in %s: two paths for one file", locs[0].Path, first.localPath)
	}
	got, err := os.ReadFile(first.localPath)
	if err != nil || string(got) != string(want) {
		t.Errorf("the first answer's file after the mirror: %v, same text: %v", err, string(got) == string(want))
	}
	lt, err := eng.lookup(ctx, eng.Snapshot(opened.URI()), posOf(t, string(want), "class Linear(Module)", 0, len("class Linear(")))
	if err != nil || lt == nil || lt.pkg.partial || !strings.HasSuffix(lt.localPath, "torch/nn/modules/module.py") {
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
	first, err := eng.lookup(ctx, doc, pos)
	if err != nil || first == nil {
		t.Fatalf("first answer = %v, %v", first, err)
	}
	if !first.pkg.partial {
		t.Fatalf("the first answer is not from the on-demand tree: %s", first.localPath)
	}
	if md := eng.compilerStackSection(ctx, first); strings.Contains(md, "lowering") {
		t.Errorf("the on-demand answer shows a compiler stack from a partial tree:\n%s", md)
	}
	if n := len(globAll(t, first.pkg.mirror.Root, "opimpl.bin")); n != 0 {
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

// removePartial removes a version's partial tree (files read on demand,
// no manifest) unused for partialMaxAge, never a mirror, a directory being
// written, or the tree in use.
func TestRemovePartial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-2 * partialMaxAge)
	mk := func(name string, manifest bool, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "site", "torch"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "site", "torch", "x.py"), []byte("x = 1\n"), 0o444); err != nil {
			t.Fatal(err)
		}
		if manifest {
			if err := os.WriteFile(filepath.Join(p, manifestFile), []byte("{}"), 0o444); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(filepath.Join(p, "site", "torch"), 0o555); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(p, "site"), mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk("torch-1.0-aaaa", false, old)
	inUse := mk("torch-2.0-bbbb", false, old)
	fresh := mk("torch-3.0-cccc", false, time.Now())
	mirror := mk("torch-4.0-dddd", true, old)
	writing := mk(".tmp-torch-5", false, old)
	removePartial(dir, inUse, time.Now().Add(-partialMaxAge))
	for p, want := range map[string]bool{stale: false, inUse: true, fresh: true, mirror: true, writing: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}
