package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/internal/torch26"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// cgUser is a workspace file no editor opens: two references of torch's
// cudagraph_trees.get_obj.
const cgUser = `from torch._inductor.cudagraph_trees import get_obj


def lookup(local):
    return get_obj(local, "tree_manager_containers")
`

// TestTorch26ReferencesReachClosedFiles is issue 36's case on a real
// torch 2.6: the editor has followed a definition into the mirror and
// asks there for the references of cudagraph_trees.get_obj. The answer
// holds torch's own uses (every NAME token get_obj of the container's
// cudagraph_trees.py, by Python's tokenize) and the workspace's, in a
// file no editor opened.
func TestTorch26ReferencesReachClosedFiles(t *testing.T) {
	t.Parallel()
	ct := torch26.Start(t)
	want := strings.Fields(ct.Run(t, torch26.Python, "-c", `
import tokenize, torch
with open(torch.__path__[0] + "/_inductor/cudagraph_trees.py", "rb") as f:
    for tok in tokenize.tokenize(f.readline):
        if tok.type == tokenize.NAME and tok.string == "get_obj":
            print("%d:%d" % tok.start)
`))
	if len(want) < 2 {
		t.Fatalf("the container's cudagraph_trees.py names get_obj at %q", want)
	}
	env := start(t, options{
		settings: mustJSON(t, map[string]any{
			"defaultTarget": "ct200",
			"targets":       map[string]any{"ct200": map[string]any{"exec": ct.Exec(), "python": torch26.Python}},
		}),
		files: map[string]string{"cg_user.py": cgUser},
	})
	env.AwaitProgressEnd("torchlsp: torch on ct200")
	mirrored := ""
	err := filepath.WalkDir(env.Sandbox.Cache, func(p string, d fs.DirEntry, err error) error {
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

	var inTorch, inWorkspace []string
	ws := lsptest.FileURI(env.Sandbox.Workdir) + "/"
	for _, l := range env.References(uri, env.At(uri, "def get_obj(", len("def "))) {
		at := fmt.Sprintf("%d:%d", l.Range.Start.Line+1, l.Range.Start.Character)
		switch {
		case strings.HasPrefix(l.URI, ws):
			inWorkspace = append(inWorkspace, strings.TrimPrefix(l.URI, ws)+":"+at)
		case strings.HasSuffix(l.URI, "/torch/_inductor/cudagraph_trees.py"):
			inTorch = append(inTorch, at)
		}
	}
	slices.Sort(inTorch)
	slices.Sort(want)
	t.Logf("get_obj: %d places in cudagraph_trees.py, the workspace's %q", len(inTorch), inWorkspace)
	if !slices.Equal(inTorch, want) {
		t.Errorf("references in cudagraph_trees.py at %q, want the container's %q", inTorch, want)
	}
	slices.Sort(inWorkspace)
	if w := []string{"cg_user.py:1:44", "cg_user.py:5:11"}; !slices.Equal(inWorkspace, w) {
		t.Errorf("references in the workspace at %q, want %q (cg_user.py is closed)", inWorkspace, w)
	}
}
