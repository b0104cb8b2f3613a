package remote

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSiteNamesRefuse(t *testing.T) {
	t.Parallel()
	names := NewSiteNames([]string{"_target_only"})
	tests := []struct {
		name   string
		reason string // a phrase of the reason; "" when accepted
	}{
		{"torch", ""},
		{"numpy", ""},
		{"typing_extensions", ""},
		{"json", "Python's standard library"},
		{"enum", "Python's standard library"},
		{"subprocess", "Python's standard library"},
		{"re", "Python's standard library"},
		{"distutils", "Python's standard library"}, // gone in 3.12: a local 3.11 still has it
		{"asynchat", "Python's standard library"},  // 3.8 and 3.9, from their directories
		{"tomllib", "Python's standard library"},   // new in 3.11
		{"annotationlib", "Python's standard library"},
		{"__future__", "Python's standard library"},
		{"_target_only", "the target's Python"},
		{"sitecustomize", "start-up"},
		{"usercustomize", "start-up"},
		{"_distutils_hack", "start-up"},
		{"_virtualenv", "start-up"},
	}
	for _, tc := range tests {
		reason, refused := names.Refuse(tc.name)
		if refused != (tc.reason != "") || !strings.Contains(reason, tc.reason) {
			t.Errorf("Refuse(%q) = %q, %v; want a reason with %q", tc.name, reason, refused, tc.reason)
		}
	}
	if _, refused := NewSiteNames(nil).Refuse("_target_only"); refused {
		t.Errorf("a name of another target's standard library was refused")
	}
}

// TestBuildSiteLeavesOutStandardLibrary: whoever made the layout, a
// package named like the standard library (the embedded list or the
// target's) or a start-up module is not linked, and the site says so.
func TestBuildSiteLeavesOutStandardLibrary(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	t.Cleanup(func() { removeTree(cache) })
	layout := SiteLayout{
		Packages: []SiteEntry{
			{Mirror: fakeMirror(t, "alpha", map[string]string{"alpha/__init__.py": "A = 1\n"})},
			{Mirror: fakeMirror(t, "json", map[string]string{"json/__init__.py": "raise SystemExit\n"})},
			{Mirror: fakeMirror(t, "enum.py", map[string]string{"enum.py": "raise SystemExit\n"})},
			{Mirror: fakeMirror(t, "sitecustomize.py", map[string]string{"sitecustomize.py": "raise SystemExit\n"})},
			{Mirror: fakeMirror(t, "newmod", map[string]string{"newmod/__init__.py": "raise SystemExit\n"})},
		},
		TargetStdlib: []string{"newmod"},
	}
	site, err := BuildSite(context.Background(), cache, Spec{Name: "gpu", Python: "python3"}, layout)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(site.Members, ",") != "alpha" {
		t.Errorf("members = %v, want alpha alone", site.Members)
	}
	left := map[string]string{}
	for _, l := range site.Left {
		left[l.Name] = l.Reason
	}
	for name, phrase := range map[string]string{"json": "standard library", "enum": "standard library", "sitecustomize": "start-up", "newmod": "target's Python"} {
		if !strings.Contains(left[name], phrase) {
			t.Errorf("left out %s: %q, want a reason with %q (all: %v)", name, left[name], phrase, site.Left)
		}
	}
	for _, name := range []string{"json", "enum.py", "sitecustomize.py", "newmod"} {
		if _, err := os.Lstat(filepath.Join(site.Path, name)); err == nil {
			t.Errorf("the site holds %s", name)
		}
	}
	if _, err := os.Stat(filepath.Join(site.Path, "alpha", "__init__.py")); err != nil {
		t.Errorf("alpha: %v", err)
	}
}

// TestStdlibModules asks the system interpreter for its standard library.
func TestStdlibModules(t *testing.T) {
	t.Parallel()
	spec := fixtureSpec(t)
	target := NewLocal(spec)
	c := NewClient(target, spec)
	t.Cleanup(func() {
		c.Close()
		target.Close()
	})
	got, err := c.StdlibModules(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	checkStdlib(t, got)
}

// checkStdlib checks a target's standard library list: the modules every
// Python has, nothing from site-packages or PYTHONPATH, and every name in
// the embedded list too.
func checkStdlib(t *testing.T, got StdlibModules) {
	t.Helper()
	have := map[string]bool{}
	for _, n := range got.Names {
		have[n] = true
	}
	for _, n := range []string{"json", "enum", "subprocess", "re", "os", "sys", "builtins", "importlib", "_ssl"} {
		if !have[n] {
			t.Errorf("the standard library (%s, %d names) lacks %s", got.Source, len(got.Names), n)
		}
	}
	for _, n := range []string{"fixturepkg", "pip", "torch", "site_packages", "lib_dynload"} {
		if have[n] {
			t.Errorf("the standard library (%s) has %s", got.Source, n)
		}
	}
	for n := range have {
		if !embeddedStdlib()[n] && !strings.HasPrefix(n, "_test") && !strings.HasPrefix(n, "xx") && n != "test" && n != "sitecustomize" {
			t.Errorf("%s (%s) is not in the embedded list: run go generate ./remote", n, got.Source)
		}
	}
}
