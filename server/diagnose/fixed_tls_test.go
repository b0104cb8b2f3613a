package diagnose

import (
	"fmt"
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

// The shapes of pytorch PR 184357 ("Fix cudagraph trees in Python
// threads": per-thread state created lazily, graph capture serialised by
// a module-level lock), laid over a cudagraph_trees.py by text. assert is
// get_obj's assert and what follows it in that tree, indent its
// indentation.
type captureLockTree struct {
	name, assert, indent string
}

// withCaptureLock adds the module-level capture lock and a capture made
// under it; get_obj keeps its assert.
func (tr captureLockTree) withCaptureLock(old string) string {
	s := strings.Replace(old, "local = threading.local()\n",
		"local = threading.local()\n\n# one capture at a time, whatever thread asks\ngraph_capture_lock = threading.Lock()\n", 1)
	return s + "\n\ndef _capture_locked(graph, model, inputs):\n" +
		"    with graph_capture_lock, torch.cuda.graph(graph, capture_error_mode=\"thread_local\"):\n" +
		"        return model(inputs)\n"
}

// lazyGetObj makes get_obj create the state of a thread that has none
// instead of asserting.
func (tr captureLockTree) lazyGetObj(old string) string {
	in := tr.indent
	return strings.Replace(old, tr.assert,
		in+"if not torch._C._is_key_in_tls(attr_name):\n"+
			in+"    obj = {}\n"+
			in+"    setattr(local, attr_name, obj)\n"+
			in+"    torch._C._stash_obj_in_tls(attr_name, obj)\n"+
			in+"    return obj\n"+
			in+"return torch._C._get_obj_in_tls(attr_name)", 1)
}

// lazyContainer keeps get_obj's assert but fills the thread-local in
// get_container before it asks: the assert is never reached.
func (tr captureLockTree) lazyContainer(old string) string {
	return strings.Replace(old, "def get_container(device_index: int)",
		"def _ensure_thread_state() -> None:\n"+
			"    if not hasattr(local, \"tree_manager_containers\"):\n"+
			"        local.tree_manager_containers = {}\n"+
			"        local.tree_manager_locks = {}\n\n\n"+
			"def get_container(device_index: int)", 1)
}

// patchTrees is a copy of base with the overlays laid over it and its
// cudagraph_trees.py patched.
func patchTrees(t *testing.T, name, base string, overlays []string, patch func(string) string) site {
	t.Helper()
	dir := copySite(t, base)
	for _, o := range overlays {
		if out, err := exec.Command("cp", "-R", filepath.Join(hazardOverlays, o)+"/.", dir).CombinedOutput(); err != nil {
			t.Fatalf("overlay %s: %v\n%s", o, err, out)
		}
	}
	path := filepath.Join(dir, "torch", "_inductor", "cudagraph_trees.py")
	old := string(readFile(t, path))
	fixed := patch(old)
	if fixed == old {
		t.Fatalf("the patch changed nothing in %s", path)
	}
	if err := os.WriteFile(path, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	return scanSite(t, name, dir)
}

// TL001 on the shape of the upstream fix (PR 184357): silent where
// get_obj makes a new thread's state instead of asserting, or where a
// function fills that state before get_obj asks; still an error where the
// capture lock came but the assert stays, since get_obj runs before any
// capture. TL014 keeps its own evidence (output_code.py, PR 186192), and
// TL002 (trees off: legacy CUDA graphs) its own.
func TestTL001OnTheCaptureLockFix(t *testing.T) {
	t.Parallel()
	const poolSrc = `from concurrent.futures import ThreadPoolExecutor

import torch

model = torch.compile(torch.nn.Linear(8, 8).cuda(), mode="reduce-overhead")

with ThreadPoolExecutor(4) as pool:
    outs = list(pool.map(model, [torch.randn(4, 8, device="cuda") for _ in range(16)]))
`
	trees := []struct {
		tree     captureLockTree
		base     func(t *testing.T) string
		overlays []string // the shipped shapes of TL011–TL014
		fixed    []string // the same with PR 186192's shape
	}{
		{captureLockTree{"hazards", "    assert torch._C._is_key_in_tls(attr_name)\n    return None", "    "},
			func(*testing.T) string { return fixtureSite }, []string{"shipped"}, []string{"shipped", "shared_fixed"}},
		{captureLockTree{"torch211", "        assert torch._C._is_key_in_tls(attr_name)\n        return torch._C._get_obj_in_tls(attr_name)", "        "},
			func(t *testing.T) string { return torch211Dir(t) }, nil, nil},
	}
	for _, tc := range trees {
		t.Run(tc.tree.name, func(t *testing.T) {
			t.Parallel()
			base := tc.base(t)
			tr := tc.tree
			shipped := patchTrees(t, "shipped", base, tc.overlays, func(s string) string { return s + "\n" })
			lockOnly := patchTrees(t, "lock-only", base, tc.overlays, tr.withCaptureLock)
			fix := patchTrees(t, "pr184357", base, tc.overlays, func(s string) string { return tr.lazyGetObj(tr.withCaptureLock(s)) })
			container := patchTrees(t, "lazy-container", base, tc.overlays, func(s string) string { return tr.lazyContainer(tr.withCaptureLock(s)) })
			files := []string{"tl001_mode.py", "tl001_autotune.py", "tl001_config.py", "tl001_env.py"}
			for _, file := range files {
				src := readFile(t, filepath.Join("testdata/check", file))
				for _, s := range []site{shipped, lockOnly} {
					ds := check(s, src)
					assertAt := cudagraphDecision{&checker{files: newSiteFiles(s.dir)}}.tlsAssert()
					if assertAt < 0 || count(ds, CodeCudagraphsInThreads) != 1 ||
						!strings.Contains(render(ds), fmt.Sprintf("cudagraph_trees.py:%d", assertAt+1)) {
						t.Errorf("%s on %s: want one TL001 citing get_obj's assert (line %d)\n%s", file, s.name, assertAt+1, render(ds))
					}
				}
				for _, s := range []site{fix, container} {
					if ds := check(s, src); count(ds, CodeCudagraphsInThreads) != 0 {
						t.Errorf("%s on %s: want no TL001\n%s", file, s.name, render(ds))
					}
				}
			}
			off := readFile(t, filepath.Join("testdata/check", "tl002_trees_off.py"))
			if ds := check(fix, off); count(ds, CodeTreesOffInThreads) != 1 {
				t.Errorf("TL002 on %s: want one\n%s", fix.name, render(ds))
			}
			// TL014 rests on output_code.py, which PR 184357 leaves alone.
			if ds := check(fix, []byte(poolSrc)); count(ds, CodeSharedCallable) != 1 || count(ds, CodeCudagraphsInThreads) != 0 {
				t.Errorf("pool on %s: want TL014 and no TL001\n%s", fix.name, render(ds))
			}
			if tc.fixed == nil {
				return
			}
			both := patchTrees(t, "both-fixes", base, tc.fixed, func(s string) string { return tr.lazyGetObj(tr.withCaptureLock(s)) })
			if ds := check(both, []byte(poolSrc)); count(ds, CodeSharedCallable)+count(ds, CodeCudagraphsInThreads) != 0 {
				t.Errorf("pool on a torch with both fixes: want neither TL001 nor TL014\n%s", render(ds))
			}
		})
	}
}
