package wsmodel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/plant"
)

// A hostile workspace: a named pipe and a link to /dev/zero named like
// modules, a link to a module outside the workspace, a file over the
// size limit, a package whose directory is a link out, and a module
// named by no valid Python name. The build reads none of them, ends at
// once, and still decides the path the real files make.
func TestHostileWorkspace(t *testing.T) {
	t.Parallel()
	cat := fixtureCatalog(t)
	dir := writeArchive(t, "testdata/paths/loader_returns_compiled.txtar").dir
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.py"), []byte("import torch\nx = torch.compile(f, mode='reduce-overhead')\n"), 0o644)
	os.MkdirAll(filepath.Join(outside, "pkg"), 0o755)
	os.WriteFile(filepath.Join(outside, "pkg", "__init__.py"), []byte("import torch\n"), 0o644)
	plant.Tree(t, dir, map[string]string{
		"pipe.py":       "|fifo",
		"linked.py":     "->" + filepath.Join(outside, "secret.py"),
		"linkpkg":       "->" + filepath.Join(outside, "pkg"),
		"not-a-name.py": "import torch\n",
	})
	plant.DevZero(t, filepath.Join(dir, "zero.py"))
	os.WriteFile(filepath.Join(dir, "huge.py"), []byte(strings.Repeat("x = 1\n", 1<<20)), 0o644)

	ix := testIndexer(dir, cat)
	ix.Limits.MaxFileBytes = 1 << 20
	var m *Model
	var st Stats
	plant.Within(t, 20*time.Second, func() {
		var err error
		m, st, err = ix.Build(context.Background())
		if err != nil {
			t.Error(err)
		}
	})
	if m == nil {
		return
	}
	for _, name := range []string{"pipe.py", "zero.py", "linked.py", "huge.py", "linkpkg/__init__.py"} {
		if _, ok := m.File(filepath.Join(dir, name)); ok {
			t.Errorf("%s was indexed", name)
		}
	}
	if f, ok := m.File(filepath.Join(dir, "not-a-name.py")); !ok || f.Module != "" {
		t.Errorf("not-a-name.py: indexed %v, module %q; want it indexed under no module", ok, f.Module)
	}
	// The pipe and the links are no regular files: the walk never opens
	// them. The huge file is opened and refused by its size.
	if st.Files != 3 || st.Skipped != 1 {
		t.Errorf("%+v, want 3 files indexed and the huge one skipped", st)
	}
	if len(m.Verdicts().Findings[filepath.Join(dir, "server.py")]) == 0 {
		t.Errorf("the real path is no longer decided: %+v", m.Verdicts())
	}
}

// A workspace past the limits is indexed up to them and says which one
// stopped it.
func TestBuildLimits(t *testing.T) {
	t.Parallel()
	cat := fixtureCatalog(t)
	dir := t.TempDir()
	for i := range 10 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%d.py", i)), []byte(strings.Repeat("x = 1\n", 100)), 0o644)
	}
	for _, tt := range []struct {
		name   string
		limits Limits
		files  int
		says   string
	}{
		{"files", Limits{MaxEntries: 1000, MaxFiles: 3, MaxFileBytes: 1 << 20}, 3, "past the 3 files"},
		{"bytes", Limits{MaxEntries: 1000, MaxFiles: 100, MaxFileBytes: 1 << 20, MaxBytes: 1500}, 3, "past the 1500 bytes"},
		{"entries", Limits{MaxEntries: 4, MaxFiles: 100, MaxFileBytes: 1 << 20}, 4, "past the 4 directory entries"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ix := testIndexer(dir, cat)
			ix.Limits = tt.limits
			_, st, err := ix.Build(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.Files != tt.files || !strings.Contains(st.Truncated, tt.says) {
				t.Errorf("%+v, want %d files and %q", st, tt.files, tt.says)
			}
		})
	}
}
