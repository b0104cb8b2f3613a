package remote

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestSiteNamesRefuse(t *testing.T) {
	t.Parallel()
	names := NewSiteNames([]string{"_target_only"}, "pthhook", "_target_hook")
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
		// setuptools' editable installs: their .pth imports the finder.
		{"__editable___myproj_0_1_finder", "Python imports it at start-up"},
		{"__editable___torch_2_11_0_finder", "Python imports it at start-up"},
		{"__editable__", "Python imports it at start-up"},
		{"__editable__anything", "Python imports it at start-up"},
		{"_editable_", ""},
		{"editable", ""},
		{"myproj", ""},
		// What the target's .pth files import.
		{"pthhook", "a .pth file on the target imports it"},
		{"_target_hook", "a .pth file on the target imports it"},
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
	if _, refused := NewSiteNames(nil).Refuse("pthhook"); refused {
		t.Errorf("a module another target's .pth files import was refused")
	}
	var none *SiteNames
	if _, refused := none.Refuse("__editable___myproj_0_1_finder"); !refused {
		t.Errorf("no SiteNames let an editable finder through")
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
			{Mirror: fakeMirror(t, "__editable___myproj_0_1_finder.py", map[string]string{"__editable___myproj_0_1_finder.py": "raise SystemExit\n"})},
			{Mirror: fakeMirror(t, "pthhook.py", map[string]string{"pthhook.py": "raise SystemExit\n"})},
		},
		TargetStdlib:  []string{"newmod"},
		TargetStartup: []string{"pthhook"},
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
	for name, phrase := range map[string]string{"json": "standard library", "enum": "standard library", "sitecustomize": "start-up", "newmod": "target's Python",
		"__editable___myproj_0_1_finder": "start-up", "pthhook": ".pth file on the target"} {
		if !strings.Contains(left[name], phrase) {
			t.Errorf("left out %s: %q, want a reason with %q (all: %v)", name, left[name], phrase, site.Left)
		}
	}
	for _, name := range []string{"json", "enum.py", "sitecustomize.py", "newmod", "__editable___myproj_0_1_finder.py", "pthhook.py"} {
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

// TestStdlibModulesStartup: the target's helper names the modules the .pth
// files of its site directories import at start-up, as Python's site
// reads them (a line that starts with "import" is run; any other is a
// path or a comment), and none of them enters the site. The user site of
// a real interpreter holds the .pth files, so the interpreter itself runs
// them when it starts.
func TestStdlibModulesStartup(t *testing.T) {
	t.Parallel()
	spec := fixtureSpec(t)
	base := t.TempDir()
	env := append(os.Environ(), "PYTHONUSERBASE="+base)
	cmd := exec.Command(systemPython, "-c", "import site; print(site.getusersitepackages())")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	userSite := strings.TrimSpace(string(out))
	files := map[string]string{
		// What setuptools writes for `pip install -e` of myproj 0.1.
		"__editable__.myproj-0.1.pth":       "import __editable___myproj_0_1_finder; __editable___myproj_0_1_finder.install()\n",
		"__editable___myproj_0_1_finder.py": "def install():\n    pass\n",
		"hooks.pth":                         "import pthhook, pthpkg.sub as s\n# import commented\n  import notaline\nimport\ttabhook; from fromhook import x\n/a/path/line\n__import__('notrun')\nimport importlib; __import__('dunderhook'); importlib.import_module('modhook')\n",
		"pthhook.py":                        "",
		"pthpkg/__init__.py":                "",
		"pthpkg/sub.py":                     "",
		"tabhook.py":                        "",
		"fromhook.py":                       "x = 1\n",
		"dunderhook.py":                     "",
		"modhook.py":                        "",
		"notes.txt":                         "import nottext\n",
		"broken.pth":                        "import (\n",
		// Python 3.13 reads a .pth file as "utf-8-sig": this line runs.
		"bom.pth":    "\ufeffimport bomhook\n",
		"bomhook.py": "",
	}
	for rel, text := range files {
		p := filepath.Join(userSite, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec.UserSite = true
	spec.Env["PYTHONUSERBASE"] = base
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
	have := map[string]bool{}
	for _, n := range got.Startup {
		have[n] = true
	}
	for _, n := range []string{"__editable___myproj_0_1_finder", "pthhook", "pthpkg", "tabhook", "fromhook", "importlib", "dunderhook", "modhook", "bomhook"} {
		if !have[n] {
			t.Errorf("start-up modules %q lack %s", got.Startup, n)
		}
	}
	for _, n := range []string{"commented", "notaline", "notrun", "nottext", "s", "x", "sub"} {
		if have[n] {
			t.Errorf("start-up modules %q hold %s", got.Startup, n)
		}
	}
	names := NewTargetSiteNames(got)
	for _, n := range []string{"__editable___myproj_0_1_finder", "pthhook", "pthpkg", "modhook"} {
		if _, refused := names.Refuse(n); !refused {
			t.Errorf("%s may enter the site", n)
		}
	}
	cache := t.TempDir()
	t.Cleanup(func() { removeTree(cache) })
	site, err := BuildSite(context.Background(), cache, spec, SiteLayout{
		Packages: []SiteEntry{
			{Mirror: fakeMirror(t, "alpha", map[string]string{"alpha/__init__.py": "A = 1\n"})},
			{Mirror: fakeMirror(t, "pthpkg", map[string]string{"pthpkg/__init__.py": "raise SystemExit\n"})},
			{Mirror: fakeMirror(t, "dunderhook.py", map[string]string{"dunderhook.py": "raise SystemExit\n"})},
		},
		TargetStdlib: got.Names, TargetStartup: got.Startup,
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(site.Members, ",") != "alpha" || len(site.Left) != 2 {
		t.Errorf("members %v, left out %v; want alpha alone", site.Members, site.Left)
	}
	entries, err := os.ReadDir(site.Generation)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pth") {
			t.Errorf("the site holds %s", e.Name())
		}
	}
}

// A target that names start-up modules badly, or too many, is refused.
func TestStdlibModulesStartupRefused(t *testing.T) {
	t.Parallel()
	many := make([]string, maxStartupNames+1)
	for i := range many {
		many[i] = fmt.Sprintf("hook%d", i)
	}
	for _, tc := range []struct {
		name    string
		startup []string
		want    string
	}{
		{"a path", []string{"../evil"}, "not a top-level module name"},
		{"dotted", []string{"a.b"}, "not a top-level module name"},
		{"too many", many, "over the limit of 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			patch := fmt.Sprintf("_real_stdlib_modules = m_stdlib_modules\n"+
				"def m_stdlib_modules(params):\n    r = _real_stdlib_modules(params)\n    r['startup'] = %s\n    return r\n"+
				"METHODS['stdlib_modules'] = (m_stdlib_modules, True)\n", pyList(tc.startup))
			spec := hostileSpec(t, "torchlsp_helper", patch)
			c := newTestClientWith(t, spec)
			if _, err := c.StdlibModules(testContext(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("StdlibModules: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// pyList writes names as a Python list of strings.
func pyList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
