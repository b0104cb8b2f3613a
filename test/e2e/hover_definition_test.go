package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestFixtureDefinitions walks the torch-shaped fixture through every kind
// of binding torchlsp must follow: re-exports, star imports with __all__,
// aliases, decorated functions, nested config classes, .pyi stubs, names
// bound only at run time, and non-ASCII text before the cursor.
func TestFixtureDefinitions(t *testing.T) {
	s := start(t, sessionOptions{settings: fixtureSettings(t)})
	uri, text := s.open("train.py")

	tests := []struct {
		name     string
		needle   string
		nth, off int
		file     string // relative to the mirror's site dir
		line     int    // 0-based
		contains string // the definition line holds this
	}{
		{"compile: real def, not overloads", "torch.compile(model", 0, 6, "torch/__init__.py", 44, "def compile"},
		{"alias and re-export", "nn.Linear(4, 4)", 0, 3, "torch/nn/modules/linear.py", 18, "class Linear"},
		{"decorated function", "checkpoint(self.proj", 0, 0, "torch/utils/checkpoint.py", 18, "def checkpoint"},
		{"module alias", "F.relu(y)", 0, 2, "torch/nn/functional.py", 10, "def relu"},
		{"after non-ASCII text", "act = F.relu", 0, 8, "torch/nn/functional.py", 10, "def relu"},
		{"nested config class", "triton.cudagraph_trees = False", 0, 7, "torch/_inductor/config.py", 24, "cudagraph_trees"},
		{"from-import", "AdamW(model", 0, 0, "torch/optim/adamw.py", 3, "class AdamW"},
		{"import line", "from torch.optim import AdamW", 0, 24, "torch/optim/adamw.py", 3, "class AdamW"},
		{"subpackage function", "torch.cuda.is_available", 0, 11, "torch/cuda/__init__.py", 3, "def is_available"},
		{"stub only", "torch._C._is_key_in_tls", 0, 9, "torch/_C/__init__.pyi", 3, "def _is_key_in_tls"},
		{"bound at run time: helper, then stub", "torch.add(", 0, 6, "torch/_C/__init__.pyi", 17, "def add"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, col := at(t, text, tt.needle, tt.nth, tt.off)
			locs, err := s.client.Definition(s.ctx(60*time.Second), uri, line, col)
			if err != nil {
				t.Fatalf("definition: %v", err)
			}
			if len(locs) != 1 {
				t.Fatalf("got %d locations, want 1: %+v", len(locs), locs)
			}
			path := uriPath(t, locs[0].URI)
			if !strings.HasPrefix(path, s.dirs.Cache) {
				t.Errorf("definition %s is not in the mirror under %s", path, s.dirs.Cache)
			}
			if !strings.HasSuffix(path, "/site/"+tt.file) {
				t.Errorf("definition file = %s, want …/site/%s", path, tt.file)
			}
			if got := int(locs[0].Range.Start.Line); got != tt.line {
				t.Errorf("definition line = %d, want %d", got, tt.line)
			}
			if got := lineText(t, path, int(locs[0].Range.Start.Line)); !strings.Contains(got, tt.contains) {
				t.Errorf("definition line %q does not hold %q", got, tt.contains)
			}
		})
	}

	t.Run("hover names the target, the version and the path on the target", func(t *testing.T) {
		line, col := at(t, text, "torch.compile(model", 0, 8)
		h, err := s.client.Hover(s.ctx(30*time.Second), uri, line, col)
		if err != nil || h == nil {
			t.Fatalf("hover: %v %v", h, err)
		}
		site := filepath.Join(repoRoot(t), "testdata", "site")
		for _, want := range []string{"def compile(", "2.99.0+fixture", "**fixture**", site + "/torch/__init__.py:45", "Optimizes the given model"} {
			if !strings.Contains(h.Contents.Value, want) {
				t.Errorf("hover lacks %q:\n%s", want, h.Contents.Value)
			}
		}
		if h.Range == nil || h.Range.Start.Line != line || h.Range.End.Character-h.Range.Start.Character != uint32(len("compile")) {
			t.Errorf("hover range = %+v, want the word compile on line %d", h.Range, line)
		}
	})

	t.Run("the user's own names and the standard library get nothing", func(t *testing.T) {
		for _, needle := range []string{"Model()", "threading.Thread", "worker(model)", "proj, x"} {
			line, col := at(t, text, needle, 0, 0)
			if strings.HasPrefix(needle, "threading") {
				line, col = at(t, text, needle, 0, len("threading."))
			}
			h, err := s.client.Hover(s.ctx(30*time.Second), uri, line, col)
			if err != nil || h != nil {
				t.Errorf("hover on %q = %+v, %v; want nothing", needle, h, err)
			}
			locs, err := s.client.Definition(s.ctx(30*time.Second), uri, line, col)
			if err != nil || len(locs) != 0 {
				t.Errorf("definition on %q = %+v, %v; want nothing", needle, locs, err)
			}
		}
	})

	t.Run("edits are seen by the next request", func(t *testing.T) {
		edited := strings.Replace(text, "F.relu(y)", "F.relu(y) + torch.cuda.is_available()", 1)
		if err := s.client.DidChange(uri, 2, lsptest.Change{Text: edited}); err != nil {
			t.Fatal(err)
		}
		line, col := at(t, edited, "+ torch.cuda.is_available", 0, 13)
		locs, err := s.client.Definition(s.ctx(30*time.Second), uri, line, col)
		if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "torch/cuda/__init__.py") {
			t.Fatalf("definition after edit = %+v, %v", locs, err)
		}
	})

	t.Run("untitled buffers get answers", func(t *testing.T) {
		const u = "untitled:Untitled-1"
		src := "import torch.nn as nn\nnn.Linear\n"
		if err := s.client.DidOpen(u, "python", src); err != nil {
			t.Fatal(err)
		}
		h, err := s.client.Hover(s.ctx(30*time.Second), u, 1, 4)
		if err != nil || h == nil || !strings.Contains(h.Contents.Value, "class Linear") {
			t.Fatalf("hover in untitled buffer = %+v, %v", h, err)
		}
	})

	t.Run("half-typed code still answers", func(t *testing.T) {
		const u = "untitled:half"
		src := "import torch\nx = torch.nn.functional.relu(\ny = torch.optim.Ada"
		if err := s.client.DidOpen(u, "python", src); err != nil {
			t.Fatal(err)
		}
		locs, err := s.client.Definition(s.ctx(30*time.Second), u, 1, 26)
		if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "torch/nn/functional.py") {
			t.Fatalf("definition in half-typed code = %+v, %v", locs, err)
		}
	})

	s.shutdown()
}

// TestDebianTorch checks definitions against Debian's python3-torch 1.13, a
// real third-party torch, with the expected lines computed by its own
// interpreter.
func TestDebianTorch(t *testing.T) {
	s := start(t, sessionOptions{settings: debianSettings(t)})
	uri, text := s.open("train.py")

	tests := []struct {
		needle       string
		off          int
		module, attr string
	}{
		{"nn.Linear(4, 4)", 3, "torch.nn", "Linear"},
		{"F.relu(y)", 2, "torch.nn.functional", "relu"},
		{"checkpoint(self.proj", 0, "torch.utils.checkpoint", "checkpoint"},
		{"AdamW(model", 0, "torch.optim", "AdamW"},
		{"torch.cuda.is_available", 11, "torch.cuda", "is_available"},
	}
	for _, tt := range tests {
		t.Run(tt.module+"."+tt.attr, func(t *testing.T) {
			wantFile, wantLine := pythonLine(t, nil, tt.module, tt.attr)
			line, col := at(t, text, tt.needle, 0, tt.off)
			locs, err := s.client.Definition(s.ctx(2*time.Minute), uri, line, col)
			if err != nil || len(locs) != 1 {
				t.Fatalf("definition = %+v, %v", locs, err)
			}
			got := uriPath(t, locs[0].URI)
			_, rel, _ := strings.Cut(wantFile, "dist-packages/")
			if !strings.HasSuffix(got, "/site/"+rel) {
				t.Errorf("file = %s, want …/site/%s", got, rel)
			}
			if int(locs[0].Range.Start.Line)+1 != wantLine {
				t.Errorf("line = %d, want %d (from inspect)", locs[0].Range.Start.Line+1, wantLine)
			}
		})
	}

	t.Run("torch.compile does not exist in 1.13, and the hover says so", func(t *testing.T) {
		line, col := at(t, text, "torch.compile(model", 0, 6)
		h, err := s.client.Hover(s.ctx(2*time.Minute), uri, line, col)
		if err != nil || h == nil || !strings.Contains(h.Contents.Value, "does not exist in torch 1.13") {
			t.Fatalf("hover = %+v, %v", h, err)
		}
		locs, err := s.client.Definition(s.ctx(time.Minute), uri, line, col)
		if err != nil || len(locs) != 0 {
			t.Errorf("definition = %+v, %v; want none", locs, err)
		}
	})
	s.shutdown()
}
