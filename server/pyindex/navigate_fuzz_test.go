package pyindex

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// maxFuzzNavSource is the largest text FuzzDefinitionAt navigates.
const maxFuzzNavSource = 64 << 10

// FuzzDefinitionAt checks that no text, however broken, makes navigation
// panic, answer outside the text, or give an error other than "not
// found": every identifier of the text is asked, as a module of the
// torch-shaped fixture. Inputs above maxFuzzNavSource are skipped: a
// parse of them may take syntax.CPULimit, past the input's deadline.
func FuzzDefinitionAt(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	for _, seed := range []string{
		"from . import config\nconfig.triton.cudagraph_trees\n",
		"from .. import functional as F\nclass A(F.X):\n    def f(self, y=1):\n        return super().f(y=y) + self.z\n",
		"import torch\nx = torch.nn.Linear(1, 2)\nx.forward(input=1)\n",
		"class A(A):\n    pass\nA().b\n",
		"def f():\n    global g\n    nonlocal h\n    g = [i for i in (j := 1)]\n",
		"from ..... import *\nfrom . import (a as",
		"match x:\n    case A(b=c) as d:\n        pass\n",
		strings.Repeat("(", 300) + "x",
		"lambda self: self.x\n@d.e\nclass C:\n    x: int\n    y = x\n",
	} {
		f.Add([]byte(seed))
	}
	site, err := filepath.Abs(filepath.Join("..", "..", "testdata", "site"))
	if err != nil {
		f.Fatal(err)
	}
	ix, err := Open(site, "")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		deadline.Start(t, src)
		if len(src) > maxFuzzNavSource {
			t.Skipf("%d bytes, over %d", len(src), maxFuzzNavSource)
		}
		tree, err := syntax.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		tab := pyscope.New(tree)
		s := Source{Module: "torch.nn.modules.fuzzed", Path: filepath.Join(site, "torch", "nn", "modules", "fuzzed.py"), Table: tab}
		lines := syntax.NewLines(src)
		for i, occ := range tab.Occurrences() {
			if i >= 200 {
				break
			}
			d, err := ix.DefinitionAt(s, tree.Start(occ.Node))
			if err != nil {
				if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrNoName) {
					t.Fatalf("%s: %v", tree.Text(occ.Node), err)
				}
				continue
			}
			if d.InSource && d.Symbol.File == "" {
				if d.Symbol.Line >= len(lines) {
					t.Fatalf("%s: answered line %d of a %d-line text", tree.Text(occ.Node), d.Symbol.Line, len(lines))
				}
			}
		}
	})
}
