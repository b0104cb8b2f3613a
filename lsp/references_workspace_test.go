package lsp_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/plant"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// wsTrain is a workspace file no editor opens: two references of torch's
// get_obj, through an import and a module alias.
const wsTrain = `from torch._inductor.cudagraph_trees import get_obj
import torch._inductor.cudagraph_trees as trees


def step(m):
    return get_obj(m, "x"), trees.get_obj(m, "y")
`

// TestReferencesFromAMirrorReachClosedFiles: the editor opens only a
// file of the mirror (after a jump into torch) and asks for the
// references of torch's get_obj; the answer holds torch's own uses and
// the workspace's files that no editor has open, read from disk, in
// LSP's units; so do the incoming calls. The workspace's hostile files (a named pipe, a link to
// /dev/zero, a link out of it, a 50 MB file) are skipped without a wait.
// Once a workspace file is open, its buffer stands for it.
func TestReferencesFromAMirrorReachClosedFiles(t *testing.T) {
	t.Parallel()
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s is missing", python)
	}
	site, err := filepath.Abs(filepath.Join("..", "testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	plant.Tree(t, outside, map[string]string{"secret.py": "from torch._inductor.cudagraph_trees import get_obj\nget_obj(1, 2)\n"})
	env := lsptest.Start(t, lsptest.Config{
		Files: map[string]string{
			"train.py":       wsTrain,
			"lib/edited.py":  "import torch\n", // the buffer below differs
			".venv/lib/m.py": "from torch._inductor.cudagraph_trees import get_obj\nget_obj(1, 2)\n",
		},
		Settings: []byte(`{"defaultTarget": "fixture", "targets": {"fixture": {"python": "` + python + `", "env": {"PYTHONPATH": "` + site + `"}}}}`),
		Timeout:  2 * time.Minute,
	})
	ws := env.Sandbox.Workdir
	plant.Tree(t, ws, map[string]string{
		"fifo.py": "|fifo",
		"zero.py": "->/dev/zero",
		"out.py":  "->" + filepath.Join(outside, "secret.py"),
	})
	big, err := os.Create(filepath.Join(ws, "big.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(50 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	env.AwaitProgressEnd("torchlsp: torch on fixture")

	mirrored := ""
	err = filepath.WalkDir(env.Sandbox.Cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, "/site/torch/_inductor/cudagraph_trees.py") {
			mirrored = p
			return fs.SkipAll
		}
		return nil
	})
	if err != nil || mirrored == "" {
		t.Fatalf("no mirrored cudagraph_trees.py under %s: %v", env.Sandbox.Cache, err)
	}
	text, err := os.ReadFile(mirrored)
	if err != nil {
		t.Fatal(err)
	}
	uri := lsptest.FileURI(mirrored)
	env.OpenBuffer(uri, string(text))
	at := env.At(uri, "def get_obj(", len("def "))

	var refs []lsptest.Location
	plant.Within(t, time.Minute, func() { refs = env.References(uri, at) })
	inWorkspace := func(refs []lsptest.Location) (ws []string, torch int) {
		for _, l := range refs {
			p := strings.TrimPrefix(l.URI, "file://")
			if rel, err := filepath.Rel(env.Sandbox.Workdir, p); err == nil && !strings.HasPrefix(rel, "..") {
				r := l.Range // 0-based, in UTF-16 units
				ws = append(ws, fmt.Sprintf("%s:%d:%d-%d:%d", rel, r.Start.Line, r.Start.Character, r.End.Line, r.End.Character))
			} else {
				torch++
			}
		}
		slices.Sort(ws)
		return ws, torch
	}
	got, torch := inWorkspace(refs)
	want := []string{"train.py:0:44-0:51", "train.py:5:11-5:18", "train.py:5:34-5:41"}
	if !slices.Equal(got, want) || torch < 2 {
		t.Errorf("references of get_obj from the mirror: workspace %q and %d in torch; want %q and torch's own", got, torch, want)
	}

	// Incoming calls: step, in the closed train.py, calls get_obj twice.
	var items []map[string]any
	params := map[string]any{"textDocument": map[string]string{"uri": uri}, "position": at}
	if err := env.Client().Call(env.Ctx(), "textDocument/prepareCallHierarchy", params, &items); err != nil || len(items) != 1 {
		t.Fatalf("prepareCallHierarchy = %+v, %v", items, err)
	}
	var calls []struct {
		From struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"from"`
		FromRanges []lsptest.Range `json:"fromRanges"`
	}
	if err := env.Client().Call(env.Ctx(), "callHierarchy/incomingCalls", map[string]any{"item": items[0]}, &calls); err != nil {
		t.Fatal(err)
	}
	var callers []string
	for _, c := range calls {
		if strings.HasPrefix(c.From.URI, lsptest.FileURI(ws)+"/") {
			callers = append(callers, fmt.Sprintf("%s %s %d", c.From.Name, strings.TrimPrefix(c.From.URI, lsptest.FileURI(ws)+"/"), len(c.FromRanges)))
		}
	}
	if want := []string{"step train.py 2"}; !slices.Equal(callers, want) {
		t.Errorf("incoming calls from the workspace = %q, want %q", callers, want)
	}

	// Opened, a file is searched as its buffer is, never from disk too.
	edited := lsptest.FileURI(filepath.Join(ws, "lib", "edited.py"))
	env.OpenBuffer(edited, "from torch._inductor import cudagraph_trees as ct\n\nct.get_obj(None, 'é')\n")
	got, _ = inWorkspace(env.References(uri, at))
	want = []string{"lib/edited.py:2:3-2:10", "train.py:0:44-0:51", "train.py:5:11-5:18", "train.py:5:34-5:41"}
	if !slices.Equal(got, want) {
		t.Errorf("with lib/edited.py open: workspace %q, want %q", got, want)
	}
}
