package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Once a run has mirrored torch, every later run's answer names the
// mirror's file: the same path in every run, never an on-demand copy of
// its own that is removed an hour later. Debian's own torch, as the
// README's demo asks it: its import takes seconds, so later runs answer
// while they check the cached mirror with the target. A name that torch
// lacks has no definition, and the run says why.
func TestDefinitionNamesOnePathInEveryRun(t *testing.T) {
	isolatedCLI(t)
	t.Setenv("PYTHONPATH", "")
	file := filepath.Join("..", "..", "examples", "threaded_compile.py")
	if code, out, errOut := cli(t, "hover", "--quiet", "--python", debianPython, file+":24:22"); code != 0 && code != 1 {
		t.Fatalf("hover: %d\n%s\n%s", code, out, errOut)
	}
	// torch 1.13 has no torch.compile: the definition says so.
	code, out, errOut := cli(t, "definition", "--quiet", "--python", debianPython, file+":24:22")
	if code != 1 || out != "" || !strings.Contains(errOut, "no definition: torch.compile does not exist in torch 1.13") {
		t.Errorf("definition of torch.compile in torch 1.13: %d\n%s\n%s", code, out, errOut)
	}
	var paths []string
	for run := 1; run <= 2; run++ {
		code, out, errOut := cli(t, "definition", "--quiet", "--python", debianPython, file+":17:24")
		first, _, _ := strings.Cut(out, "\n")
		if code != 0 || !strings.HasSuffix(first, "/site/torch/nn/modules/linear.py:48:7") {
			t.Fatalf("definition, run %d: %d\n%s\n%s", run, code, out, errOut)
		}
		paths = append(paths, first)
	}
	if paths[0] != paths[1] || strings.Contains(paths[0], "/ondemand/") {
		t.Errorf("two runs named %s and %s: want the mirror's one path", paths[0], paths[1])
	}
}
