package wsmodel

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestReexport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"pkg/__init__.py": "from .util import fetch\n",
		"pkg/util.py":     "from torch._inductor.cudagraph_trees import get_obj as fetch\nfrom torch import nn\nfrom . import helpers\nfrom .helpers import Box\n",
		"pkg/helpers.py":  "class Box:\n    pass\n",
		"app.py":          "from pkg import fetch\nfrom pkg.util import nn as layers\n",
		"loop_a.py":       "from loop_b import x\n",
		"loop_b.py":       "from loop_a import x\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Files the model's walk never reads are not modules of the lazy
	// view either: a hidden directory, an environment, a link.
	for name, text := range map[string]string{
		".hidden/__init__.py": "from torch import nn\n",
		"env/pyvenv.cfg":      "home = /usr/bin\n",
		"env/__init__.py":     "from torch import nn\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "pkg", "util.py"), filepath.Join(dir, "linked.py")); err != nil {
		t.Fatal(err)
	}
	m, _, err := testIndexer(dir, fixtureCatalog(t)).Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The model, and the imports-only view that reads the modules a
	// question names (what references use before the model is built),
	// answer alike.
	lazy := testIndexer(dir, fixtureCatalog(t)).ImportsOnly(context.Background())
	for _, tc := range []struct {
		module, name, want string
		ok                 bool
	}{
		{"pkg.util", "fetch", "torch._inductor.cudagraph_trees.get_obj", true},
		{"pkg", "fetch", "torch._inductor.cudagraph_trees.get_obj", true}, // through pkg.util
		{"app", "fetch", "torch._inductor.cudagraph_trees.get_obj", true}, // through pkg, then pkg.util
		{"app", "layers", "torch.nn", true},                               // an alias of a re-export
		{"pkg.util", "helpers", "", false},                                // a module of the workspace
		{"pkg.util", "Box", "", false},                                    // a class of the workspace
		{"pkg.util", "missing", "", false},                                // binds nothing
		{"nowhere", "fetch", "", false},                                   // no such module
		{"loop_a", "x", "", false},                                        // a cycle ends
		{".hidden", "nn", "", false},                                      // not walked
		{"env", "nn", "", false},                                          // an environment
		{"linked", "nn", "", false},                                       // a link
	} {
		got, ok := m.Reexport(tc.module, tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Reexport(%q, %q) = %q, %v; want %q, %v", tc.module, tc.name, got, ok, tc.want, tc.ok)
		}
		got, ok = lazy.Reexport(tc.module, tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ImportsOnly: Reexport(%q, %q) = %q, %v; want %q, %v", tc.module, tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
