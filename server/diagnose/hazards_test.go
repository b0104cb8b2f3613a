package diagnose

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const hazardOverlays = "testdata/hazards"

// copySite copies a torch tree (the tree itself, never a link to it: the
// changes made to the copy must not reach the original) into a new
// temporary directory.
func copySite(t testing.TB, from string) string {
	t.Helper()
	from, err := filepath.EvalSymlinks(from)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "site")
	if out, err := exec.Command("cp", "-R", from, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v\n%s", from, err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", dir).CombinedOutput(); err != nil {
		t.Fatalf("chmod %s: %v\n%s", dir, err, out)
	}
	return dir
}

// overlaySite is a copy of base with the overlays of testdata/hazards
// laid over it, in order.
func overlaySite(t testing.TB, name, base string, overlays ...string) site {
	t.Helper()
	dir := copySite(t, base)
	for _, o := range overlays {
		src := filepath.Join(hazardOverlays, o)
		if out, err := exec.Command("cp", "-R", src+"/.", dir).CombinedOutput(); err != nil {
			t.Fatalf("overlay %s: %v\n%s", o, err, out)
		}
	}
	return scanSite(t, name, dir)
}

// patchedSite is a copy of base with one file's text replaced; the patch
// must change it.
func patchedSite(t testing.TB, name, base, rel, old, new string) site {
	t.Helper()
	dir := copySite(t, base)
	path := filepath.Join(dir, filepath.FromSlash(rel))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	patched := strings.Replace(string(b), old, new, 1)
	if patched == string(b) {
		t.Fatalf("the patch changed nothing in %s", path)
	}
	if err := os.WriteFile(path, []byte(patched), 0o644); err != nil {
		t.Fatal(err)
	}
	return scanSite(t, name, dir)
}

// torch211Dir is the torch 2.11 tree, or a skip.
func torch211Dir(t testing.TB) string {
	t.Helper()
	return torch211(t).dir
}

// The shapes of the fixes, made from torch 2.11's own files: config
// overrides in a ContextVar (torch 2.12's _config_module.py) and a
// per-thread current_callable (pytorch PR 186192).
const (
	ctxvarOld = "@dataclass\nclass _ConfigEntry:\n"
	ctxvarNew = "from contextvars import ContextVar\n\n_user_overrides: ContextVar[dict] = ContextVar(\"_user_overrides\", default={})\n\n\n@dataclass\nclass _ConfigEntry:\n"

	callableOld = "    current_callable: Optional[Callable[..., Any]]\n    recursively_apply_fns"
	callableNew = "    @property\n    def current_callable(self) -> Optional[Callable[..., Any]]:\n        return _per_thread_callable(self)\n\n    recursively_apply_fns"
)

func init() {
	siteMakers["hazards"] = func(t *testing.T) site {
		return overlaySite(t, "hazards", fixtureSite, "shipped")
	}
	siteMakers["hazards-ctxvar"] = func(t *testing.T) site {
		return overlaySite(t, "hazards-ctxvar", fixtureSite, "shipped", "ctxvar")
	}
	siteMakers["hazards-fixed"] = func(t *testing.T) site {
		return overlaySite(t, "hazards-fixed", fixtureSite, "shipped", "shared_fixed")
	}
	siteMakers["torch211-ctxvar"] = func(t *testing.T) site {
		return patchedSite(t, "torch211-ctxvar", torch211Dir(t), fileConfigModule, ctxvarOld, ctxvarNew)
	}
	siteMakers["torch211-fixed"] = func(t *testing.T) site {
		return patchedSite(t, "torch211-fixed", torch211Dir(t), fileOutputCode, callableOld, callableNew)
	}
}

// Each hazard is decided by its line in the target's torch: torch 2.11
// has the overwrite check and the shared callable, and keeps config
// process-wide.
func TestHazardLinesOn211(t *testing.T) {
	t.Parallel()
	s := torch211(t)
	c := &checker{files: newSiteFiles(s.dir)}
	for _, tc := range []struct {
		name, file, want string
		line             int
	}{
		{"overwrite check", fileTrees, "overwritten by a subsequent run", ruleTL011{c}.overwriteCheck()},
		{"replays free silently", fileTrees, "def try_end_curr_execution(", ruleTL011{c}.silentReplays()},
		{"shared callable", fileOutputCode, "current_callable", ruleTL014{c}.sharedCallable()},
		{"recomputation check", fileCheckpoint, "A different number of tensors was saved", tl019Lines(c).count},
		{"recomputation", fileCheckpoint, "frame.recompute_fn", tl019Lines(c).recompute},
		{"reentrant recomputation", fileCheckpoint, "ctx.run_function(", tl019Lines(c).reentrant},
		{"reentrant default", fileCheckpoint, "use_reentrant = True", tl019Lines(c).reentrantDefault},
	} {
		if tc.line < 0 || !strings.Contains(c.files.text(tc.file, tc.line), tc.want) {
			t.Errorf("%s: %s:%d does not hold %q", tc.name, tc.file, tc.line+1, tc.want)
		}
	}
	if l := (ruleTL012{c}).perThreadConfig(); l >= 0 {
		t.Errorf("torch 2.11 keeps config overrides process-wide, but a ContextVar was found at %s:%d", fileConfigModule, l+1)
	}
}

// tl019Lines reads TL019's lines of checkpoint.py, or -1 for each when
// the check is absent.
func tl019Lines(c *checker) checkpointLines {
	l, ok := ruleTL019{c}.lines()
	if !ok {
		return checkpointLines{-1, -1, -1, -1, -1, -1}
	}
	return l
}

// On a torch whose checkpoint.py does not check the recomputation (the
// fixture's), TL019 finds no line and stays silent.
func TestTL019SilentWithoutCheck(t *testing.T) {
	t.Parallel()
	c := &checker{files: newSiteFiles(fixture(t).dir)}
	if l, ok := (ruleTL019{c}).lines(); ok {
		t.Errorf("the fixture's checkpoint.py has no recomputation check, but TL019 found one at line %d", l.count+1)
	}
}
