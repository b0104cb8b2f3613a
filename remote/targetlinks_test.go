package remote

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// outsideSecret marks every file outside the hostile package: none of its
// bytes may reach the cache or the site.
const outsideSecret = "torchlsp-outside-the-package-secret"

// linkyPlain are the package's files that every reader takes: regular
// files reached through no link.
var linkyPlain = map[string]string{
	"linky/__init__.py":     "from .real import R\n",
	"linky/real.py":         "R = 1\n",
	"linky/sub/__init__.py": "S = 1\n",
	"linky/sub/deep.py":     "D = 1\n",
}

// linkyRefused are the package's paths that no reader takes: a link to a
// file outside it, a file under a link to a directory outside it, a link
// to a file inside it, a file under a link to a directory inside it, a
// named pipe, a link to a device.
var linkyRefused = []string{
	"linky/notes.py", "linky/ext/leak.py", "linky/alias.py", "linky/inner/deep.py",
	"linky/pipe.py", "linky/zero.py",
}

// linkySite writes a site-packages directory holding the package linky,
// whose tree holds links out of it and within it, a FIFO and a link to a
// device, with a distribution whose metadata and py.typed markers link out
// too.
func linkySite(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	outside := filepath.Join(tmp, "outside")
	site := filepath.Join(tmp, "site-packages")
	files := map[string]string{
		"outside/secret.py":                               "SECRET = '" + outsideSecret + "'\n",
		"outside/secret.txt":                              outsideSecret + "\n",
		"outside/dir/leak.py":                             "LEAK = '" + outsideSecret + "'\n",
		"site-packages/linky/x":                           "not a source file\n",
		"site-packages/linky-1.0.dist-info/METADATA":      "Metadata-Version: 2.1\nName: linky\nVersion: 1.0\n",
		"site-packages/linky-1.0.dist-info/top_level.txt": "linky\n",
		"site-packages/linky-1.0.dist-info/RECORD":        "linky/__init__.py,,\nlinky/real.py,,\nlinky-1.0.dist-info/RECORD,,\n",
		"site-packages/linky/sub/py.typed":                "partial\n",
	}
	for rel, text := range linkyPlain {
		files["site-packages/"+rel] = text
	}
	for rel, text := range files {
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkg := filepath.Join(site, "linky")
	for name, to := range map[string]string{
		"notes.py": filepath.Join(outside, "secret.py"),
		"ext":      filepath.Join(outside, "dir"),
		"alias.py": "real.py",
		"inner":    "sub",
		"zero.py":  "/dev/zero",
		"py.typed": filepath.Join(outside, "secret.txt"),
	} {
		if err := os.Symlink(to, filepath.Join(pkg, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(pkg, "pipe.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Metadata files that link out: a reader that follows them puts the
	// secret in the site's metadata directory.
	dist := filepath.Join(site, "linky-1.0.dist-info")
	for _, name := range []string{"INSTALLER", "entry_points.txt"} {
		if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dist, name)); err != nil {
			t.Fatal(err)
		}
	}
	return site
}

// TestEveryReaderRefusesTheSameLinks builds one hostile package on a real
// interpreter and reads it every way torchlsp reads a target's files: the
// bulk mirror (torchlsp_mirror.py's stream), the on-demand tree (the
// helper's list_files and read_files) and the site (the helper's
// site_packages: metadata and py.typed markers, with the mirror linked
// in). All follow the one rule on links: each takes exactly the package's
// regular files reached through no link, with the same bytes, and nothing
// outside the package arrives anywhere in the cache or the site.
func TestEveryReaderRefusesTheSameLinks(t *testing.T) {
	t.Parallel()
	checkLinkRule(t, systemPython)
}

// checkLinkRule is TestEveryReaderRefusesTheSameLinks on the interpreter
// python (TestAcrossPythons runs it on each).
func checkLinkRule(t *testing.T, python string) {
	t.Helper()
	site := linkySite(t)
	spec := fixtureSpec(t)
	spec.Name = "links"
	spec.Python = python
	spec.Env = map[string]string{"PYTHONPATH": site}
	ctx := testContext(t)
	target := NewLocal(spec)
	defer target.Close()
	c := NewClient(target, spec)
	defer c.Close()
	cache := cacheDir(t)

	want := slices.Sorted(maps.Keys(linkyPlain))
	info, err := c.PackageInfo(ctx, "linky")
	if err != nil {
		t.Fatal(err)
	}
	var wantBytes int64
	for _, text := range linkyPlain {
		wantBytes += int64(len(text))
	}
	if info.FilesCount != len(want) || info.Bytes != wantBytes {
		t.Errorf("package_info counts %d files of %d bytes, want %d of %d", info.FilesCount, info.Bytes, len(want), wantBytes)
	}

	// The bulk mirror.
	m, err := Mirror(ctx, target, spec, info, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	mirrored := readTree(t, m.SiteDir)
	if got := slices.Sorted(maps.Keys(mirrored)); !slices.Equal(got, want) {
		t.Errorf("the bulk mirror holds %q, want %q", got, want)
	}
	for rel, text := range linkyPlain {
		if mirrored[rel] != text {
			t.Errorf("the bulk mirror's %s = %q, want %q", rel, mirrored[rel], text)
		}
	}

	// The on-demand reads: the listing, and every path read, refused ones
	// included.
	listing, err := c.ListFiles(ctx, "linky")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, f := range listing.Files {
		listed = append(listed, f.Path)
		if f.Size != int64(len(linkyPlain[f.Path])) {
			t.Errorf("list_files: %s of %d bytes, want %d", f.Path, f.Size, len(linkyPlain[f.Path]))
		}
	}
	if slices.Sort(listed); !slices.Equal(listed, want) {
		t.Errorf("list_files = %q, want %q", listed, want)
	}
	read, err := c.ReadFiles(ctx, "linky", append(slices.Clone(want), linkyRefused...))
	if err != nil {
		t.Fatal(err)
	}
	var readPaths []string
	for _, f := range read.Files {
		readPaths = append(readPaths, f.Path)
		if string(f.Data) != mirrored[f.Path] {
			t.Errorf("read_files %s = %q, the bulk mirror holds %q", f.Path, f.Data, mirrored[f.Path])
		}
	}
	if slices.Sort(readPaths); !slices.Equal(readPaths, want) {
		t.Errorf("read_files read %q, want %q", readPaths, want)
	}
	refused := map[string]string{}
	for _, s := range read.Skipped {
		refused[s.Path] = s.Reason
	}
	for _, rel := range linkyRefused {
		if _, ok := refused[rel]; !ok {
			t.Errorf("read_files did not refuse %s (refused: %v)", rel, refused)
		}
	}
	// The guessed import path follows no link either.
	guessed, err := c.ReadImportPath(ctx, "linky", "linky.notes.SECRET", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range guessed.Files {
		if _, ok := linkyPlain[f.Path]; !ok {
			t.Errorf("the import path's guess read %s", f.Path)
		}
	}
	odCache := cacheDir(t)
	tree, err := OpenOnDemand(odCache, OnDemandSource{
		Client: c, Context: ctx, ReadTimeout: readTimeout, Spec: spec, Info: info, Listing: listing, First: read.Files,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, tree.Mirror().SiteDir); !maps.Equal(got, mirrored) {
		t.Errorf("the on-demand tree holds %v, the bulk mirror %v", got, mirrored)
	}
	for _, rel := range linkyRefused {
		if data, err := tree.Read(rel); err == nil {
			t.Errorf("the on-demand tree read %s: %q", rel, data)
		}
	}

	// The site: the mirror linked in, the distribution's metadata and
	// markers as site_packages read them.
	sps, err := c.SitePackages(ctx, []SiteQuery{{Name: "linky"}})
	if err != nil {
		t.Fatal(err)
	}
	sp := sps[0]
	var markers []string
	for _, mk := range sp.Typed {
		markers = append(markers, mk.Path)
	}
	if !slices.Equal(markers, []string{"linky/sub/py.typed"}) {
		t.Errorf("py.typed markers = %q, want linky/sub/py.typed alone (linky/py.typed links out)", markers)
	}
	for _, name := range []string{"INSTALLER", "entry_points.txt"} {
		if text, ok := sp.Files[name]; ok {
			t.Errorf("metadata file %s, a link out, was read: %q", name, text)
		}
	}
	if sp.DistDir != "linky-1.0.dist-info" || sp.Version != "1.0" {
		t.Errorf("site_packages = %+v", sp)
	}
	built, err := BuildSite(ctx, cache, spec, SiteLayout{
		Packages: []SiteEntry{{Mirror: m, Markers: sp.Typed}},
		Dists:    []SiteDist{{Dir: sp.DistDir, Files: sp.Files}},
	})
	if err != nil {
		t.Fatal(err)
	}
	inSite := readTree(t, filepath.Join(built.Path, "linky"))
	for rel, text := range inSite {
		rel = "linky/" + rel
		if strings.HasSuffix(rel, ".py") && mirrored[rel] != text {
			t.Errorf("the site's %s = %q, the bulk mirror holds %q", rel, text, mirrored[rel])
		}
	}
	for _, rel := range linkyRefused {
		if _, err := os.Stat(filepath.Join(built.Path, filepath.FromSlash(rel))); err == nil {
			t.Errorf("the site holds %s", rel)
		}
	}
	for rel := range linkyPlain {
		if _, ok := inSite[strings.TrimPrefix(rel, "linky/")]; !ok {
			t.Errorf("the site lacks %s", rel)
		}
	}

	// Nothing of outside the package, anywhere.
	for _, root := range []string{cache, odCache} {
		for p, text := range readTree(t, root) {
			if strings.Contains(text, outsideSecret) {
				t.Errorf("%s holds what lies outside the package", filepath.Join(root, p))
			}
		}
	}
	for p, text := range readTree(t, built.Path) {
		if strings.Contains(text, outsideSecret) {
			t.Errorf("the site's %s holds what lies outside the package", p)
		}
	}
}

// readTimeout bounds one on-demand read in tests.
const readTimeout = 30 * time.Second

// readTree reads every file under root, following symbolic links (a site
// is links into mirrors), by slash path relative to root. It never opens
// what is not a regular file.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir, rel string, depth int)
	walk = func(dir, rel string, depth int) {
		if depth > 32 {
			t.Fatalf("%s: too deep", dir)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			r := e.Name()
			if rel != "" {
				r = rel + "/" + r
			}
			st, err := os.Stat(p)
			if err != nil {
				continue
			}
			switch {
			case st.IsDir():
				walk(p, r, depth+1)
			case st.Mode().IsRegular():
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				out[r] = string(data)
			}
		}
	}
	walk(root, "", 0)
	delete(out, manifestName)
	return out
}

// TestTargetFileRuleIsShared: the helper and the mirror script are sent
// to the target alone, so each carries the rule on links; the two copies
// must be the same, byte for byte, and each program must read the
// target's files through it alone.
func TestTargetFileRuleIsShared(t *testing.T) {
	t.Parallel()
	const begin, end = "# ---- The one rule on the target's links.", "# ---- End of the rule on links.\n"
	block := func(name string, src []byte) string {
		s := string(src)
		i, j := strings.Index(s, begin), strings.Index(s, end)
		if i < 0 || j < i || strings.Count(s, begin) != 1 {
			t.Fatalf("%s: no single block between %q and %q", name, begin, end)
		}
		return s[i : j+len(end)]
	}
	helper, mirror := block("torchlsp_helper.py", helperSource), block("torchlsp_mirror.py", mirrorSource)
	if helper != mirror {
		t.Errorf("the rule on links differs between torchlsp_helper.py and torchlsp_mirror.py")
	}
	// Outside the block, no program opens or measures a file of the
	// target by a path that follows links (open(0) is the helper's stdin; tarfile.open the stream).
	for name, src := range map[string][]byte{"torchlsp_helper.py": helperSource, "torchlsp_mirror.py": mirrorSource} {
		rest := strings.Replace(string(src), block(name, src), "", 1)
		rest = strings.NewReplacer("os.open(", "", "fdopen(", "", "plain_open(", "", "tarfile.open(", "", "open(0,", "").Replace(rest)
		for _, call := range []string{"open(", "os.path.isfile(", "os.stat(", "os.path.getsize("} {
			if strings.Contains(rest, call) {
				t.Errorf("%s calls %s outside the rule on links", name, call)
			}
		}
	}
}
