package navigation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/plant"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

func TestWordsOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text  string
		has   []string
		lacks []string
	}{
		{"from torch._inductor.cudagraph_trees import get_obj as g\n", []string{"torch", "_inductor", "cudagraph_trees", "get_obj", "g", "import"}, []string{"get", "obj", "cudagraph"}},
		{"x = get_obj(1)  # and_a_comment\n", []string{"x", "get_obj", "and_a_comment"}, []string{"get_ob"}},
		{"s = 'get_obj'\n", []string{"s", "get_obj"}, nil},
		{"größe = 1\nπ_get = 2\n", []string{"größe", "π_get", "_get", "gr"}, []string{"ße"}},
		{"0xget_obj 1e5 2get\n", []string{"0xget_obj", "xget_obj", "e5", "get"}, []string{"get_obj"}},
		{"", nil, []string{"x"}},
	}
	for _, tt := range tests {
		ws := wordsOf([]byte(tt.text))
		for _, w := range tt.has {
			if !ws.mentions([]string{"\n" + w + "\n"}) || !ws.any(func(s string) bool { return s == w }) {
				t.Errorf("words of %q lack %q", tt.text, w)
			}
		}
		for _, w := range tt.lacks {
			if ws.mentions([]string{"\n" + w + "\n"}) || ws.any(func(s string) bool { return s == w }) {
				t.Errorf("words of %q hold %q", tt.text, w)
			}
		}
	}
}

// wsTree writes a workspace with a mirror-like cache inside it and the
// files a hostile repository holds beside the user's code.
func wsTree(t *testing.T) (ws, cache string) {
	t.Helper()
	ws = t.TempDir()
	outside := t.TempDir()
	plant.Tree(t, outside, map[string]string{"secret.py": "get_obj = 1\n"})
	cache = filepath.Join(ws, "cache")
	plant.Tree(t, ws, map[string]string{
		"train.py":                         "from torch._inductor.cudagraph_trees import get_obj\nget_obj(None, 'x')\n",
		"pkg/__init__.py":                  "",
		"pkg/util.py":                      "import torch\n\ndef helper():\n    return torch._inductor.cudagraph_trees.get_obj\n\nclass Box:\n    def get(self):\n        pass\n",
		"pkg/plain.py":                     "plain_name = 1\n",
		"stubs/api.pyi":                    "def get_obj(a, b): ...\n",
		"notes.txt":                        "get_obj\n",
		"fifo.py":                          "|fifo",
		"zero.py":                          "->/dev/zero",
		"out.py":                           "->" + filepath.Join(outside, "secret.py"),
		"linked":                           "->" + outside,
		".venv/lib/m.py":                   "get_obj = 1\n",
		"env2/pyvenv.cfg":                  "home = /usr\n",
		"env2/lib/m.py":                    "get_obj = 1\n",
		"__pycache__/m.py":                 "get_obj = 1\n",
		"build/m.py":                       "get_obj = 1\n",
		"cache/t/id/torch/site/torch/m.py": "get_obj = 1\n",
	})
	big := filepath.Join(ws, "big.py")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// 50 MB of nothing (a sparse file): read, it would take a while.
	if err := f.Truncate(50 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return ws, cache
}

func newTestWorkspace(ws, cache string, limits WorkspaceLimits) *DiskWorkspace {
	return NewDiskWorkspace(func() []string { return []string{ws} }, cache, syntax.NewBudget(syntax.DefaultBudget), limits, nil)
}

func mentioning(t *testing.T, w *DiskWorkspace, ws string, names []string, skip func(string) bool) []string {
	t.Helper()
	files, err := w.Mentioning(context.Background(), names, skip)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		err := f.Visit(context.Background(), func(s pyindex.Source) {
			rel, _ := filepath.Rel(ws, s.Path)
			got = append(got, filepath.ToSlash(rel)+" "+s.Module)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// TestWorkspaceMentioning: the files whose text names what a query looks
// for, among the workspace's own Python files: no environment, cache,
// build output, torchlsp cache, link, pipe, device or oversized file,
// and none the caller searches otherwise; each found at once.
func TestWorkspaceMentioning(t *testing.T) {
	t.Parallel()
	ws, cache := wsTree(t)
	tests := []struct {
		names []string
		skip  []string
		want  []string
	}{
		{[]string{"get_obj"}, nil, []string{"pkg/util.py pkg.util", "stubs/api.pyi stubs.api", "train.py train"}},
		{[]string{"get_obj"}, []string{"train.py"}, []string{"pkg/util.py pkg.util", "stubs/api.pyi stubs.api"}},
		{[]string{"Box", "plain_name"}, nil, []string{"pkg/plain.py pkg.plain", "pkg/util.py pkg.util"}},
		{[]string{"get"}, nil, []string{"pkg/util.py pkg.util"}},
		{[]string{"nowhere"}, nil, nil},
	}
	w := newTestWorkspace(ws, cache, DefaultWorkspaceLimits())
	for _, tt := range tests {
		skip := func(p string) bool { r, _ := filepath.Rel(ws, p); return slices.Contains(tt.skip, r) }
		var got []string
		plant.Within(t, 10*time.Second, func() { got = mentioning(t, w, ws, tt.names, skip) })
		if !slices.Equal(got, tt.want) {
			t.Errorf("files mentioning %q (skipping %q) = %q, want %q", tt.names, tt.skip, got, tt.want)
		}
	}
}

// TestWorkspaceMemo: a file's words are read once per version (size,
// modification time, inode); a new version is read again, a file gone
// is forgotten.
func TestWorkspaceMemo(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	plant.Tree(t, ws, map[string]string{"a.py": "get_obj = 1\n", "b.py": "other = 1\n"})
	w := newTestWorkspace(ws, "", DefaultWorkspaceLimits())
	a, b := filepath.Join(ws, "a.py"), filepath.Join(ws, "b.py")
	stamp := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []string{a, b} {
		if err := os.Chtimes(p, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	if got := mentioning(t, w, ws, []string{"get_obj"}, nil); !slices.Equal(got, []string{"a.py a"}) {
		t.Fatalf("first query = %q", got)
	}
	// The same size and time, written in place: the memo's version.
	rewrite := func(p, text string, at time.Time) {
		t.Helper()
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(text), 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(b, "get_obj=1\n", stamp)
	if got := mentioning(t, w, ws, []string{"get_obj"}, nil); !slices.Equal(got, []string{"a.py a"}) {
		t.Errorf("unchanged versions were read again: %q", got)
	}
	rewrite(b, "get_obj=2\n", stamp.Add(time.Second))
	if got := mentioning(t, w, ws, []string{"get_obj"}, nil); !slices.Equal(got, []string{"a.py a", "b.py b"}) {
		t.Errorf("a new version was not read: %q", got)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if got := mentioning(t, w, ws, []string{"get_obj"}, nil); !slices.Equal(got, []string{"b.py b"}) {
		t.Errorf("after a.py was removed: %q", got)
	}
	w.mu.Lock()
	_, held := w.files[a]
	w.mu.Unlock()
	if held {
		t.Errorf("the memo still holds a.py, which is gone")
	}
}

// TestWorkspaceOutlines: every file's definitions, read once per
// version, the hostile files skipped.
func TestWorkspaceOutlines(t *testing.T) {
	t.Parallel()
	ws, cache := wsTree(t)
	w := newTestWorkspace(ws, cache, DefaultWorkspaceLimits())
	for range 2 {
		var files []FileOutline
		plant.Within(t, 10*time.Second, func() {
			var err error
			if files, err = w.Outlines(context.Background(), nil, nil); err != nil {
				t.Error(err)
			}
		})
		var got []string
		for _, f := range files {
			rel, _ := filepath.Rel(ws, f.Path)
			var names []string
			walkOutline(f.Items, f.Module, func(it pyscope.OutlineItem, container string, _ bool) {
				names = append(names, container+"."+it.Name)
			})
			got = append(got, filepath.ToSlash(rel)+": "+strings.Join(names, " "))
		}
		want := []string{
			"pkg/__init__.py: ",
			"pkg/plain.py: pkg.plain.plain_name",
			"pkg/util.py: pkg.util.helper pkg.util.Box pkg.util.Box.get",
			"stubs/api.pyi: stubs.api.get_obj",
			"train.py: ",
		}
		if !slices.Equal(got, want) {
			t.Errorf("outlines =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestWorkspaceOutlinesMatch: a file is parsed for its outline only when
// one of its words can match the query.
func TestWorkspaceOutlinesMatch(t *testing.T) {
	t.Parallel()
	ws, cache := wsTree(t)
	w := newTestWorkspace(ws, cache, DefaultWorkspaceLimits())
	// The answer holds the outlines parsed so far: a file whose outline
	// is known is no cost to give.
	tests := []struct {
		query  string
		want   []string // the files outlined, so far
		parsed int      // how many files are outlined after the query
	}{
		{"help", []string{"pkg/util.py"}, 1},
		{"nothing_like_it", []string{"pkg/util.py"}, 1},
		{"plain", []string{"pkg/plain.py", "pkg/util.py"}, 2},
		{"help", []string{"pkg/plain.py", "pkg/util.py"}, 2},
		{"", []string{"pkg/__init__.py", "pkg/plain.py", "pkg/util.py", "stubs/api.pyi", "train.py"}, 5},
	}
	for _, tt := range tests {
		var match func(string) bool
		if tt.query != "" {
			match = func(name string) bool { return strings.Contains(name, tt.query) }
		}
		files, err := w.Outlines(context.Background(), match, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range files {
			rel, _ := filepath.Rel(ws, f.Path)
			got = append(got, filepath.ToSlash(rel))
		}
		w.mu.Lock()
		parsed := 0
		for _, e := range w.files {
			if e.outlined {
				parsed++
			}
		}
		w.mu.Unlock()
		if !slices.Equal(got, tt.want) || parsed != tt.parsed {
			t.Errorf("outlines for %q = %q with %d files parsed, want %q and %d", tt.query, got, parsed, tt.want, tt.parsed)
		}
	}
}

// TestWorkspaceLimits: past its limits a walk stops (the files found so
// far count), the kept tables stay within theirs, and a query whose
// context ends stops.
func TestWorkspaceLimits(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	files := map[string]string{}
	for i := range 30 {
		files[filepath.Join("m", string(rune('a'+i%26))+strings.Repeat("x", i/26)+".py")] = "get_obj = " + strings.Repeat("1", 100) + "\n"
	}
	plant.Tree(t, ws, files)
	lim := DefaultWorkspaceLimits()
	lim.MaxFiles, lim.MaxTableBytes = 10, 500
	var notes []string
	var notesMu sync.Mutex // guards notes
	w := NewDiskWorkspace(func() []string { return []string{ws} }, "", nil, lim, func(msg string) {
		notesMu.Lock()
		notes = append(notes, msg)
		notesMu.Unlock()
	})
	for range 2 {
		if got := mentioning(t, w, ws, []string{"get_obj"}, nil); len(got) != 10 {
			t.Errorf("with MaxFiles 10, %d files: %q", len(got), got)
		}
	}
	notesMu.Lock()
	if len(notes) != 1 || !strings.Contains(notes[0], "past 10 files") {
		t.Errorf("notes of the cut walks = %q, want one", notes)
	}
	notesMu.Unlock()
	w.mu.Lock()
	if len(w.files) != 10 {
		t.Errorf("the memo holds %d files, more than a walk lists", len(w.files))
	}
	w.mu.Unlock()
	w.mu.Lock()
	kept, n := w.tableBytes, w.tables.Len()
	w.mu.Unlock()
	if kept > lim.MaxTableBytes || n == 0 {
		t.Errorf("kept %d tables of %d bytes, want some within %d", n, kept, lim.MaxTableBytes)
	}
	lim = DefaultWorkspaceLimits()
	lim.MaxBytes = 5 * 112
	if got := mentioning(t, newTestWorkspace(ws, "", lim), ws, []string{"get_obj"}, nil); len(got) != 5 {
		t.Errorf("with MaxBytes for 5 files, %d files: %q", len(got), got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newTestWorkspace(ws, "", DefaultWorkspaceLimits()).Mentioning(ctx, []string{"get_obj"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled query: %v, want context.Canceled", err)
	}
	if _, err := newTestWorkspace(ws, "", DefaultWorkspaceLimits()).Outlines(ctx, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled outlines: %v, want context.Canceled", err)
	}
}
