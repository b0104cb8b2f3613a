package diagnose

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixedTLSSite copies a site and gives its torch a cudagraph_trees module
// whose per-thread state is created lazily (the shape of the upstream fix
// for pytorch issue 123177): the TLS assert TL001 rests on is gone.
func fixedTLSSite(t *testing.T, from string, patch func(old string) string) site {
	t.Helper()
	// Copy the tree itself, never a link to it: the patch below must not
	// reach the original.
	from, err := filepath.EvalSymlinks(from)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "site")
	if out, err := exec.Command("cp", "-R", from, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v\n%s", from, err, out)
	}
	path := filepath.Join(dir, "torch", "_inductor", "cudagraph_trees.py")
	if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
		t.Fatalf("the copy %s is not a directory of its own: %v", dir, err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fixed := patch(string(old))
	if fixed == string(old) {
		t.Fatalf("the patch changed nothing in %s", path)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	return scanSite(t, "fixed-tls", dir)
}

// TL001 rests on the code that fails in the target's torch: with the TLS
// assert, it is reported and cites that line; without it, nothing is said,
// while TL002 (trees off in threads) keeps its own evidence.
func TestTL001FollowsTheTLSAssert(t *testing.T) {
	t.Parallel()
	fixedFile := readFile(t, filepath.Join("testdata", "fixed_tls", "cudagraph_trees.py"))
	sites := []struct {
		name    string
		shipped func(t testing.TB) site
		patch   func(old string) string
		line    string // the assert, as cited
	}{
		{"fixture", fixture, func(string) string { return string(fixedFile) }, "cudagraph_trees.py:16"},
		{"torch 2.11", torch211, func(old string) string {
			return strings.Replace(old,
				"        assert torch._C._is_key_in_tls(attr_name)\n        return torch._C._get_obj_in_tls(attr_name)",
				"        if torch._C._is_key_in_tls(attr_name):\n            return torch._C._get_obj_in_tls(attr_name)\n        obj = {}\n        setattr(local, attr_name, obj)\n        return obj", 1)
		}, "cudagraph_trees.py:359"},
	}
	for _, st := range sites {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			shipped := st.shipped(t)
			fixed := fixedTLSSite(t, shipped.dir, st.patch)
			for _, file := range []string{"tl001_mode.py", "tl001_autotune.py", "tl001_config.py", "tl001_env.py"} {
				src := readFile(t, filepath.Join("testdata/check", file))
				ds := check(shipped, src)
				if count(ds, CodeCudagraphsInThreads) != 1 || !strings.Contains(render(ds), st.line) {
					t.Errorf("%s on the shipped torch: want one TL001 citing %s\n%s", file, st.line, render(ds))
				}
				if ds := check(fixed, src); count(ds, CodeCudagraphsInThreads) != 0 {
					t.Errorf("%s on a torch without the TLS assert: want no TL001\n%s", file, render(ds))
				}
			}
			src := readFile(t, filepath.Join("testdata/check", "tl002_trees_off.py"))
			if ds := check(fixed, src); count(ds, CodeTreesOffInThreads) != 1 {
				t.Errorf("TL002 on a torch without the TLS assert: want one\n%s", render(ds))
			}
		})
	}
}
