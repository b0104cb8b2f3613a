package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hazardsScript compiles a function with CUDA graphs (line 4), a
// module for varying sizes (line 11), a module called in grad mode (line
// 15) and a function first called in a capture (line 20).
const hazardsScript = `import torch


@torch.compile(mode="reduce-overhead")
def double(x):
    return x * 2


outs = [double(torch.randn(8)) for _ in range(4)]

model = torch.compile(torch.nn.Linear(16, 16), mode="reduce-overhead", dynamic=False)
for bs in range(1, 13):
    model(torch.randn(bs, 16))

net = torch.compile(torch.nn.Linear(16, 16), mode="reduce-overhead")
for _ in range(12):
    y = net(torch.randn(4, 16))


@torch.compile()
def sine(x):
    return x.sin()


g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = sine(torch.randn(8))
`

// TestReproHazardCommand: --hazard runs that hazard's variants instead of
// the threading ones, on Debian's torch through the stand-in, and prints
// their verdicts; an unknown code is a usage error naming the known ones.
func TestReproHazardCommand(t *testing.T) {
	file := filepath.Join(isolatedCLI(t), "hazards.py")
	if err := os.WriteFile(file, []byte(hazardsScript), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		hazard, line string
		want         []string
	}{
		{"TL011", "4", []string{"kept-outputs repro (TL011)", "kept outputs overwritten: 3 of 4 read wrong — the hazard TL011 describes", "cloned: 4 of 4 right"}},
		{"TL013", "11", []string{"varying-sizes repro (TL013)", "4 calls ran uncompiled past recompile_limit (8) — the hazard TL013 describes",
			"bucketed sizes: 12 sizes padded to 5, 5 graphs compiled"}},
		{"TL016", "15", []string{"pending-backward repro (TL016)", "pending backwards: 12 calls, torch warned (fast path missed), none replayed a CUDA graph — the hazard TL016 describes",
			"no_grad: 12 calls, no warning, 11 replayed a CUDA graph"}},
		{"TL017", "20", []string{"first-call-in-capture repro (TL017)", "first call in capture: raised BackendCompilerFailed — the hazard TL017 describes",
			"warmed up (3 calls): captured, 4 of 4 replays right"}},
	}
	for _, tt := range tests {
		t.Run(tt.hazard, func(t *testing.T) {
			code, out, errOut := cli(t, "repro", "--hazard", tt.hazard, "--quiet", "--python", debianPython, file+":"+tt.line)
			if code != 0 {
				t.Fatalf("repro --hazard %s: %d\n%s\n%s", tt.hazard, code, out, errOut)
			}
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "| threads |") || strings.Contains(out, "| main-thread |") {
				t.Errorf("the threading variants ran:\n%s", out)
			}
		})
	}
	code, out, errOut := cli(t, "repro", "--hazard", "TL001", "--quiet", "--python", debianPython, file+":4")
	if code != 2 || out != "" || !strings.Contains(errOut, `--hazard "TL001": the hazards with repro variants are TL011, TL013, TL016, TL017`) {
		t.Errorf("an unknown hazard: %d out %q err %q", code, out, errOut)
	}
}
