package remote

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// sitePkgs is a site-packages fixture: typed packages, a single-module
// distribution, requirements with extras, markers and chains.
func sitePkgs(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("../testdata/sitepkgs/site-packages")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeMirror lays out a mirror-shaped tree by hand: BuildSite reads only
// the site directory, the member and the byte count.
func fakeMirror(t testing.TB, member string, files map[string]string) *MirrorTree {
	t.Helper()
	root := t.TempDir()
	site := filepath.Join(root, "site")
	var total int64
	for rel, text := range files {
		p := filepath.Join(site, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o444); err != nil {
			t.Fatal(err)
		}
		total += int64(len(text))
	}
	return &MirrorTree{Root: root, SiteDir: site, TargetDir: "/target/site-packages", Manifest: Manifest{Member: member, Bytes: total}}
}

func readLink(t testing.TB, p string) string {
	t.Helper()
	l, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestBuildSiteLayout(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	t.Cleanup(func() { removeTree(cache) })
	spec := Spec{Name: "gpu", Python: "/venv/bin/python3"}
	alpha := fakeMirror(t, "alpha", map[string]string{
		"alpha/__init__.py":     "A = 1\n",
		"alpha/sub/__init__.py": "S = 1\n",
		"alpha/sub/deep/x.pyi":  "X: int\n",
		"alpha/other/y.py":      "Y = 2\n",
	})
	beta := fakeMirror(t, "beta.py", map[string]string{"beta.py": "B = 2\n"})
	layout := SiteLayout{
		Packages: []SiteEntry{
			{Mirror: alpha, Markers: []TypedMarker{
				{Path: "alpha/py.typed"},
				{Path: "alpha/sub/py.typed", Text: "partial\n"},
				{Path: "alpha/data/py.typed"}, // a directory the mirror lacks
			}},
			{Mirror: beta},
		},
		Dists: []SiteDist{{Dir: "alpha-1.0.dist-info", Files: map[string]string{"METADATA": "Name: alpha\nVersion: 1.0\n", "top_level.txt": "alpha\n"}}},
	}
	site, err := BuildSite(context.Background(), cache, spec, layout)
	if err != nil {
		t.Fatal(err)
	}
	if want := SitePath(cache, spec); site.Path != want || !site.Changed {
		t.Fatalf("site %+v, want path %s, changed", site, want)
	}
	// The stable path is a relative symlink to the generation.
	if l := readLink(t, site.Path); l != filepath.Join(siteGens, filepath.Base(site.Generation)) {
		t.Errorf("stable path links to %q", l)
	}
	wantBytes := alpha.Manifest.Bytes + beta.Manifest.Bytes + int64(len("partial\n")+len("Name: alpha\nVersion: 1.0\n")+len("alpha\n"))
	if site.Bytes != wantBytes {
		t.Errorf("bytes = %d, want %d", site.Bytes, wantBytes)
	}

	tests := []struct {
		rel  string
		link string // the mirror file it must link to; "" for a real file or directory
		text string // for real files
		dir  bool
	}{
		{rel: "alpha", dir: true},
		{rel: "alpha/py.typed", text: ""},
		{rel: "alpha/__init__.py", link: filepath.Join(alpha.SiteDir, "alpha/__init__.py")},
		{rel: "alpha/other", link: filepath.Join(alpha.SiteDir, "alpha/other")},
		{rel: "alpha/sub", dir: true},
		{rel: "alpha/sub/py.typed", text: "partial\n"},
		{rel: "alpha/sub/deep", link: filepath.Join(alpha.SiteDir, "alpha/sub/deep")},
		{rel: "alpha/data", dir: true},
		{rel: "alpha/data/py.typed", text: ""},
		{rel: "beta.py", link: filepath.Join(beta.SiteDir, "beta.py")},
		{rel: "alpha-1.0.dist-info", dir: true},
		{rel: "alpha-1.0.dist-info/METADATA", text: "Name: alpha\nVersion: 1.0\n"},
	}
	for _, tc := range tests {
		p := filepath.Join(site.Path, filepath.FromSlash(tc.rel))
		st, err := os.Lstat(p)
		if err != nil {
			t.Errorf("%s: %v", tc.rel, err)
			continue
		}
		switch {
		case tc.link != "":
			if st.Mode()&fs.ModeSymlink == 0 || readLink(t, p) != tc.link {
				t.Errorf("%s: want a symlink to %s, mode %v", tc.rel, tc.link, st.Mode())
			}
		case tc.dir:
			if !st.IsDir() || st.Mode().Perm() != 0o555 {
				t.Errorf("%s: want a read-only directory, mode %v", tc.rel, st.Mode())
			}
		default:
			data, err := os.ReadFile(p)
			if err != nil || string(data) != tc.text || st.Mode().Perm() != 0o444 {
				t.Errorf("%s: %q, mode %v, err %v; want %q read-only", tc.rel, data, st.Mode(), err, tc.text)
			}
		}
	}
	// Files are read through the links: the site works as site-packages.
	if data, err := os.ReadFile(filepath.Join(site.Path, "alpha/sub/deep/x.pyi")); err != nil || string(data) != "X: int\n" {
		t.Errorf("alpha/sub/deep/x.pyi through the site: %q %v", data, err)
	}
	if st, err := os.Stat(site.Generation); err != nil || st.Mode().Perm() != 0o555 {
		t.Errorf("generation directory: %v %v", st, err)
	}
}

func TestBuildSiteGenerations(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	t.Cleanup(func() { removeTree(cache) })
	spec := Spec{Name: "gpu", Python: "python3"}
	v1 := SiteLayout{Packages: []SiteEntry{{Mirror: fakeMirror(t, "alpha", map[string]string{"alpha/__init__.py": "V = 1\n"})}}}
	v2 := SiteLayout{Packages: []SiteEntry{{Mirror: fakeMirror(t, "alpha", map[string]string{"alpha/__init__.py": "V = 2\n"})}}}
	v3 := SiteLayout{Packages: []SiteEntry{{Mirror: fakeMirror(t, "alpha", map[string]string{"alpha/__init__.py": "V = 3\n"})}}}
	ctx := context.Background()
	build := func(l SiteLayout) *Site {
		t.Helper()
		s, err := BuildSite(ctx, cache, spec, l)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	read := func(s *Site) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(s.Path, "alpha", "__init__.py"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	s1 := build(v1)
	again := build(v1)
	if again.Changed || again.Generation != s1.Generation {
		t.Errorf("the same layout built again moved the site: %+v then %+v", s1, again)
	}
	s2 := build(v2)
	if !s2.Changed || s2.Path != s1.Path || s2.Generation == s1.Generation || read(s2) != "V = 2\n" {
		t.Errorf("a changed package: %+v (reads %q)", s2, read(s2))
	}
	// The previous generation stays whole for readers that resolved the
	// old link; the one before it goes.
	if _, err := os.Stat(filepath.Join(s1.Generation, "alpha", "__init__.py")); err != nil {
		t.Errorf("previous generation removed too early: %v", err)
	}
	s3 := build(v3)
	if _, err := os.Lstat(s1.Generation); err == nil {
		t.Errorf("generation %s survived two switches", s1.Generation)
	}
	if _, err := os.Stat(s2.Generation); err != nil || read(s3) != "V = 3\n" {
		t.Errorf("after the third build: previous %v, reads %q", err, read(s3))
	}
	// Another interpreter of the same target name is another site.
	other, err := BuildSite(ctx, cache, Spec{Name: "gpu", Python: "/other/python3"}, v1)
	if err != nil {
		t.Fatal(err)
	}
	if other.Path == s3.Path {
		t.Errorf("two interpreters share the site path %s", other.Path)
	}
}

func TestBuildSiteConcurrent(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	t.Cleanup(func() { removeTree(cache) })
	spec := Spec{Name: "gpu", Python: "python3"}
	layout := SiteLayout{Packages: []SiteEntry{{Mirror: fakeMirror(t, "alpha", map[string]string{"alpha/__init__.py": "V = 1\n"}), Markers: []TypedMarker{{Path: "alpha/py.typed"}}}}}
	var wg sync.WaitGroup
	gens := make([]string, 4)
	errs := make([]error, 4)
	for i := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := BuildSite(context.Background(), cache, spec, layout)
			errs[i] = err
			if s != nil {
				gens[i] = s.Generation
			}
		}()
	}
	wg.Wait()
	for i := range gens {
		if errs[i] != nil || gens[i] != gens[0] {
			t.Errorf("build %d: %v, generation %s (first %s)", i, errs[i], gens[i], gens[0])
		}
	}
	entries, _ := os.ReadDir(filepath.Join(cache, sitesDir, siteGens))
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("generations directory holds %v, want one generation", names)
	}
}

func TestBuildSiteRefusesBadLayouts(t *testing.T) {
	t.Parallel()
	pkg := fakeMirror(t, "alpha", map[string]string{"alpha/__init__.py": ""})
	mod := fakeMirror(t, "beta.py", map[string]string{"beta.py": ""})
	escape := fakeMirror(t, "alpha", nil)
	escape.Manifest.Member = "../etc"
	tests := []struct {
		name   string
		layout SiteLayout
		want   string
	}{
		{"escaping member", SiteLayout{Packages: []SiteEntry{{Mirror: escape}}}, "bad member"},
		{"two of a name", SiteLayout{Packages: []SiteEntry{{Mirror: pkg}, {Mirror: pkg}}}, "two packages"},
		{"marker outside", SiteLayout{Packages: []SiteEntry{{Mirror: pkg, Markers: []TypedMarker{{Path: "beta/py.typed"}}}}}, "not inside"},
		{"marker escaping", SiteLayout{Packages: []SiteEntry{{Mirror: pkg, Markers: []TypedMarker{{Path: "alpha/../../py.typed"}}}}}, "bad py.typed"},
		{"marker not py.typed", SiteLayout{Packages: []SiteEntry{{Mirror: pkg, Markers: []TypedMarker{{Path: "alpha/evil.py"}}}}}, "not inside"},
		{"marker for a module", SiteLayout{Packages: []SiteEntry{{Mirror: mod, Markers: []TypedMarker{{Path: "beta/py.typed"}}}}}, "module"},
		{"metadata dir escaping", SiteLayout{Packages: []SiteEntry{{Mirror: pkg}}, Dists: []SiteDist{{Dir: "../x.dist-info"}}}, "bad metadata directory"},
		{"metadata dir not metadata", SiteLayout{Packages: []SiteEntry{{Mirror: pkg}}, Dists: []SiteDist{{Dir: "alpha"}}}, "bad metadata directory"},
		{"RECORD", SiteLayout{Packages: []SiteEntry{{Mirror: pkg}}, Dists: []SiteDist{{Dir: "a-1.dist-info", Files: map[string]string{"RECORD": ""}}}}, "unexpected metadata file"},
		{"file path", SiteLayout{Packages: []SiteEntry{{Mirror: pkg}}, Dists: []SiteDist{{Dir: "a-1.dist-info", Files: map[string]string{"../../METADATA": ""}}}}, "unexpected metadata file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cache := t.TempDir()
			_, err := BuildSite(context.Background(), cache, Spec{Name: "gpu", Python: "python3"}, tc.layout)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Lstat(SitePath(cache, Spec{Name: "gpu", Python: "python3"})); err == nil {
				t.Errorf("a refused layout left a site")
			}
		})
	}
}

func TestSitePackageValidate(t *testing.T) {
	t.Parallel()
	ok := func() SitePackage {
		return SitePackage{
			Name: "alpha", Found: true, DistDir: "alpha-1.0+local.dist-info",
			Files:    map[string]string{"METADATA": "Name: alpha\n"},
			Typed:    []TypedMarker{{Path: "alpha/py.typed"}, {Path: "alpha/sub/py.typed", Text: "partial\n"}},
			Requires: []Requirement{{Distribution: "beta", Installed: true, TopLevel: []string{"beta", "_beta_impl"}}},
		}
	}
	tests := []struct {
		name   string
		change func(*SitePackage)
		want   string // "" for valid
	}{
		{"valid", func(*SitePackage) {}, ""},
		{"egg-info", func(p *SitePackage) { p.DistDir = "torch-1.13.0a0+gitunknown.egg-info" }, ""},
		{"dotted name", func(p *SitePackage) { p.Name = "a.b" }, "bad module name"},
		{"dist dir with a slash", func(p *SitePackage) { p.DistDir = "x/../../alpha-1.0.dist-info" }, "bad metadata directory"},
		{"dist dir hidden", func(p *SitePackage) { p.DistDir = ".alpha-1.0.dist-info" }, "bad metadata directory"},
		{"RECORD", func(p *SitePackage) { p.Files["RECORD"] = "" }, "unexpected metadata file"},
		{"files without a dir", func(p *SitePackage) { p.DistDir = "" }, "without a metadata directory"},
		{"huge file", func(p *SitePackage) { p.Files["METADATA"] = strings.Repeat("x", maxMetadataFile+1) }, "bytes"},
		{"absolute marker", func(p *SitePackage) { p.Typed[0].Path = "/etc/py.typed" }, "bad py.typed"},
		{"marker in another package", func(p *SitePackage) { p.Typed[0].Path = "beta/py.typed" }, "not inside"},
		{"marker with dots", func(p *SitePackage) { p.Typed[0].Path = "alpha/../alpha/py.typed" }, "bad py.typed"},
		{"marker dir not an identifier", func(p *SitePackage) { p.Typed[0].Path = "alpha/a-b/py.typed" }, "bad directory"},
		{"requirement names a path", func(p *SitePackage) { p.Requires[0].TopLevel = []string{"../x"} }, "names module"},
		{"over limit", func(p *SitePackage) { p.OverLimit = &SiteOverLimit{What: "requires", Count: 2000, Limit: 1024} }, ""},
		{"over limit of a file", func(p *SitePackage) {
			p.OverLimit = &SiteOverLimit{What: "file", File: "METADATA", Count: 2 << 20, Limit: 1 << 20}
		}, ""},
		{"over limit of an unknown kind", func(p *SitePackage) { p.OverLimit = &SiteOverLimit{What: "\x1b[2J", Limit: 1} }, "over-limit report of kind"},
		{"over limit of a path", func(p *SitePackage) { p.OverLimit = &SiteOverLimit{What: "file", File: "../../etc/passwd", Limit: 1} }, "about file"},
		{"over limit without a limit", func(p *SitePackage) { p.OverLimit = &SiteOverLimit{What: "requires"} }, "limit 0"},
		{"requirement over limit", func(p *SitePackage) { p.Requires[0].OverLimit = &SiteOverLimit{What: "nonsense", Limit: 1} }, "requirement beta"},
		{"distribution with a control", func(p *SitePackage) { p.Distribution = "alpha\x1b]0;x\a" }, "bad distribution name"},
		{"version with a space", func(p *SitePackage) { p.Version = "1.0 beta" }, "bad version"},
		{"too many requirements", func(p *SitePackage) {
			p.Requires = make([]Requirement, maxSiteRequires+1)
			for i := range p.Requires {
				p.Requires[i].Distribution = "x"
			}
		}, "requirements, over the limit"},
		{"requirement of a bad name", func(p *SitePackage) { p.Requires[0].Distribution = "-x" }, "bad distribution name"},
		{"long requirement", func(p *SitePackage) { p.Requires[0].Spec = strings.Repeat("b", maxSiteSpec+1) }, "bytes"},
		{"requirement of many modules", func(p *SitePackage) {
			p.Requires[0].TopLevel = make([]string, maxSiteTopLevel+1)
		}, "over the limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := ok()
			tc.change(&p)
			err := p.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid answer refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestSitePackagesHelper asks a real interpreter about the fixture.
func TestSitePackagesHelper(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(systemPython); err != nil {
		t.Skipf("no %s: %v", systemPython, err)
	}
	spec := Spec{Name: "sp", Python: systemPython, Env: map[string]string{"PYTHONPATH": sitePkgs(t)}}
	target := NewLocal(spec)
	c := NewClient(target, spec)
	t.Cleanup(func() {
		c.Close()
		target.Close()
	})
	got, err := c.SitePackages(testContext(t), siteQueries("alpha", "beta", "localonly", "json", "nosuch_pkg"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]SitePackage{}
	for _, p := range got {
		byName[p.Name] = p
	}

	alpha := byName["alpha"]
	if !alpha.Found || !alpha.ThirdParty || !alpha.IsPackage || alpha.Distribution != "alpha" || alpha.Version != "1.0" || alpha.DistDir != "alpha-1.0.dist-info" {
		t.Errorf("alpha = %+v", alpha)
	}
	if _, ok := alpha.Files["RECORD"]; ok || alpha.Files["INSTALLER"] != "pip\n" || !strings.Contains(alpha.Files["METADATA"], "Requires-Dist: beta>=2") {
		t.Errorf("alpha's metadata files: %v", alpha.Files)
	}
	markers := map[string]string{}
	for _, m := range alpha.Typed {
		markers[m.Path] = m.Text
	}
	if len(markers) != 3 || markers["alpha/sub/py.typed"] != "partial\n" {
		t.Errorf("alpha's markers = %v", markers)
	}
	reqs := map[string]Requirement{}
	for _, r := range alpha.Requires {
		reqs[r.Distribution] = r
	}
	if r := reqs["beta"]; r.Extra || !r.Installed || strings.Join(r.TopLevel, ",") != "beta" {
		t.Errorf("requirement beta (found by its RECORD, named Beta) = %+v", r)
	}
	if r := reqs["gamma"]; !r.Extra || r.Installed {
		t.Errorf("requirement gamma, only with an extra = %+v", r)
	}
	if r := reqs["delta-not-installed"]; r.Installed {
		t.Errorf("requirement delta-not-installed = %+v", r)
	}
	if r := reqs["epsilon"]; r.Extra || !r.Installed {
		t.Errorf("requirement epsilon with a python_version marker = %+v", r)
	}

	if b := byName["beta"]; !b.Found || b.IsPackage || b.Distribution != "Beta" || b.DistDir != "Beta-2.0.dist-info" || len(b.Typed) != 0 {
		t.Errorf("beta = %+v", b)
	}
	if l := byName["localonly"]; !l.Found || !l.ThirdParty || l.DistDir != "" {
		t.Errorf("localonly (in site-packages, no metadata) = %+v", l)
	}
	if j := byName["json"]; !j.Found || j.ThirdParty {
		t.Errorf("json (the standard library) = %+v", j)
	}
	if n := byName["nosuch_pkg"]; n.Found {
		t.Errorf("nosuch_pkg = %+v", n)
	}

	if _, err := c.SitePackages(testContext(t), siteQueries("os.path")); err == nil {
		t.Errorf("a dotted name was sent to the target")
	}
}

func siteQueries(names ...string) []SiteQuery {
	out := make([]SiteQuery, len(names))
	for i, n := range names {
		out[i] = SiteQuery{Name: n}
	}
	return out
}

// boundsSite writes a site-packages directory of distributions whose
// metadata passes the helper's bounds, each in its own way, and others
// within them.
func boundsSite(t *testing.T) string {
	t.Helper()
	site := filepath.Join(t.TempDir(), "site-packages")
	files := map[string]string{}
	dist := func(name, metadata string, extra map[string]string) {
		files[name+"/__init__.py"] = "X = 1\n"
		files[name+"-1.0.dist-info/METADATA"] = "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n" + metadata
		files[name+"-1.0.dist-info/RECORD"] = name + "/__init__.py,,\n" + name + "-1.0.dist-info/METADATA,,\n"
		for k, v := range extra {
			files[name+"-1.0.dist-info/"+k] = v
		}
	}
	var reqs strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&reqs, "Requires-Dist: dep%d\n", i)
	}
	dist("manyreqs", reqs.String(), nil)

	var wide, wideRecord strings.Builder
	for i := range 300 {
		fmt.Fprintf(&wide, "mod%d\n", i)
		fmt.Fprintf(&wideRecord, "mod%d.py,,\n", i)
		files[fmt.Sprintf("mod%d.py", i)] = "M = 1\n"
	}
	dist("widetop", "", map[string]string{"top_level.txt": "widetop\n" + wide.String(), "RECORD": "widetop/__init__.py,,\n" + wideRecord.String()})
	dist("needswide", "Requires-Dist: widetop\nRequires-Dist: claimer\n", nil)

	// bigrecord's RECORD and hugefile's entry_points.txt are written
	// below, a line at a time: the Go heap is measured by tests that run
	// beside this one.
	dist("bigrecord", "", nil)
	dist("hugefile", "", nil)

	// An egg-info as system packages have: requires.txt, no file list.
	files["eggy/__init__.py"] = "E = 1\n"
	files["eggy-1.0.egg-info/PKG-INFO"] = "Metadata-Version: 1.2\nName: eggy\nVersion: 1.0\n"
	files["eggy-1.0.egg-info/top_level.txt"] = "eggy\n"
	files["eggy-1.0.egg-info/requires.txt"] = "claimer>=1\n\n[docs]\nwidetop\n\n[:python_version >= \"3\"]\nmanyreqs\n"

	// claimer's top_level.txt names orphan, a module its RECORD lacks.
	dist("claimer", "", map[string]string{"top_level.txt": "claimer\norphan\n"})
	files["orphan.py"] = "O = 1\n"

	// Five packages of 900 KB of metadata each: more than one reply holds
	// (more than the helper's largest reply, 4 MiB, too).
	for i := range 5 {
		dist(fmt.Sprintf("large%d", i), "", nil)
	}
	for rel, text := range files {
		p := filepath.Join(site, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repeat := func(rel, head, line string, n int) {
		f, err := os.Create(filepath.Join(site, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		w.WriteString(head)
		for range n {
			w.WriteString(line)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	repeat("bigrecord-1.0.dist-info/RECORD", "bigrecord/__init__.py,,\n", "bigrecord/data/file.bin,sha256=0000000000000000000000000000000000000000000,1\n", (16<<20)/70+1000)
	repeat("hugefile-1.0.dist-info/entry_points.txt", "", "# padding\n", (3<<20)/20)
	for i := range 5 {
		repeat(fmt.Sprintf("large%d-1.0.dist-info/METADATA", i), fmt.Sprintf("Metadata-Version: 2.1\nName: large%d\nVersion: 1.0\n\n", i), strings.Repeat("x", 1023)+"\n", 900)
	}
	// A FIFO for METADATA must not block the helper.
	dist("fifo", "", nil)
	for rel, text := range map[string]string{"fifo/__init__.py": "F = 1\n", "fifo-1.0.dist-info/RECORD": "fifo/__init__.py,,\n"} {
		p := filepath.Join(site, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(site, "fifo-1.0.dist-info", "METADATA"), 0o644); err != nil {
		t.Fatal(err)
	}
	return site
}

// TestSitePackagesBounds asks a real interpreter about distributions whose
// metadata passes the helper's bounds: each is answered as over its limit,
// the others are answered in full, in several replies when one would be
// too large, and no FIFO blocks the helper. Not parallel: its replies of
// a few MiB would count in the heap that parallel tests measure.
func TestSitePackagesBounds(t *testing.T) {
	if _, err := os.Stat(systemPython); err != nil {
		t.Skipf("no %s: %v", systemPython, err)
	}
	checkSiteBounds(t, systemPython, boundsSite(t))
}

// checkSiteBounds runs TestSitePackagesBounds's checks on python.
func checkSiteBounds(t *testing.T, python, site string) {
	t.Helper()
	spec := Spec{Name: "bounds", Python: python, Env: map[string]string{"PYTHONPATH": site}}
	target := NewLocal(spec)
	c := NewClient(target, spec)
	t.Cleanup(func() {
		c.Close()
		target.Close()
	})
	queries := siteQueries("manyreqs", "widetop", "bigrecord", "hugefile", "fifo", "needswide", "eggy", "large0", "large1", "large2", "large3", "large4")
	queries = append(queries, SiteQuery{Name: "orphan", Owner: "claimer"})
	got, err := c.SitePackages(testContext(t), queries)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]SitePackage{}
	for _, p := range got {
		byName[p.Name] = p
	}
	over := []struct {
		name, what, file string
		count, limit     int64
		text             string
	}{
		{"manyreqs", "requires", "", 2000, maxSiteRequires, "its metadata has 2000 Requires-Dist lines, over the limit of 1024"},
		{"widetop", "top_level", "", 257, maxSiteTopLevel, "257 or more top-level names, over the limit of 256"},
		{"bigrecord", "record", "RECORD", -1, 16 << 20, "its file list RECORD is 17.7 MiB, over the limit of 16 MiB"},
		{"hugefile", "file", "entry_points.txt", -1, maxMetadataFile, "its metadata file entry_points.txt is 1.5 MiB, over the limit of 1 MiB"},
	}
	for _, o := range over {
		p := byName[o.name]
		l := p.OverLimit
		if l == nil || l.What != o.what || l.File != o.file || l.Limit != o.limit || (o.count >= 0 && l.Count != o.count) {
			t.Errorf("%s: over limit %+v, want %s %s of %d", o.name, l, o.what, o.file, o.limit)
			continue
		}
		if !strings.Contains(l.String(), o.text) {
			t.Errorf("%s: %q, want %q", o.name, l.String(), o.text)
		}
		if !p.Found || len(p.Files) != 0 || len(p.Requires) != 0 || p.DistDir != "" {
			t.Errorf("%s: an answer over the limit carries metadata: %+v", o.name, p)
		}
	}
	if f := byName["fifo"]; !f.Found || f.OverLimit != nil || f.Distribution != "fifo" || f.Files["METADATA"] != "" {
		t.Errorf("fifo (METADATA is a FIFO) = %+v", f)
	}
	reqs := map[string]Requirement{}
	for _, r := range byName["needswide"].Requires {
		reqs[r.Distribution] = r
	}
	if r := reqs["widetop"]; !r.Installed || r.OverLimit == nil || r.OverLimit.What != "top_level" || len(r.TopLevel) != 0 {
		t.Errorf("requirement widetop = %+v", r)
	}
	if r := reqs["claimer"]; strings.Join(r.TopLevel, ",") != "claimer" {
		t.Errorf("requirement claimer names %v, want claimer alone (its RECORD lacks orphan)", r.TopLevel)
	}
	eggy := byName["eggy"]
	var eggReqs []string
	for _, r := range eggy.Requires {
		eggReqs = append(eggReqs, fmt.Sprintf("%s extra=%v installed=%v %v", r.Distribution, r.Extra, r.Installed, r.TopLevel))
	}
	if eggy.Distribution != "eggy" || eggy.Version != "1.0" || eggy.DistDir != "eggy-1.0.egg-info" ||
		strings.Join(eggReqs, "; ") != "claimer extra=false installed=true [claimer]; widetop extra=true installed=false []; manyreqs extra=false installed=true [manyreqs]" {
		t.Errorf("eggy (an egg-info with requires.txt) = %+v; requirements %q", eggy, eggReqs)
	}
	if o := byName["orphan"]; !o.Found || o.Distribution != "" {
		t.Errorf("orphan, claimed by claimer's top_level.txt alone = %+v", o)
	}
	for i := range 5 {
		p := byName[fmt.Sprintf("large%d", i)]
		if p.OverLimit != nil || len(p.Files["METADATA"]) < 900<<10 {
			t.Errorf("large%d: over limit %v, METADATA of %d bytes", i, p.OverLimit, len(p.Files["METADATA"]))
		}
	}
}
