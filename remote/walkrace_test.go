package remote

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A package directory swapped for a link to a directory outside the
// package just after its parent was listed is not entered: the mirror
// script's walk (the same in the helper, TestTargetFileRuleIsShared) lists
// each directory through a descriptor opened with O_NOFOLLOW, so no name
// from outside the package reaches the stream, not even in its skip list.
// The swap is made deterministic by a patch in front of the script that
// makes it right after any listing that shows the directory.
func TestMirrorWalkRefusesDirectorySwappedForLink(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	pkg := filepath.Join(tmp, "site", "torch")
	outside := filepath.Join(tmp, "outside")
	for rel, text := range map[string]string{
		"site/torch/__init__.py":  "X = 1\n",
		"site/torch/sub/m.py":     "M = 1\n",
		"outside/outside_leak.py": "LEAK = 1\n",
	} {
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs(filepath.Join("helper", "torchlsp_mirror.py"))
	if err != nil {
		t.Fatal(err)
	}
	patch := `
import os, runpy, sys
PKG, OUT, SCRIPT = sys.argv[1], sys.argv[2], sys.argv[3]
_scandir = os.scandir
swapped = []
class Listing:
    def __init__(self, entries): self.entries = entries
    def __enter__(self): return iter(self.entries)
    def __exit__(self, *exc): return False
    def __iter__(self): return iter(self.entries)
def scandir(path="."):
    with _scandir(path) as it:
        entries = list(it)
    if not swapped and any(e.name == "sub" for e in entries):
        os.rename(os.path.join(PKG, "sub"), os.path.join(PKG, "sub.real"))
        os.symlink(OUT, os.path.join(PKG, "sub"))
        swapped.append(True)
    return Listing(entries)
os.scandir = scandir
sys.argv = [SCRIPT]
runpy.run_path(SCRIPT, run_name="__main__")
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-c", patch, pkg, outside, script)
	cmd.Stdin = strings.NewReader(`{"site":"` + filepath.Dir(pkg) + `","member":"torch","is_package":true}` + "\n")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mirror script: %v\n%s", err, stderr.String())
	}
	if fi, err := os.Lstat(filepath.Join(pkg, "sub")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the patch did not swap the directory for a link: %v", err)
	}
	if i := bytes.Index(out.Bytes(), []byte("outside_leak")); i >= 0 {
		t.Errorf("the stream names a file of the directory a link points to: …%q…", out.Bytes()[max(i-120, 0):min(i+120, out.Len())])
	}
	if !bytes.Contains(out.Bytes(), []byte("torch/__init__.py")) {
		t.Errorf("the package's own file is missing from the stream")
	}
}
