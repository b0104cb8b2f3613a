package runs

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/source"
)

// TestReproSpec reads a compile call's settings and the config changes of
// its file into the repro's spec.
func TestReproSpec(t *testing.T) {
	cat, err := gates.Scan(context.Background(), filepath.Join("..", "..", "testdata", "site"), gates.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := []byte(`import torch
import torch._inductor.config as cfg

cfg.triton.cudagraph_trees = False
with cfg.patch("triton.cudagraphs", True):
    pass

def f(x):
    return x

g = torch.compile(f, mode="reduce-overhead", backend="inductor", fullgraph=True, dynamic=False,
                  options={"triton.cudagraphs": False})
`)
	doc, _ := source.NewStore(0, nil).Open("file:///w/t.py", "", 1, string(src))
	call, ok := compileCallNear(doc.Buffer(), 11)
	if !ok {
		t.Fatal("no compile call found")
	}
	spec := reproSpec(doc.FlagRefs(cat), call, cat, 3)
	if spec.Mode != "reduce-overhead" || spec.Backend != "inductor" || !spec.Fullgraph || spec.Dynamic == nil || *spec.Dynamic || spec.Threads != 3 {
		t.Errorf("call settings: %+v", spec)
	}
	if spec.Options["triton.cudagraphs"] != "False" {
		t.Errorf("options = %v", spec.Options)
	}
	if spec.StandIn != !cat.HasCompile {
		t.Errorf("StandIn = %v with HasCompile %v", spec.StandIn, cat.HasCompile)
	}
	want := map[string]string{"triton.cudagraph_trees": "False", "triton.cudagraphs": "True"}
	got := map[string]string{}
	for _, c := range spec.Config {
		if c.Module != "torch._inductor.config" {
			t.Errorf("config module %q", c.Module)
		}
		got[c.Key] = c.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("config %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}
