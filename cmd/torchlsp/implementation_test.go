package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImplementationCommand runs `torchlsp implementation` on a real
// interpreter whose torch is the registration fixture of server/opimpl.
func TestImplementationCommand(t *testing.T) {
	tmp := isolatedCLI(t)
	site, err := filepath.Abs(filepath.Join("..", "..", "server", "opimpl", "testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", site)
	file := filepath.Join(tmp, "t.py")
	if err := os.WriteFile(file, []byte("import torch\n\ny = torch.add(1, 2)\nz = torch.randn(3)\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := cli(t, "implementation", "--quiet", "--python", debianPython, file+":3:11")
	if code != 0 {
		t.Fatalf("implementation: %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"/site/torch/_refs/__init__.py:58:2  decomposition, ref aten.add (add)\n",
		"  on the target: " + filepath.Join(site, "torch", "_refs", "__init__.py") + ":58\n",
		"/site/torch/_inductor/lowering.py:54:7  lowering aten.add\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "on the target: "); n != 2 {
		t.Errorf("%d places, want 2:\n%s", n, out)
	}

	// A torch name with nothing registered: exit 1 and say so.
	code, out, errOut = cli(t, "implementation", "--quiet", "--python", debianPython, file+":4:11")
	if code != 1 || out != "" || !strings.Contains(errOut, "no compiled-op registrations") {
		t.Errorf("implementation of torch.randn: %d\n%s\n%s", code, out, errOut)
	}
	if code, _, _ := cli(t, "implementation", file+":4"); code != 2 {
		t.Errorf("implementation without a column exited %d, want 2", code)
	}
}
