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
// while they check the cached mirror with the target.
func TestDefinitionNamesOnePathInEveryRun(t *testing.T) {
	isolatedCLI(t)
	t.Setenv("PYTHONPATH", "")
	file := filepath.Join("..", "..", "examples", "threaded_compile.py")
	if code, out, errOut := cli(t, "hover", "--quiet", "--python", debianPython, file+":24:22"); code != 0 && code != 1 {
		t.Fatalf("hover: %d\n%s\n%s", code, out, errOut)
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
