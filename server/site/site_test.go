package site

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/source"
)

func TestSitePackagesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entries   []string
		add       []string
		leave     []string
		name      string
		wantEmpty bool
	}{
		{name: "none", entries: nil, add: nil, leave: nil},
		{name: "add", entries: []string{"einops", "numpy"}, add: []string{"einops", "numpy"}},
		{name: "leave out", entries: []string{"-sympy"}, leave: []string{"sympy"}},
		{name: "later leave wins", entries: []string{"einops", "-einops"}, leave: []string{"einops"}},
		{name: "later add wins", entries: []string{"-sympy", "sympy"}, add: []string{"sympy"}},
		{name: "duplicates", entries: []string{"a", "a", "b"}, add: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			add, leave := sitePackagesConfig(tc.entries)
			if len(add) == 0 {
				add = nil
			}
			if !reflect.DeepEqual(add, tc.add) {
				t.Errorf("add = %v, want %v", add, tc.add)
			}
			var gotLeave []string
			for n := range leave {
				gotLeave = append(gotLeave, n)
			}
			if !reflect.DeepEqual(gotLeave, tc.leave) {
				t.Errorf("leave = %v, want %v", gotLeave, tc.leave)
			}
		})
	}
}

func TestNormDist(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"typing_extensions": "typing-extensions",
		"Typing.Extensions": "typing-extensions",
		"PyYAML":            "pyyaml",
		"a--_.b":            "a-b",
	} {
		if got := normDist(in); got != want {
			t.Errorf("normDist(%q) = %q, want %q", in, got, want)
		}
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWorkspaceImports(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"main.py":                  "import os.path\nimport alpha as a\nfrom x.y import z\nfrom . import rel\nimport localmod, srcmod\ntry:\n    import fast\nexcept ImportError:\n    import slow\n",
		"localmod.py":              "import beta\n",
		"src/srcmod/__init__.py":   "def f():\n    import gamma\n",
		"stubs/types.pyi":          "import delta\n",
		"notes.txt":                "import not_python\n",
		".venv/lib/a.py":           "import hidden_venv\n",
		"env2/pyvenv.cfg":          "home = /usr/bin\n",
		"env2/lib/b.py":            "import hidden_env\n",
		"py310/conda-meta/history": "",
		"py310/lib/c.py":           "import hidden_conda\n",
		"node_modules/c.py":        "import hidden_node\n",
		"pkg/__pycache__/d.py":     "import hidden_cache\n",
		"pkg/site-packages/e.py":   "import hidden_site\n",
		"broken.py":                "import epsilon\ndef (:\n",
		"big.py":                   "import hidden_big\n" + strings.Repeat("#\n", scanMaxFileBytes/2+1),
		".git/hooks/f.py":          "import hidden_git\n",
		"deep/er/still/inside.py":  "from zeta.sub import thing\n",
	})
	writeFiles(t, outside, map[string]string{"linked.py": "import hidden_link\n", "dir/g.py": "import hidden_linkdir\n"})
	if err := os.Symlink(filepath.Join(outside, "linked.py"), filepath.Join(ws, "linked.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "dir"), filepath.Join(ws, "linkdir")); err != nil {
		t.Fatal(err)
	}
	parse := func(_ context.Context, src []byte) (*pybuf.Buffer, error) { return pybuf.Parse(src), nil }
	opened, err := source.NewStore(0, parse).Open("untitled:Untitled-1", "", 1, "import opened\n")
	if err != nil {
		t.Fatal(err)
	}
	e := New(Deps{
		CacheDir:  t.TempDir(),
		Folders:   func() []string { return []string{ws} },
		Documents: func() []*source.Snapshot { return []*source.Snapshot{opened} },
		Parse:     pybuf.Parse,
	})

	got, err := e.workspaceImports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"alpha", "beta", "delta", "epsilon", "fast", "gamma", "opened", "os", "slow", "x", "zeta"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("imports = %v\nwant      %v", got, want)
	}

	// A second scan reads only what changed.
	e.state.mu.Lock()
	before := e.state.scan[filepath.Join(ws, "localmod.py")]
	e.state.mu.Unlock()
	writeFiles(t, ws, map[string]string{"localmod.py": "import beta\nimport theta\n"})
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(ws, "localmod.py"), future, future); err != nil {
		t.Fatal(err)
	}
	got, err = e.workspaceImports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.state.mu.Lock()
	after := e.state.scan[filepath.Join(ws, "localmod.py")]
	e.state.mu.Unlock()
	if !reflect.DeepEqual(after.names, []string{"beta", "theta"}) || reflect.DeepEqual(before, after) {
		t.Errorf("rescan of a changed file: before %+v, after %+v", before, after)
	}
	if !slices.Contains(got, "theta") {
		t.Errorf("imports after the change = %v, lack theta", got)
	}
}
