package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// isolatedCLI skips the test without Debian's python3-torch and points
// torchlsp's config, cache and state at a fresh directory, which it
// returns.
func isolatedCLI(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is missing: run scripts/setup.sh --test", debianPython)
	}
	tmp := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
	return tmp
}

// ownWorkspace copies the user-code fixture into a fresh workspace, with
// the configuration directories of its own.
func ownWorkspace(t *testing.T) string {
	t.Helper()
	tmp := isolatedCLI(t)
	ws := filepath.Join(tmp, "ws")
	if err := os.CopyFS(ws, os.DirFS(filepath.Join("..", "..", "server", "repro", "testdata", "ownws"))); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestExplainCommand prints the two deliberate graph breaks of the
// fixture's step on their lines, and the report with the counts.
func TestExplainCommand(t *testing.T) {
	ws := ownWorkspace(t)
	file := filepath.Join(ws, "breaks.py")
	code, out, errOut := cli(t, "explain", "--quiet", "--python", debianPython, file+":17")
	if code != 0 {
		t.Fatalf("explain: %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		file + ":12:5: Graph break: stand-in: print()",
		file + ":13:5: Graph break: stand-in: Tensor.item()",
		file + ":10:1: Recompile: stand-in: input signature changed",
		"2 graph break(s), 1 recompile(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := cli(t, "explain", "--quiet", "--python", debianPython, file+":3"); code == 0 || !strings.Contains(errOut, "no torch.compile call at or before line 3") {
		t.Errorf("explain above the call: %d %q", code, errOut)
	}
}

// TestReproOwnCommand runs the user's model with its captured first call.
func TestReproOwnCommand(t *testing.T) {
	ws := ownWorkspace(t)
	file := filepath.Join(ws, "train.py")
	code, out, errOut := cli(t, "repro", "--own", "--gpus", "1", "--quiet", "--python", debianPython, file+":17")
	if code != 0 {
		t.Fatalf("repro --own: %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"TinyGPT (tinygpt/model.py)", "Inputs (captured", "arg 0: int64[3, 12] cpu", "| threads | **FAIL**"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "threads-per-gpu") {
		t.Errorf("--gpus 1 ran the per-GPU variants:\n%s", out)
	}
}
