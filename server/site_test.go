package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/server/config"
)

const sitePython = "/usr/bin/python3"

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// siteNotes records torchlsp/site notifications.
type siteNotes struct {
	NopNotifier
	mu      sync.Mutex // guards notes and changed
	notes   []SiteInfo
	changed chan struct{} // closed and replaced when a note arrives
}

func (n *siteNotes) Capabilities() Capabilities { return Capabilities{Site: true} }

func (n *siteNotes) Site(_ context.Context, s SiteInfo) {
	n.mu.Lock()
	n.notes = append(n.notes, s)
	if n.changed != nil {
		close(n.changed)
		n.changed = nil
	}
	n.mu.Unlock()
}

// wait waits, 60 s at most, for a torchlsp/site notification ok accepts
// (one that came already counts).
func (n *siteNotes) wait(t *testing.T, ok func(SiteInfo) bool) SiteInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		n.mu.Lock()
		for _, s := range n.notes {
			if ok(s) {
				n.mu.Unlock()
				return s
			}
		}
		if n.changed == nil {
			n.changed = make(chan struct{})
		}
		changed := n.changed
		n.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			n.mu.Lock()
			defer n.mu.Unlock()
			t.Fatalf("no torchlsp/site notification as wanted within 60 s; got %v", n.notes)
			return SiteInfo{}
		}
	}
}

// siteEngine starts an engine whose default target sees the fixture torch
// and the site-packages fixture, with extra settings merged in.
func siteEngine(t *testing.T, ws string, pythonPath string, extra map[string]any, n Notifier) *Engine {
	t.Helper()
	if _, err := os.Stat(sitePython); err != nil {
		t.Skipf("%s is missing", sitePython)
	}
	root := t.TempDir()
	t.Cleanup(func() { removeReadOnly(root) })
	eng := New(Options{Notifier: n, Dirs: config.Dirs{Config: filepath.Join(root, "c"), Cache: filepath.Join(root, "k"), State: filepath.Join(root, "s")}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings := map[string]any{"defaultTarget": "fx", "targets": map[string]any{
		"fx": map[string]any{"python": sitePython, "env": map[string]string{"PYTHONPATH": pythonPath}, "packages": []string{"torch", "alpha"}},
	}}
	for k, v := range extra {
		settings[k] = v
	}
	raw, _ := json.Marshal(settings)
	if err := eng.Initialize(context.Background(), InitializeParams{WorkspaceFolders: []string{ws}, InitializationOptions: raw}); err != nil {
		t.Fatal(err)
	}
	return eng
}

func removeReadOnly(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(root)
}

func fixturePath(t *testing.T, parts ...string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(append([]string{".."}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSiteContents builds sites from the fixture with several
// configurations: what the workspace imports, what the packages require
// (no extras, two levels down), what site.packages adds and leaves out.
func TestSiteContents(t *testing.T) {
	t.Parallel()
	pythonPath := fixturePath(t, "testdata", "site") + ":" + fixturePath(t, "testdata", "sitepkgs", "site-packages")
	tests := []struct {
		name     string
		imports  string
		packages []string // site.packages
		want     []string
	}{
		// torch and alpha are the target's packages; alpha requires beta
		// and epsilon (gamma only with an extra, delta is not installed);
		// epsilon requires zeta, whose own requirement eta is a third
		// level down.
		{"requirements", "import torch\n", nil, []string{"torch", "alpha", "beta", "epsilon", "zeta"}},
		{"workspace", "import localonly, gamma, json, nosuch_mod\nfrom . import x\n", nil, []string{"torch", "alpha", "gamma", "localonly", "beta", "epsilon", "zeta"}},
		{"add and leave out", "import torch\n", []string{"eta", "-zeta", "-beta"}, []string{"torch", "alpha", "eta", "epsilon"}},
		{"leave out what the target lists", "import localonly\n", []string{"-alpha"}, []string{"torch", "localonly"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			writeFiles(t, ws, map[string]string{"train.py": tc.imports})
			var extra map[string]any
			if tc.packages != nil {
				extra = map[string]any{"site": map[string]any{"packages": tc.packages}}
			}
			eng := siteEngine(t, ws, pythonPath, extra, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := eng.Site(ctx, TargetArgs{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Packages, tc.want) {
				t.Errorf("packages = %v, want %v (left out: %v)", res.Packages, tc.want, res.Left)
			}
			for _, p := range res.Packages {
				name := p
				if p == "beta" {
					name = "beta.py"
				}
				if _, err := os.Stat(filepath.Join(res.Path, name)); err != nil {
					t.Errorf("package %s is not in the site: %v", p, err)
				}
			}
			if res.Target != "fx" || res.Python != sitePython || res.Bytes <= 0 {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// TestSiteLayoutFromTarget checks what the site carries besides sources,
// and that it follows the target when a package changes there.
func TestSiteLayoutFromTarget(t *testing.T) {
	t.Parallel()
	pkgs := t.TempDir()
	if err := os.CopyFS(pkgs, os.DirFS(fixturePath(t, "testdata", "sitepkgs", "site-packages"))); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(pkgs, "site-packages")
	if err := os.Mkdir(site, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(pkgs)
	for _, en := range entries {
		if en.Name() != "site-packages" {
			if err := os.Rename(filepath.Join(pkgs, en.Name()), filepath.Join(site, en.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"train.py": "import alpha\n"})
	eng := siteEngine(t, ws, fixturePath(t, "testdata", "site")+":"+site, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := eng.Site(ctx, TargetArgs{})
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"alpha/py.typed":                "",
		"alpha/sub/py.typed":            "partial\n",
		"alpha/data/py.typed":           "",
		"alpha-1.0.dist-info/INSTALLER": "pip\n",
		"Beta-2.0.dist-info/METADATA":   "Metadata-Version: 2.1\nName: Beta\nVersion: 2.0\n",
	} {
		data, err := os.ReadFile(filepath.Join(res.Path, rel))
		if err != nil || string(data) != want {
			t.Errorf("%s = %q (%v), want %q", rel, data, err, want)
		}
	}
	for _, rel := range []string{"alpha-1.0.dist-info/RECORD", "alpha/data/table.json", "gamma", "eta"} {
		if _, err := os.Lstat(filepath.Join(res.Path, rel)); err == nil {
			t.Errorf("the site has %s", rel)
		}
	}
	gen, err := os.Readlink(res.Path)
	if err != nil {
		t.Fatal(err)
	}

	// beta changes on the target: the next build shows the new file at
	// the same path, in a new generation, and the previous generation is
	// still whole.
	writeFiles(t, site, map[string]string{"beta.py": "class Beta:\n    def value(self) -> int:\n        return 3\n"})
	res2, err := eng.Site(ctx, TargetArgs{})
	if err != nil {
		t.Fatal(err)
	}
	gen2, _ := os.Readlink(res2.Path)
	data, _ := os.ReadFile(filepath.Join(res2.Path, "beta.py"))
	if res2.Path != res.Path || gen2 == gen || !strings.Contains(string(data), "return 3") {
		t.Errorf("after beta changed: path %s (was %s), generation %s (was %s), beta.py %q", res2.Path, res.Path, gen2, gen, data)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(res.Path), gen, "alpha", "__init__.py")); err != nil {
		t.Errorf("the previous generation: %v", err)
	}
}

// TestSiteAnnouncedAndHover checks the editor's side: the default target's
// site is announced once ready; once the editor asked for it (or with
// site.hover = "compact", once announced) hovers leave the signature to
// the Python server reading the site and definitions point into the site;
// site.hover = "full" keeps the full hover.
func TestSiteAnnouncedAndHover(t *testing.T) {
	t.Parallel()
	pythonPath := fixturePath(t, "testdata", "site") + ":" + fixturePath(t, "testdata", "sitepkgs", "site-packages")
	src := "import torch\n\nlayer = torch.nn.Linear(2, 3)\n"
	for _, tc := range []struct {
		name    string
		hover   string // site.hover
		ask     bool   // the editor runs torchlsp.site
		compact bool
		inSite  bool // definitions point into the site
	}{
		{name: "announced only", compact: false, inSite: false},
		{name: "asked", ask: true, compact: true, inSite: true},
		{name: "compact setting", hover: "compact", compact: true, inSite: true},
		{name: "full setting", hover: "full", ask: true, compact: false, inSite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			writeFiles(t, ws, map[string]string{"train.py": src})
			n := &siteNotes{}
			var extra map[string]any
			if tc.hover != "" {
				extra = map[string]any{"site": map[string]any{"hover": tc.hover}}
			}
			eng := siteEngine(t, ws, pythonPath, extra, n)
			uri := "file://" + filepath.Join(ws, "train.py")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			doc := eng.DidOpen(ctx, uri, "", 1, src)
			pos := posOf(t, src, "Linear", 0, 1)
			before, err := eng.Hover(ctx, doc, pos)
			if err != nil || before == nil || !strings.Contains(before.Markdown, "```python") {
				t.Fatalf("hover before the site: %v %v", before, err)
			}
			eng.Initialized(ctx)
			info := n.wait(t, func(s SiteInfo) bool { return s.Path != "" })
			if info.Target != "fx" {
				t.Errorf("announced %+v", info)
			}
			if tc.ask {
				res, err := eng.Site(ctx, TargetArgs{Target: "fx"})
				if err != nil {
					t.Fatal(err)
				}
				if r := res; r.Path != info.Path || r.Target != "fx" {
					t.Errorf("torchlsp.site = %+v, announced %+v", r, info)
				}
			}
			h, err := eng.Hover(ctx, doc, pos)
			if err != nil || h == nil {
				t.Fatalf("hover: %v %v", h, err)
			}
			hasSig := strings.Contains(h.Markdown, "```python")
			if hasSig == tc.compact || !strings.Contains(h.Markdown, "torch/nn/modules/linear.py:") || !strings.Contains(h.Markdown, "**fx**") {
				t.Errorf("hover (want compact %v):\n%s", tc.compact, h.Markdown)
			}
			locs, err := eng.Definition(ctx, doc, pos)
			if err != nil || len(locs) != 1 {
				t.Fatalf("definition: %v %v", locs, err)
			}
			if got := strings.HasPrefix(locs[0].Path, info.Path+"/torch/nn/modules/"); got != tc.inSite || !strings.HasSuffix(locs[0].TargetPath, "torch/nn/modules/linear.py") {
				t.Errorf("definition %+v; in the site %s: %v, want %v", locs[0], info.Path, got, tc.inSite)
			}
			if data, err := os.ReadFile(locs[0].Path); err != nil || !strings.Contains(strings.Split(string(data), "\n")[locs[0].Range.Start.Line], "class Linear") {
				t.Errorf("definition line: %v", err)
			}
		})
	}
}

// copySitePkgs copies the site-packages fixture into a directory named
// site-packages that the test may change.
func copySitePkgs(t *testing.T) string {
	t.Helper()
	site := filepath.Join(t.TempDir(), "site-packages")
	if err := os.CopyFS(site, os.DirFS(fixturePath(t, "testdata", "sitepkgs", "site-packages"))); err != nil {
		t.Fatal(err)
	}
	return site
}

// TestSiteFollowsRevalidation: an editor session starts from the cached
// mirrors, the target's copy of a package has moved on since, and once
// the background check has mirrored it again the site links the new
// mirror, at the same path.
func TestSiteFollowsRevalidation(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(sitePython); err != nil {
		t.Skipf("%s is missing", sitePython)
	}
	site := copySitePkgs(t)
	pythonPath := fixturePath(t, "testdata", "site") + ":" + site
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"train.py": "import alpha\n"})
	root := t.TempDir()
	t.Cleanup(func() { removeReadOnly(root) })
	dirs := config.Dirs{Config: filepath.Join(root, "c"), Cache: filepath.Join(root, "k"), State: filepath.Join(root, "s")}
	settings, _ := json.Marshal(map[string]any{"defaultTarget": "fx", "targets": map[string]any{
		"fx": map[string]any{"python": sitePython, "env": map[string]string{"PYTHONPATH": pythonPath}, "packages": []string{"torch", "alpha"}},
	}})
	session := func() (*Engine, *siteNotes) {
		n := &siteNotes{}
		eng := New(Options{Notifier: n, Dirs: dirs})
		if err := eng.Initialize(context.Background(), InitializeParams{WorkspaceFolders: []string{ws}, InitializationOptions: settings}); err != nil {
			t.Fatal(err)
		}
		eng.Initialized(context.Background())
		return eng, n
	}
	shutdown := func(eng *Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	}
	alphaMirror := func(path string) string {
		l, err := os.Readlink(filepath.Join(path, "alpha", "__init__.py"))
		if err != nil {
			return ""
		}
		return l
	}

	first, n := session()
	path := n.wait(t, func(s SiteInfo) bool { return s.Path != "" }).Path
	before := alphaMirror(path)
	shutdown(first)
	if !strings.Contains(before, "/alpha-1.0-") {
		t.Fatalf("alpha links to %q, want the 1.0 mirror", before)
	}

	// alpha 1.1 replaces 1.0 on the target.
	if err := os.Rename(filepath.Join(site, "alpha-1.0.dist-info"), filepath.Join(site, "alpha-1.1.dist-info")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, site, map[string]string{
		"alpha-1.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: alpha\nVersion: 1.1\nRequires-Dist: beta>=2\n",
		"alpha/__init__.py":            "from beta import Beta\n\n\nclass Alpha(Beta):\n    def run(self) -> int:\n        return 11\n",
	})

	second, n2 := session()
	t.Cleanup(func() { shutdown(second) })
	// The path stays: no notification says the site moved, its links do.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := await.Changed(ctx, filepath.Dir(path), func() bool { return strings.Contains(alphaMirror(path), "/alpha-1.1-") }); err != nil {
		n2.mu.Lock()
		t.Fatalf("the site still links alpha to %q: %v; notes %v", alphaMirror(path), err, n2.notes)
	}
	data, err := os.ReadFile(filepath.Join(path, "alpha", "__init__.py"))
	if err != nil || !strings.Contains(string(data), "return 11") {
		t.Errorf("alpha through the site: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(path, "alpha-1.1.dist-info", "METADATA")); err != nil {
		t.Errorf("the site lacks alpha 1.1's metadata: %v", err)
	}
	if got := n2.wait(t, func(s SiteInfo) bool { return s.Path != "" }).Path; got != path {
		t.Errorf("the second session announced %s, the first %s", got, path)
	}
}

// hostileVenv makes a virtual environment of sitePython whose
// site-packages holds the hostile fixture, so that the standard library
// comes first on the target's sys.path, as in any real install. It
// returns the environment's interpreter and its site-packages.
func hostileVenv(t *testing.T, base string) (python, site string) {
	t.Helper()
	venv := filepath.Join(t.TempDir(), "venv")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, base, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if len(sites) != 1 {
		t.Fatalf("site-packages of the venv: %v", sites)
	}
	if err := os.CopyFS(sites[0], os.DirFS(fixturePath(t, "testdata", "sitehostile", "site-packages"))); err != nil {
		t.Fatal(err)
	}
	// A directory a .pth file puts on sys.path, holding a module that no
	// distribution installed.
	writeFiles(t, sites[0], map[string]string{"elsewhere.pth": fixturePath(t, "testdata", "sitehostile", "elsewhere") + "\n"})
	// A package that is a link to the standard library's json.
	out, err := exec.CommandContext(ctx, base, "-I", "-c", "import json, os; print(os.path.dirname(json.__file__))").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.TrimSpace(string(out)), filepath.Join(sites[0], "alias")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(venv, "bin", "python3"), sites[0]
}

// leftOut returns the site's "left out" line about name.
func leftOut(res *SiteResult, name string) string {
	for _, l := range res.Left {
		if strings.HasPrefix(l, name+" (") {
			return l
		}
	}
	return ""
}

// TestSiteHostileMetadata builds sites from a target whose packages lie in
// their metadata: mypkg requires evil, whose top_level.txt (and RECORD)
// name json, subprocess, enum and usercustomize, and whose top_level.txt
// alone names victim (a module no distribution installs) and theirs
// (another distribution's package); mypkg also requires sloppy, an
// egg-info without a file list whose top_level.txt names stray, a module
// in another directory of sys.path; bloated's METADATA has 100,000
// Requires-Dist lines; alias, which site.packages asks for, is a link to
// the standard library's json. The site holds none of those names, says why for
// each that would have shadowed the standard library or run at start-up,
// and still holds torch and the rest. Also on the oldest Python the helper
// supports, when there is one, which has no sys.stdlib_module_names.
func TestSiteHostileMetadata(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(sitePython); err != nil {
		t.Skipf("%s is missing", sitePython)
	}
	bases := map[string]string{"system": sitePython}
	home, _ := os.UserHomeDir()
	if py38 := filepath.Join(home, ".pyenv", "versions", "3.8.18", "bin", "python3"); fileExists(py38) {
		bases["3.8"] = py38
	}
	for name, base := range bases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testSiteHostileMetadata(t, base)
		})
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func testSiteHostileMetadata(t *testing.T, base string) {
	python, site := hostileVenv(t, base)
	var reqs strings.Builder
	reqs.WriteString("Metadata-Version: 2.1\nName: bloated\nVersion: 1.0\n")
	for i := range 100_000 {
		fmt.Fprintf(&reqs, "Requires-Dist: dep%d\n", i)
	}
	writeFiles(t, site, map[string]string{
		"bloated/__init__.py":             "B = 1\n",
		"bloated-1.0.dist-info/METADATA":  reqs.String(),
		"bloated-1.0.dist-info/RECORD":    "bloated/__init__.py,,\nbloated-1.0.dist-info/METADATA,,\n",
		"bloated-1.0.dist-info/INSTALLER": "pip\n",
	})
	tests := []struct {
		name     string
		imports  string
		packages []string          // site.packages
		want     []string          // the site's packages, in order
		left     map[string]string // name → a phrase its left-out line holds
	}{
		{"standard library", "import torch, mypkg\n", nil, []string{"torch", "mypkg", "evil", "sloppy"}, map[string]string{
			"json": "standard library", "subprocess": "standard library", "enum": "standard library",
			"usercustomize": "start-up", "stray": "sloppy did not install it",
		}},
		{"oversized metadata", "import os, torch, mypkg, bloated\n", nil, []string{"torch", "mypkg", "evil", "sloppy"}, map[string]string{
			"bloated": "METADATA", "json": "standard library",
		}},
		{"a link to the standard library", "import torch\n", []string{"alias"}, []string{"torch"}, map[string]string{"alias": "it is json on the target, a module of Python's standard library"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			writeFiles(t, ws, map[string]string{"train.py": tc.imports})
			eng := siteEngine(t, ws, "", map[string]any{"targets": map[string]any{
				"fx": map[string]any{"python": python, "env": map[string]string{"PYTHONPATH": fixturePath(t, "testdata", "site")}, "packages": []string{"torch"}},
			}, "site": map[string]any{"packages": tc.packages}}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := eng.Site(ctx, TargetArgs{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("left out: %q", res.Left)
			if !reflect.DeepEqual(res.Packages, tc.want) {
				t.Errorf("packages = %v, want %v (left out: %v)", res.Packages, tc.want, res.Left)
			}
			for _, name := range []string{"json", "subprocess.py", "enum.py", "usercustomize.py", "victim.py", "theirs", "stray.py", "bloated", "alias"} {
				if _, err := os.Lstat(filepath.Join(res.Path, name)); err == nil {
					t.Errorf("the site holds %s", name)
				}
			}
			for name, phrase := range tc.left {
				if l := leftOut(res, name); !strings.Contains(l, phrase) {
					t.Errorf("left out about %s: %q, want one saying %q (all: %q)", name, l, phrase, res.Left)
				}
			}
			if l := leftOut(res, "os"); l != "" {
				t.Errorf("the workspace's own use of the standard library is listed: %q", l)
			}
			if _, err := os.Stat(filepath.Join(res.Path, "torch", "__init__.py")); err != nil {
				t.Errorf("torch is not in the site: %v", err)
			}
		})
	}
}
