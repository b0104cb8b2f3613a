package server

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/torchlsp/torchlsp/internal/plant"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
	"github.com/torchlsp/torchlsp/server/repro"
	"github.com/torchlsp/torchlsp/server/source"
)

// ownStep is a compiled step whose factory and body come from a module
// it imports, so that the run needs that module on the target.
const ownStep = `"""A step compiled with inputs from a factory."""
import torch

from helpers.data import make_x


def step(x):
    y = torch.sin(x)
    print("step")
    return y

# torchlsp: inputs=make_x
compiled = torch.compile(step)
`

// ownRunEngine starts an engine on Debian's interpreter whose workspace
// folders are folders (none: every file is outside a workspace root).
func ownRunEngine(t *testing.T, folders ...string) (*Engine, config.Dirs) {
	t.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	root := t.TempDir()
	dirs := config.Dirs{Config: filepath.Join(root, "config"), Cache: filepath.Join(root, "cache"), State: filepath.Join(root, "state")}
	eng := New(Options{Dirs: dirs})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings, _ := json.Marshal(map[string]any{"defaultTarget": "debian", "targets": map[string]any{"debian": map[string]any{"python": benchPython}}})
	if err := eng.Initialize(context.Background(), InitializeParams{WorkspaceFolders: folders, InitializationOptions: settings}); err != nil {
		t.Fatal(err)
	}
	return eng, dirs
}

// statusLines collects a run's status lines.
type statusLines struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (s *statusLines) sink(ev RunEvent) {
	if ev.Stream == "status" {
		s.mu.Lock()
		s.lines = append(s.lines, ev.Line)
		s.mu.Unlock()
	}
}

func (s *statusLines) with(sub string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.lines {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

func sentNote(rep repro.Report) string {
	for _, v := range rep.Variants {
		for _, n := range v.Notes {
			if strings.Contains(n, "workspace file(s) sent") {
				return n
			}
		}
	}
	return ""
}

// TestOwnRunWithoutRoot: a file outside every workspace root (a home
// directory holding other projects) sends only itself and the modules it
// imports, and its run's files go under the cache: no .torchlsp appears
// beside it. (The whole directory travelled, another project's
// settings.py with it, and a .torchlsp was created there.)
func TestOwnRunWithoutRoot(t *testing.T) {
	t.Parallel()
	eng, dirs := ownRunEngine(t)
	dir := t.TempDir()
	plant.Tree(t, dir, map[string]string{
		"step.py":                        ownStep,
		"helpers/__init__.py":            "",
		"helpers/data.py":                "import torch\n\n\ndef make_x(seed):\n    return (torch.ones(4, 8),)\n",
		"projects/other/src/settings.py": "SECRET_KEY = 'hunter2'\n",
		"scratch.py":                     "print('not imported')\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	doc := eng.DidOpen(ctx, source.FileURI(filepath.Join(dir, "step.py")), "", 1, ownStep)
	res, err := eng.Explain(ctx, RunArgs{URI: doc.URI(), Line: lineOf(t, ownStep, "torch.compile(step)"), Caller: &RunCaller{}})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	if n := sentNote(res.Reports[0]); !strings.HasPrefix(n, "3 workspace file(s) sent") {
		t.Errorf("sent %q, want step.py, helpers/__init__.py and helpers/data.py alone", n)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".torchlsp")); !os.IsNotExist(err) {
		t.Errorf("a .torchlsp was created beside the file (%v)", err)
	}
	if !strings.HasPrefix(res.Reports[0].Dir, filepath.Join(dirs.Cache, "repros")+string(filepath.Separator)) {
		t.Errorf("the run's files are in %q, want under the cache", res.Reports[0].Dir)
	}
	if len(res.Diagnostics[doc.URI()]) < 2 {
		t.Errorf("findings %+v", res.Diagnostics)
	}
}

// TestOwnRunPastFileLimit: under a workspace root with more Python files
// than the limit, the file under test and the module it imports still
// travel, whatever the walk order, and the files left out are one status
// line. (The file under test sorted past the 2000th file was dropped, and
// each left-out file was a message of its own.)
func TestOwnRunPastFileLimit(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	files := map[string]string{
		"zz/step.py":          ownStep,
		"zz/__init__.py":      "",
		"helpers/__init__.py": "",
		"helpers/data.py":     "import torch\n\n\ndef make_x(seed):\n    return (torch.ones(4, 8),)\n",
	}
	for i := range 2100 {
		files[fmt.Sprintf("aa/m%04d.py", i)] = "x = 1\n"
	}
	plant.Tree(t, ws, files)
	eng, _ := ownRunEngine(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	doc := eng.DidOpen(ctx, source.FileURI(filepath.Join(ws, "zz", "step.py")), "", 1, ownStep)
	var st statusLines
	res, err := eng.Explain(ctx, RunArgs{URI: doc.URI(), Line: lineOf(t, ownStep, "torch.compile(step)"), Caller: &RunCaller{Sink: st.sink}})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	if n := sentNote(res.Reports[0]); !strings.HasPrefix(n, fmt.Sprint(repro.DefaultMaxFiles)+" workspace file(s) sent") {
		t.Errorf("sent %q", n)
	}
	left := st.with("left out")
	if len(left) != 1 || !strings.HasPrefix(left[0], "104 workspace file(s) left out: 104 past the 2000-file limit (aa/m1996.py,") {
		t.Errorf("left-out lines %d: %.300q", len(left), left)
	}
	if len(res.Diagnostics[doc.URI()]) < 2 {
		t.Errorf("findings %+v", res.Diagnostics)
	}
}

// TestRunRefusesNonFiles: a document whose path is no regular file (a
// device, a link to one, a named pipe) is refused with a message, and nothing is
// written beside it. (A repro on file:///dev/zero created /dev/.torchlsp.)
func TestRunRefusesNonFiles(t *testing.T) {
	t.Parallel()
	eng, _ := ownRunEngine(t)
	dir := t.TempDir()
	// Devices through links in a directory of the test's own: a
	// regression then writes there, not into /dev.
	plant.Tree(t, dir, map[string]string{"pipe.py": "|fifo", "zero.py": "->/dev/zero", "null.py": "->/dev/null"})
	src := "import torch\nc = torch.compile(lambda x: x)\n"
	for _, name := range []string{"zero.py", "null.py", "pipe.py"} {
		p := filepath.Join(dir, name)
		doc := eng.DidOpen(context.Background(), source.FileURI(p), "", 1, src)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		_, err := eng.Repro(ctx, RunArgs{URI: doc.URI(), Line: 1, StandIn: true, Caller: &RunCaller{}})
		cancel()
		if err == nil || !strings.Contains(err.Error(), p+" is a ") || !strings.Contains(err.Error(), "a run needs a regular file") {
			t.Errorf("repro of %s: %v", p, err)
		}
		if _, err := eng.Explain(context.Background(), RunArgs{URI: doc.URI(), Line: 1, Caller: &RunCaller{}}); err == nil || !strings.Contains(err.Error(), "a run needs a regular file") {
			t.Errorf("explain of %s: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, ".torchlsp")); !os.IsNotExist(err) {
		t.Errorf("a .torchlsp was created beside the documents (%v)", err)
	}
}

// TestOwnRunSkipsAnotherUsersRunDirectory: under a workspace root whose
// .torchlsp/repros belongs to another user and is 0777, an own-code run
// still runs, and its files go under the cache; nothing is written into
// that directory. (The run's scripts and results went into it.)
func TestOwnRunSkipsAnotherUsersRunDirectory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("making a directory of another user's needs root")
	}
	ws := t.TempDir()
	plant.Tree(t, ws, map[string]string{
		"step.py":             ownStep,
		"helpers/__init__.py": "",
		"helpers/data.py":     "import torch\n\n\ndef make_x(seed):\n    return (torch.ones(4, 8),)\n",
	})
	theirs := filepath.Join(ws, ".torchlsp", "repros")
	if err := os.MkdirAll(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(theirs, 0o777); err != nil {
		t.Fatal(err)
	}
	eng, dirs := ownRunEngine(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	doc := eng.DidOpen(ctx, source.FileURI(filepath.Join(ws, "step.py")), "", 1, ownStep)
	res, err := eng.Explain(ctx, RunArgs{URI: doc.URI(), Line: lineOf(t, ownStep, "torch.compile(step)"), Caller: &RunCaller{}})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	if !strings.HasPrefix(res.Reports[0].Dir, filepath.Join(dirs.Cache, "repros")+string(filepath.Separator)) {
		t.Errorf("the run's files are in %q, want under the cache", res.Reports[0].Dir)
	}
	if entries, err := os.ReadDir(theirs); err != nil || len(entries) != 0 {
		t.Errorf("the other user's directory holds %v (%v), want nothing", entries, err)
	}
	if n := sentNote(res.Reports[0]); !strings.HasPrefix(n, "3 workspace file(s) sent") {
		t.Errorf("sent %q", n)
	}
}
