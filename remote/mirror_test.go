package remote

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// cacheDir is a temporary mirror cache that is removed even though
// mirrors are read-only.
func cacheDir(t testing.TB) string {
	dir := t.TempDir()
	t.Cleanup(func() { removeTree(dir) })
	return dir
}

func packageInfo(t testing.TB, spec Spec, name string) PackageInfo {
	t.Helper()
	target := NewLocal(spec)
	defer target.Close()
	c := NewClient(target, spec)
	defer c.Close()
	info, err := c.PackageInfo(testContext(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// treeFiles lists the regular files under dir, relative, and checks that
// everything is read-only.
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o444)
		if d.IsDir() {
			want = 0o555
			if p == dir && filepath.Base(dir) != siteDirName {
				want = 0o755 // the mirror's root: writable for the index cache
			}
		} else {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestMirrorFixture(t *testing.T) {
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "fixturepkg")
	for _, comp := range []Compression{CompressNone, CompressGzip} {
		t.Run(string(comp), func(t *testing.T) {
			cache := cacheDir(t)
			target := NewLocal(spec)
			defer target.Close()
			var calls, last, total int64
			m, err := mirror(testContext(t), target, spec, info, cache, comp, func(done, all int64) {
				calls++
				last, total = done, all
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != int64(info.FilesCount) || last != info.Bytes || total != info.Bytes {
				t.Errorf("progress: %d calls, last %d/%d; want %d calls ending at %d", calls, last, total, info.FilesCount, info.Bytes)
			}
			got := strings.Join(treeFiles(t, m.Root), " ")
			want := "manifest.json site/fixturepkg/__init__.py site/fixturepkg/config.py site/fixturepkg/newconfig.py " +
				"site/fixturepkg/sub/__init__.py site/fixturepkg/sub/stubs.pyi"
			if got != want {
				t.Errorf("files = %s\nwant    %s", got, want)
			}
			orig, _ := os.ReadFile(filepath.Join(info.Location, "config.py"))
			copied, _ := os.ReadFile(filepath.Join(m.SiteDir, "fixturepkg", "config.py"))
			if !bytes.Equal(orig, copied) {
				t.Error("config.py differs from the original")
			}
			man := m.Manifest
			if man.Format != MirrorFormat || man.Package != "fixturepkg" || man.Version != "0.3.1" ||
				man.TargetPackageDir != info.Location || man.TargetSiteDir != info.Site || man.Files != 5 ||
				man.Bytes != info.Bytes || man.Compression != string(comp) || man.Identity != TargetIdentity(spec) {
				t.Errorf("manifest = %+v", man)
			}
			if m.Root != MirrorDir(cache, spec, info) || m.TargetDir != info.Site {
				t.Errorf("mirror at %s for %s", m.Root, m.TargetDir)
			}
			found, err := LookupMirror(cache, spec, "fixturepkg")
			if err != nil || found.Root != m.Root {
				t.Fatalf("LookupMirror = %+v, %v", found, err)
			}
			// A second Mirror of unchanged files reuses the first.
			again, err := mirror(testContext(t), failingTarget{}, spec, info, cache, comp, nil)
			if err != nil || !again.Manifest.Created.Equal(man.Created) {
				t.Errorf("second mirror: %v (created %v, first %v)", err, again, man.Created)
			}
			other := spec
			other.Exec = []string{"env"}
			if _, err := LookupMirror(cache, other, "fixturepkg"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a target reached differently found the mirror: %v", err)
			}
		})
	}
}

// failingTarget starts nothing: proof that the target was not used.
type failingTarget struct{}

func (failingTarget) Name() string { return "test" }
func (failingTarget) Start(context.Context, Command) (Process, error) {
	return nil, errors.New("target must not be used")
}
func (failingTarget) Close() error { return nil }

func TestMirrorTorch(t *testing.T) {
	requireTorch(t)
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "torch")
	cache := cacheDir(t)
	target := NewLocal(spec)
	defer target.Close()
	m, err := Mirror(testContext(t), target, spec, info, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := treeFiles(t, m.SiteDir)
	if len(files) != info.FilesCount || m.Manifest.Files != info.FilesCount || m.Manifest.Bytes != info.Bytes {
		t.Errorf("%d files in the mirror, manifest %d/%d bytes, target %d/%d bytes",
			len(files), m.Manifest.Files, m.Manifest.Bytes, info.FilesCount, info.Bytes)
	}
	local, ok := m.LocalPath(filepath.Join(debianTorch, "nn", "functional.py"))
	if !ok {
		t.Fatal("LocalPath refused torch/nn/functional.py")
	}
	if _, err := os.Stat(local); err != nil {
		t.Error(err)
	}
	if back := m.TargetPath(local); back != filepath.Join(debianTorch, "nn", "functional.py") {
		t.Errorf("TargetPath = %s", back)
	}
	if _, err := LookupMirror(cache, spec, "torch"); err != nil {
		t.Error(err)
	}
}

// cutTarget is a fault injector: the stdout of the processes it starts
// ends (or the process is killed) after limit bytes.
type cutTarget struct {
	Target
	limit int64
	kill  bool
}

func (c cutTarget) Start(ctx context.Context, cmd Command) (Process, error) {
	p, err := c.Target.Start(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return &cutProcess{Process: p, left: c.limit, kill: c.kill}, nil
}

type cutProcess struct {
	Process
	left int64
	kill bool
}

func (p *cutProcess) Stdout() io.Reader { return p }

func (p *cutProcess) Read(b []byte) (int, error) {
	if p.left <= 0 {
		if p.kill {
			p.Process.Kill()
			return p.Process.Stdout().Read(b)
		}
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	n, err := p.Process.Stdout().Read(b)
	p.left -= int64(n)
	return n, err
}

func TestMirrorInterrupted(t *testing.T) {
	requireTorch(t)
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "torch")
	for _, tt := range []struct {
		name string
		comp Compression
		cut  int64
		kill bool
	}{
		{"stream cut", CompressNone, 4 << 20, false},
		{"process killed", CompressNone, 1 << 20, true},
		{"gzip stream cut", CompressGzip, 1 << 20, false},
		{"cut in the trailer", CompressNone, 16271360 - 600, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cache := cacheDir(t)
			local := NewLocal(spec)
			defer local.Close()
			_, err := mirror(testContext(t), cutTarget{local, tt.cut, tt.kill}, spec, info, cache, tt.comp, nil)
			if err == nil {
				t.Fatal("interrupted mirror succeeded")
			}
			t.Log(err)
			if _, err := LookupMirror(cache, spec, "torch"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("LookupMirror after failure: %v", err)
			}
			left, _ := os.ReadDir(filepath.Dir(MirrorDir(cache, spec, info)))
			if len(left) != 0 {
				t.Errorf("leftovers after failure: %v", left)
			}
			m, err := mirror(testContext(t), local, spec, info, cache, tt.comp, nil)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if m.Manifest.Files != info.FilesCount {
				t.Errorf("retry mirrored %d files, want %d", m.Manifest.Files, info.FilesCount)
			}
		})
	}
}

func TestMirrorRefreshesChangedPackage(t *testing.T) {
	site := t.TempDir()
	pkg := filepath.Join(site, "changing")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "__init__.py"), []byte("__version__ = '1.0'\n"), 0o644)
	spec := fixtureSpec(t)
	spec.Env = map[string]string{"PYTHONPATH": site}
	cache := cacheDir(t)
	target := NewLocal(spec)
	defer target.Close()
	ctx := testContext(t)
	first, err := Mirror(ctx, target, spec, packageInfo(t, spec, "changing"), cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "extra.py"), []byte("x = 1\n"), 0o644)
	// A leftover of a crashed attempt by a process that no longer exists.
	stale := filepath.Join(filepath.Dir(first.Root), ".tmp-changing-999999999-123")
	os.MkdirAll(filepath.Join(stale, "site"), 0o555)

	second, err := Mirror(ctx, target, spec, packageInfo(t, spec, "changing"), cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.Root != first.Root || second.Manifest.Files != 2 {
		t.Errorf("refreshed mirror at %s has %d files", second.Root, second.Manifest.Files)
	}
	if _, err := os.Stat(filepath.Join(second.SiteDir, "changing", "extra.py")); err != nil {
		t.Error(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(first.Root))
	if len(entries) != 1 {
		t.Errorf("cache holds %v, want only the mirror", entries)
	}
}

func TestMirrorConcurrent(t *testing.T) {
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "fixturepkg")
	cache := cacheDir(t)
	target := NewLocal(spec)
	defer target.Close()
	ctx := testContext(t)
	errs := make(chan error, 4)
	for i := 0; i < cap(errs); i++ {
		go func() {
			m, err := Mirror(ctx, target, spec, info, cache, nil)
			if err == nil && m.Manifest.Files != 5 {
				err = errors.New("incomplete mirror")
			}
			errs <- err
		}()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(MirrorDir(cache, spec, info)))
	if len(entries) != 1 {
		t.Errorf("cache holds %v, want one mirror", entries)
	}
}

func TestMirrorTreePaths(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	site := filepath.Join(root, "site")
	for _, f := range []string{"torch/__init__.py", "torch/nn/functional.py", "six.py"} {
		p := filepath.Join(site, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := &MirrorTree{
		Root: root, SiteDir: site, TargetDir: "/opt/venv/lib/site-packages",
		Manifest: Manifest{Member: "torch"},
	}
	tests := []struct {
		target string
		local  string // relative to site; empty when refused
	}{
		{"/opt/venv/lib/site-packages/torch/__init__.py", "torch/__init__.py"},
		{"/opt/venv/lib/site-packages/torch/nn/functional.py", "torch/nn/functional.py"},
		{"/opt/venv/lib/site-packages/torch", "torch"},
		{"/opt/venv/lib/site-packages/torch//nn/./functional.py", "torch/nn/functional.py"},
		{"/opt/venv/lib/site-packages/torch/nn", ""}, // a directory, not a file
		{"/opt/venv/lib/site-packages/torch/missing.py", ""},
		{"/opt/venv/lib/site-packages/torchvision/__init__.py", ""},
		{"/opt/venv/lib/site-packages/numpy/__init__.py", ""},
		{"/opt/venv/lib/site-packages/torch/../six.py", ""},
		{"/opt/venv/lib/site-packages/../../../../etc/passwd", ""},
		{"torch/__init__.py", ""},
		{"", ""},
		{"/opt/venv/lib/site-packages/torch/\x00.py", ""},
	}
	for _, tt := range tests {
		local, ok := m.LocalPath(tt.target)
		want := ""
		if tt.local != "" {
			want = filepath.Join(site, filepath.FromSlash(tt.local))
		}
		if local != want || ok != (want != "") {
			t.Errorf("LocalPath(%q) = %s, %v; want %s", tt.target, local, ok, want)
		}
		if ok && m.TargetPath(local) != path.Clean(tt.target) {
			t.Errorf("TargetPath(%s) = %s, want %s", local, m.TargetPath(local), tt.target)
		}
	}
	if got := m.TargetPath("/elsewhere/x.py"); got != "/elsewhere/x.py" {
		t.Errorf("TargetPath of a file outside the mirror = %s", got)
	}
}

type entry struct {
	name string
	typ  byte
	body string
	link string
}

func buildTar(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Linkname: e.link, ModTime: time.Unix(0, 0)}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func meta(files int, bytes int64) string {
	b, _ := json.Marshal(streamMeta{Files: files, Bytes: bytes})
	return string(b)
}

func TestUntarTree(t *testing.T) {
	good := entry{name: "pkg/a.py", body: "x = 1\n"}
	summary1 := entry{name: summaryEntry, body: meta(1, 6)}
	tests := []struct {
		name    string
		entries []entry
		want    string // error substring; empty for success
	}{
		{"good", []entry{{name: headerEntry, body: meta(1, 6)}, good, summary1}, ""},
		{"absolute path", []entry{{name: "/etc/evil.py", body: "x"}}, "not a relative path"},
		{"dot dot", []entry{{name: "pkg/../../evil.py", body: "x"}}, "not a clean path"},
		{"dot dot clean", []entry{{name: "../pkg/evil.py", body: "x"}}, "path escapes"},
		{"symlink", []entry{{name: "pkg/link.py", typ: tar.TypeSymlink, link: "/etc/passwd"}}, "not a regular file"},
		{"hard link", []entry{{name: "pkg/link.py", typ: tar.TypeLink, link: "pkg/a.py"}}, "not a regular file"},
		{"directory", []entry{{name: "pkg/sub/", typ: tar.TypeDir}}, "not a regular file"},
		{"named pipe", []entry{{name: "pkg/pipe.py", typ: tar.TypeFifo}}, "not a regular file"},
		{"device", []entry{{name: "pkg/zero.py", typ: tar.TypeChar}}, "not a regular file"},
		{"other package", []entry{{name: "other/a.py", body: "x"}}, "outside pkg"},
		{"prefix trick", []entry{{name: "pkgevil/a.py", body: "x"}}, "outside pkg"},
		{"not source", []entry{{name: "pkg/lib.so", body: "x"}}, "not a Python source file"},
		{"backslash", []entry{{name: "pkg\\..\\a.py", body: "x"}}, "not a relative path"},
		{"duplicate", []entry{good, good, summary1}, "file exists"},
		{"no summary", []entry{good}, "without its summary"},
		{"count mismatch", []entry{good, {name: summaryEntry, body: meta(2, 12)}}, "the target sent 2"},
		{"entry after summary", []entry{good, summary1, {name: "pkg/b.py", body: "y"}}, "after the summary"},
		{"changed during transfer", []entry{{name: headerEntry, body: meta(3, 60)}, good, summary1}, "changed during the transfer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "site")
			_, err := untarTree(bytes.NewReader(buildTar(t, tt.entries)), dest, "pkg", true, MirrorLimits{}, untarObserver{})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(filepath.Join(dest, "pkg", "a.py"))
				if err != nil || string(data) != good.body {
					t.Errorf("a.py = %q, %v", data, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			if _, err := os.Stat("/etc/evil.py"); err == nil {
				t.Fatal("wrote outside the destination")
			}
			filepath.WalkDir(filepath.Dir(dest), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type()&fs.ModeSymlink != 0 {
					t.Errorf("symlink %s created", p)
				}
				return nil
			})
		})
	}
}

func TestUntarSingleModule(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "site")
	data := buildTar(t, []entry{{name: "six.py", body: "x"}, {name: summaryEntry, body: meta(1, 1)}})
	if _, err := untarTree(bytes.NewReader(data), dest, "six.py", false, MirrorLimits{}, untarObserver{}); err != nil {
		t.Fatal(err)
	}
	data = buildTar(t, []entry{{name: "other.py", body: "x"}})
	if _, err := untarTree(bytes.NewReader(data), dest, "six.py", false, MirrorLimits{}, untarObserver{}); err == nil {
		t.Error("accepted a file other than the module")
	}
}

func BenchmarkMirrorTorch(b *testing.B) {
	requireTorch(b)
	spec := fixtureSpec(b)
	info := packageInfo(b, spec, "torch")
	target := NewLocal(spec)
	defer target.Close()
	for _, comp := range []Compression{CompressNone, CompressGzip} {
		b.Run(string(comp), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(info.Bytes)
			var n atomic.Int64
			for i := 0; i < b.N; i++ {
				cache := cacheDir(b)
				m, err := mirror(context.Background(), target, spec, info, cache, comp, nil)
				if err != nil {
					b.Fatal(err)
				}
				n.Add(int64(m.Manifest.Files))
				removeTree(cache)
			}
		})
	}
}
