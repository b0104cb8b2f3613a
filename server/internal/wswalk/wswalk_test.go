package wswalk

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// tree writes files (slash paths, "" content) under a new directory and
// opens it as an os.Root.
func tree(t *testing.T, files ...string) fs.FS {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.FS()
}

func TestSkip(t *testing.T) {
	t.Parallel()
	fsys := tree(t,
		"env/pyvenv.cfg", "env/lib/python3.11/site-packages/x.py", // a virtual environment under any name
		".venv-gpu/pyvenv.cfg",
		"tools/py311/pyvenv.cfg", // nested
		"myconda/conda-meta/history",
		"environment/setup.py", // an ordinary package with a telling name
		"pkg/pyvenv_cfg.py",
		"pkg/conda_meta.py",
		"src/app/main.py",
	)
	for _, tc := range []struct {
		dir  string
		skip bool
	}{
		{"env", true},
		{".venv-gpu", true},
		{"tools/py311", true},
		{"tools", false},
		{"myconda", true},
		{"environment", false},
		{"pkg", false},
		{"src", false},
		{"src/app", false},
		{".git", true},
		{".hg", true},
		{".svn", true},
		{".torchlsp", true},
		{".venv", true},
		{".tox", true},
		{".mypy_cache", true},
		{".pytest_cache", true},
		{"__pycache__", true},
		{"pkg/__pycache__", true},
		{"node_modules", true},
		{"venv", true},
		{"build", true},
		{"dist", true},
		{"lib/site-packages", true},
		{"usr/lib/python3/dist-packages", true},
		{"building", false},
		{"distributed", false},
	} {
		if got := Skip(fsys, tc.dir); got != tc.skip {
			t.Errorf("Skip(%q) = %v, want %v", tc.dir, got, tc.skip)
		}
	}
}

func TestWalk(t *testing.T) {
	t.Parallel()
	fsys := tree(t,
		"train.py",
		"pkg/__init__.py", "pkg/model.py", "pkg/__pycache__/model.cpython-311.pyc",
		"env/pyvenv.cfg", "env/lib/python3.11/site-packages/torch/__init__.py",
		".venv-gpu/pyvenv.cfg", ".venv-gpu/bin/activate_this.py",
		"myenv/conda-meta/history", "myenv/lib/python3.10/os.py",
		".git/hooks/pre-commit.py",
		".torchlsp/runs/x.py",
		"node_modules/pkg/setup.py",
		"build/lib/pkg/model.py",
		"environment/setup.py",
	)
	var got []string
	err := Walk(context.Background(), fsys, 0, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			got = append(got, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"environment/setup.py", "pkg/__init__.py", "pkg/model.py", "train.py"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walked %q, want %q", got, want)
	}
}

func TestWalkBounds(t *testing.T) {
	t.Parallel()
	fsys := tree(t, "a.py", "b.py", "c.py", "d/e.py")
	var seen int
	err := Walk(context.Background(), fsys, 3, func(string, fs.DirEntry, error) error { seen++; return nil })
	var lim *EntryLimitError
	if !errors.As(err, &lim) || lim.Limit != 3 || lim.Path != "d" || seen != 3 {
		t.Errorf("walk of 5 entries limited to 3: %v after %d", err, seen)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Walk(ctx, fsys, 0, func(string, fs.DirEntry, error) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("walk after its context ended: %v", err)
	}
}
