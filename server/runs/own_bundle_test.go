package runs

import (
	"context"
	"errors"
	"github.com/torchlsp/torchlsp/internal/plant"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/torchlsp/torchlsp/server/config"
	"github.com/torchlsp/torchlsp/server/repro"
	"github.com/torchlsp/torchlsp/server/source"
)

// TestImportedFiles finds the workspace files a module's imports load, as
// Python would from the entry's directory and the root.
func TestImportedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plant.Tree(t, dir, map[string]string{
		"pkg/__init__.py":      "",
		"pkg/model.py":         "",
		"pkg/sub/__init__.py":  "",
		"pkg/sub/layers.py":    "",
		"pkg/helpers.py":       "",
		"util.py":              "",
		"data/loader.py":       "", // a namespace package
		"shadow.py":            "",
		"shadow/__init__.py":   "", // the package wins over shadow.py
		"scripts/train.py":     "",
		"scripts/local_mod.py": "",
	})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	tests := []struct {
		name, rel, src string
		want           []string
	}{
		{"third party and standard library add nothing", "train.py", "import torch\nimport os.path\nfrom json import loads\n", nil},
		{"a module of a package", "train.py", "import pkg.model\n", []string{"pkg/__init__.py", "pkg/model.py"}},
		{"from a package import a submodule", "train.py", "from pkg.sub import layers as L\n", []string{"pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/layers.py"}},
		{"from a module import a name", "train.py", "from util import f\n", []string{"util.py"}},
		{"a namespace package", "train.py", "from data.loader import Loader\n", []string{"data/loader.py"}},
		{"a package before a module file", "train.py", "import shadow\n", []string{"shadow/__init__.py"}},
		{"inside a function and in a fallback", "train.py", "def f():\n    import util\ntry:\n    import fast\nexcept ImportError:\n    import pkg as fast\n", []string{"util.py", "pkg/__init__.py"}},
		{"relative imports", "pkg/model.py", "from . import helpers\nfrom .sub import layers\nfrom .. import util\n", []string{"pkg/helpers.py", "pkg/sub/__init__.py", "pkg/sub/layers.py", "util.py"}},
		{"relative above the root", "util.py", "from .. import x\n", nil},
		{"the entry's own directory first", "scripts/train.py", "import local_mod\nimport util\n", []string{"scripts/local_mod.py", "util.py"}},
		{"hostile names", "train.py", "import os\n__import__('../../etc/passwd')\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := source.NewStore(0, nil).Open(source.FileURI("/w/"+tt.rel), "", 1, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			search := []string{filepath.Dir(tt.rel), "."}
			got := importedFiles(tt.rel, doc.Buffer().Imports(), search, func(rel string) (os.FileInfo, error) {
				return root.Lstat(filepath.FromSlash(rel))
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// recordingNotifier answers Confirm with yes (or not) and records the
// questions and log lines.
type recordingNotifier struct {
	api.NopNotifier
	yes       bool
	mu        sync.Mutex // guards questions and logs
	questions []string
	logs      []string
}

func (n *recordingNotifier) Confirm(_ context.Context, q, _ string) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.questions = append(n.questions, q)
	return n.yes, nil
}

func (n *recordingNotifier) LogMessage(_ context.Context, _ api.MessageType, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.logs = append(n.logs, msg)
}

func (n *recordingNotifier) Capabilities() api.Capabilities { return api.Capabilities{Confirm: true} }

func (n *recordingNotifier) asked() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.questions...)
}

// TestOwnBundle decides what a run of the user's code sends: under a
// workspace root the file, its imports and the rest; without one only the
// file and its imports; a home directory only with a yes.
func TestOwnBundle(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"train.py":                           "import torch\nfrom models import net\nimport torch.nn as nn\n",
		"models/__init__.py":                 "",
		"models/net.py":                      "from . import blocks\n",
		"models/blocks.py":                   "",
		"unrelated.py":                       "",
		"projects/other/src/settings.py":     "SECRET = 'hunter2'\n",
		"projects/other/src/torchlsp_pkg.py": "",
	}
	wantImported := []string{"models/__init__.py", "models/blocks.py", "models/net.py", "train.py"}
	tests := []struct {
		name      string
		rooted    bool
		home      bool // the directory is the user's home
		allow     bool
		yes       bool
		want      []string // nil: every file
		wantErr   error
		wantAsked bool
	}{
		{"workspace root: everything", true, false, false, false, nil, nil, false},
		{"no root: the file and its imports", false, false, false, false, wantImported, nil, false},
		{"home as a root, asked, no", true, true, false, false, nil, ErrHomeRefused, true},
		{"home as a root, asked, yes", true, true, false, true, nil, nil, true},
		{"home, no root, allowed", false, true, true, false, wantImported, nil, false},
		{"home, no root, asked, no", false, true, false, false, nil, ErrHomeRefused, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			plant.Tree(t, dir, files)
			n := &recordingNotifier{yes: tt.yes}
			dirs := config.Dirs{}
			if tt.home {
				dirs.Home = dir
			}
			rn := newTestRuns(dirs, n, nil)
			oc := ownCode{Module: "train", Rel: "train.py", Entry: "train.py"}
			b, err := rn.ownBundle(context.Background(), runPlace{dir: dir, rooted: tt.rooted}, oc, tt.allow)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("err %v, want %v naming %s", err, tt.wantErr, dir)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if asked := len(n.asked()) > 0; asked != tt.wantAsked {
				t.Errorf("asked %v, want %v", n.asked(), tt.wantAsked)
			}
			if tt.wantAsked && !strings.Contains(n.asked()[0], "from "+dir+" to the target") {
				t.Errorf("question %q does not say where from", n.asked()[0])
			}
			if tt.wantErr != nil {
				return
			}
			var got []string
			for _, f := range b.Files {
				got = append(got, f.Path)
			}
			want := tt.want
			if want == nil {
				for p := range files {
					want = append(want, p)
				}
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Errorf("sent %q, want %q", got, want)
			}
		})
	}
}

// TestOwnBundleRefusesWhatItNeeds: the file under test or a module it
// imports that cannot travel (a link out, a pipe, over a limit, dropped by
// the file limit) stops the run with a message naming it; nothing blocks.
func TestOwnBundleRefusesWhatItNeeds(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "helpers.py")
	plant.Tree(t, filepath.Dir(outside), map[string]string{"helpers.py": "SECRET = 1\n"})
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"imported module is a link out", map[string]string{"train.py": "import helpers\n", "helpers.py": "->" + outside},
			"a module imported by train.py cannot be sent to the target, so the run is not started: helpers.py is a symbolic link, not a regular file"},
		{"imported module is a pipe", map[string]string{"train.py": "from pkg import m\n", "pkg/__init__.py": "", "pkg/m.py": "|fifo"},
			"a module imported by train.py cannot be sent to the target, so the run is not started: pkg/m.py is a named pipe, not a regular file"},
		{"imported module too large", map[string]string{"train.py": "import big\n", "big.py": strings.Repeat("#", repro.DefaultMaxFileBytes+1)},
			"big.py is 2097153 bytes, over the 2097152-byte limit"},
		{"the file under test is a link to /dev/zero", map[string]string{"train.py": "->/dev/zero"},
			"the file under test cannot be sent to the target, so the run is not started: train.py is a symbolic link"},
		{"the entry point is missing", map[string]string{"train.py": ""},
			"the entry point cannot be sent to the target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			plant.Tree(t, dir, tt.files)
			rn := newTestRuns(config.Dirs{}, nil, nil)
			oc := ownCode{Module: "train", Rel: "train.py", Entry: "train.py"}
			if tt.name == "the entry point is missing" {
				oc.Entry = "run.py"
			}
			for _, rooted := range []bool{true, false} {
				_, err := rn.ownBundle(context.Background(), runPlace{dir: dir, rooted: rooted}, oc, false)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("rooted %v: err %v, want %q", rooted, err, tt.want)
				}
			}
		})
	}
}

// TestPlaceOf: a run's files go to the workspace root the user chose, else
// to the cache; a document that is no regular file is refused.
func TestPlaceOf(t *testing.T) {
	t.Parallel()
	ws, loose, cache := t.TempDir(), t.TempDir(), t.TempDir()
	plant.Tree(t, ws, map[string]string{"a.py": ""})
	plant.Tree(t, loose, map[string]string{"b.py": "", "fifo.py": "|fifo"})
	rn := newTestRuns(config.Dirs{Cache: cache}, nil, []string{ws})
	open := func(p string) *source.Snapshot {
		doc, err := source.NewStore(0, nil).Open(source.FileURI(p), "", 1, "import torch\n")
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	if p, err := rn.placeOf(open(filepath.Join(ws, "a.py"))); err != nil || p != (runPlace{dir: ws, rooted: true}) || rn.runOptions(p).Workspace != ws {
		t.Errorf("in the workspace: %+v %v", p, err)
	}
	p, err := rn.placeOf(open(filepath.Join(loose, "b.py")))
	if err != nil || p != (runPlace{dir: loose}) {
		t.Errorf("outside: %+v %v", p, err)
	}
	if o := rn.runOptions(p); o.Workspace != "" || o.StateDir != cache {
		t.Errorf("outside a root the run's files go to %+v, want the cache", o)
	}
	for _, bad := range []string{"/dev/zero", filepath.Join(loose, "fifo.py"), loose} {
		if _, err := rn.placeOf(open(bad)); err == nil || !strings.Contains(err.Error(), "not a Python file: a run needs a regular file") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// messageNotifier records the messages shown.
type messageNotifier struct {
	api.NopNotifier
	mu   sync.Mutex // guards msgs
	msgs []string
}

func (n *messageNotifier) ShowMessage(_ context.Context, _ api.MessageType, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.msgs = append(n.msgs, msg)
}

func (n *messageNotifier) shown() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.msgs...)
}

// TestRunFilesStayOutOfOthersDirectories: a run under a workspace root
// keeps its files in <root>/.torchlsp/repros only when the root and those
// of the two that exist are directories of the user's that no other user
// can write; otherwise they go under the cache and the user is told why.
// (A .torchlsp/repros of another user's, 0777, received the run.)
func TestRunFilesStayOutOfOthersDirectories(t *testing.T) {
	t.Parallel()
	const other = 65534
	asRoot := func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("making a directory of another user's needs root")
		}
	}
	chown := func(t *testing.T, p string, mode os.FileMode) {
		if err := os.Chown(p, other, other); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, ws string)
		why   string // "" when the run's files stay in the workspace
	}{
		{"a root of the user's without .torchlsp", func(t *testing.T, ws string) {}, ""},
		{"a .torchlsp/repros of the user's", func(t *testing.T, ws string) {
			plant.Tree(t, ws, map[string]string{".torchlsp/repros/old/report.md": ""})
		}, ""},
		{"a .torchlsp/repros of another user's, 0777", func(t *testing.T, ws string) {
			asRoot(t)
			plant.Tree(t, ws, map[string]string{".torchlsp/repros/old/report.md": ""})
			chown(t, filepath.Join(ws, ".torchlsp", "repros"), 0o777)
		}, filepath.Join(".torchlsp", "repros") + " belongs to another user (uid 65534)"},
		{"a .torchlsp of another user's", func(t *testing.T, ws string) {
			asRoot(t)
			plant.Tree(t, ws, map[string]string{".torchlsp/.gitignore": "*\n"})
			chown(t, filepath.Join(ws, ".torchlsp"), 0o755)
		}, ".torchlsp belongs to another user (uid 65534)"},
		{"a root of another user's", func(t *testing.T, ws string) {
			asRoot(t)
			chown(t, ws, 0o755)
		}, " belongs to another user (uid 65534)"},
		{"a root every user can write", func(t *testing.T, ws string) {
			if err := os.Chmod(ws, 0o1777); err != nil {
				t.Fatal(err)
			}
		}, " is writable by every user (mode 0777)"},
		{"a .torchlsp that is a link to a directory of the user's", func(t *testing.T, ws string) {
			plant.Tree(t, ws, map[string]string{".torchlsp": "->" + t.TempDir()})
		}, ".torchlsp is a symbolic link, not a directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, cache := t.TempDir(), t.TempDir()
			plant.Tree(t, ws, map[string]string{"a.py": ""})
			tt.plant(t, ws)
			n := &messageNotifier{}
			rn := newTestRuns(config.Dirs{Cache: cache}, n, []string{ws})
			doc, err := source.NewStore(0, nil).Open(source.FileURI(filepath.Join(ws, "a.py")), "", 1, "import torch\n")
			if err != nil {
				t.Fatal(err)
			}
			place, err := rn.placeOf(doc)
			if err != nil || !place.rooted {
				t.Fatalf("placeOf: %+v %v", place, err)
			}
			opts := rn.runOptions(place)
			if tt.why == "" {
				if opts.Workspace != ws || len(n.shown()) != 0 {
					t.Errorf("the run's files go to %+v (%q), want the workspace", opts, n.shown())
				}
				return
			}
			if opts.Workspace != "" || opts.StateDir != cache {
				t.Errorf("the run's files go to %+v, want the cache", opts)
			}
			msgs := n.shown()
			if len(msgs) != 1 || !strings.Contains(msgs[0], tt.why) || !strings.Contains(msgs[0], "keeps its files under "+filepath.Join(cache, "repros")) {
				t.Errorf("messages %q, want one naming %q and the cache", msgs, tt.why)
			}
		})
	}
}

// newTestRuns makes a runner with what its own-code files need: the
// directories, the notifier (none when nil) and the workspace folders.
func newTestRuns(dirs config.Dirs, n api.Notifier, folders []string) *Runs {
	if n == nil {
		n = api.NopNotifier{}
	}
	return New(Deps{
		Notify: n, CacheDir: dirs.Cache, HomeDir: dirs.Home, Parse: pybuf.Parse,
		FolderOf: func(p string) string {
			for _, f := range folders {
				if p == f || strings.HasPrefix(p, f+string(filepath.Separator)) {
					return f
				}
			}
			return ""
		},
	})
}
