package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/internal/torch26"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestTorch26InContainer is an editor's session against a real torch 2.6
// in an LXC container entered with pct exec: hover and definition land on
// the container's own lines, the threaded compile gets TL001 citing the
// container's assert, and a definition inside the mirror goes on from
// there. The lines expected are read from the container in the test.
func TestTorch26InContainer(t *testing.T) {
	t.Parallel()
	ct := torch26.Start(t)
	facts := strings.Fields(ct.Run(t, torch26.Python, "-c", `
import inspect, torch
print(inspect.getsourcelines(torch.compile)[1])
with open(torch.__path__[0] + "/_inductor/cudagraph_trees.py") as f:
    print(next(i for i, l in enumerate(f, 1) if "assert torch._C._is_key_in_tls(attr_name)" in l))
`))
	if len(facts) != 2 {
		t.Fatalf("the container's torch said %q", facts)
	}
	compileLine, _ := strconv.Atoi(facts[0])
	assertLine := facts[1]

	env := start(t, options{settings: mustJSON(t, map[string]any{
		"defaultTarget": "ct200",
		"targets":       map[string]any{"ct200": map[string]any{"exec": ct.Exec(), "python": torch26.Python}},
	}), client: lsptest.Options{RelatedInformation: true}})
	uri := env.OpenFile("train.py")

	pos := env.At(uri, "torch.compile(model", len("torch."))
	h := env.Hover(uri, pos)
	if h == nil || !strings.Contains(h.Contents.Value, torch26.SitePackages+"/torch/__init__.py:"+facts[0]) || !strings.Contains(h.Contents.Value, "torch 2.6") {
		t.Fatalf("hover of torch.compile does not name the container's line %d of torch 2.6:\n%+v", compileLine, h)
	}
	locs := env.Definition(uri, pos)
	if len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "/site/torch/__init__.py") || int(locs[0].Range.Start.Line) != compileLine-1 {
		t.Fatalf("definition of torch.compile = %+v, want the mirror's torch/__init__.py:%d", locs, compileLine)
	}
	if got := lineText(t, uriPath(t, locs[0].URI), compileLine-1); !strings.Contains(got, "def compile(") {
		t.Errorf("the mirror's line %d is %q", compileLine, got)
	}

	diags := env.AwaitDiagnostics(uri, func(d lsptest.Diagnostics) bool {
		for _, x := range d.Diagnostics {
			if strings.HasPrefix(string(x.Code), "TL001") {
				return true
			}
		}
		return false
	})
	for _, x := range diags.Diagnostics {
		if !strings.HasPrefix(string(x.Code), "TL001") {
			continue
		}
		cited := false
		for _, r := range x.RelatedInformation {
			cited = cited || strings.HasPrefix(r.Message, "torch/_inductor/cudagraph_trees.py:"+assertLine+":")
		}
		if !cited || !strings.Contains(x.Message, "torch 2.6") {
			t.Errorf("TL001 does not cite the container's cudagraph_trees.py:%s:\n%+v", assertLine, x)
		}
	}
}
