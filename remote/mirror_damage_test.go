package remote

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestDamagedMirrorIsNotTrusted damages a complete mirror in the ways a
// crash, a full disk or a stray cleanup can, and checks that LookupMirror
// no longer returns it and that the next Mirror rebuilds it from the
// target instead of reusing it.
func TestDamagedMirrorIsNotTrusted(t *testing.T) {
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "fixturepkg")
	file := func(m *MirrorTree, rel string) string { return filepath.Join(m.SiteDir, "fixturepkg", rel) }
	tests := []struct {
		name   string
		damage func(t *testing.T, m *MirrorTree) error
	}{
		{"file deleted", func(t *testing.T, m *MirrorTree) error { return os.Remove(file(m, "config.py")) }},
		{"file truncated", func(t *testing.T, m *MirrorTree) error { return os.Truncate(file(m, "sub/stubs.pyi"), 3) }},
		{"file grown", func(t *testing.T, m *MirrorTree) error {
			return os.WriteFile(file(m, "config.py"), []byte("x = 1\n# and more than the original had, by far, surely\n"+string(bytes.Repeat([]byte("#"), 4096))), 0o444)
		}},
		{"file added", func(t *testing.T, m *MirrorTree) error {
			return os.WriteFile(file(m, "extra.py"), []byte("y = 2\n"), 0o444)
		}},
		{"file replaced by a directory", func(t *testing.T, m *MirrorTree) error {
			p := file(m, "newconfig.py")
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Mkdir(p, 0o755)
		}},
		{"manifest truncated", func(t *testing.T, m *MirrorTree) error {
			return os.Truncate(filepath.Join(m.Root, manifestName), 10)
		}},
		{"manifest deleted", func(t *testing.T, m *MirrorTree) error { return os.Remove(filepath.Join(m.Root, manifestName)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := cacheDir(t)
			target := NewLocal(spec)
			defer target.Close()
			m, err := Mirror(testContext(t), target, spec, info, cache, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.damage(t, m); err != nil {
				t.Fatalf("damaging the mirror: %v", err)
			}
			if got, err := LookupMirror(cache, spec, "fixturepkg"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("LookupMirror of a damaged mirror = %+v, %v; want fs.ErrNotExist", got, err)
			}
			again, err := Mirror(testContext(t), target, spec, info, cache, nil)
			if err != nil {
				t.Fatalf("rebuilding: %v", err)
			}
			if !again.Manifest.Created.After(m.Manifest.Created) {
				t.Errorf("the damaged mirror was reused (created %v)", again.Manifest.Created)
			}
			orig, _ := os.ReadFile(filepath.Join(info.Location, "config.py"))
			copied, err := os.ReadFile(file(again, "config.py"))
			if err != nil || !bytes.Equal(orig, copied) {
				t.Errorf("rebuilt config.py differs from the original: %v", err)
			}
			if _, err := LookupMirror(cache, spec, "fixturepkg"); err != nil {
				t.Errorf("LookupMirror after the rebuild: %v", err)
			}
		})
	}
}

func BenchmarkOpenMirrorDebianTorch(b *testing.B) {
	spec := Spec{Name: "deb", Python: "/usr/bin/python3"}
	if _, err := os.Stat(spec.Python); err != nil {
		b.Skip("no /usr/bin/python3")
	}
	info := packageInfo(b, spec, "torch")
	cache := cacheDir(b)
	target := NewLocal(spec)
	defer target.Close()
	m, err := Mirror(testContext(b), target, spec, info, cache, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenMirror(m.Root); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMirrorRootTakesTheIndex checks the layout that lets a user who is
// not root keep an index cache: the mirror's directory is writable by its
// owner, the sources under site/ are not.
func TestMirrorRootTakesTheIndex(t *testing.T) {
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "fixturepkg")
	target := NewLocal(spec)
	defer target.Close()
	m, err := Mirror(testContext(t), target, spec, info, cacheDir(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dir  string
		want os.FileMode
	}{{m.Root, 0o755}, {m.SiteDir, 0o555}, {filepath.Join(m.SiteDir, "fixturepkg"), 0o555}} {
		fi, err := os.Stat(tt.dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tt.want {
			t.Errorf("%s has mode %v, want %v", tt.dir, fi.Mode().Perm(), tt.want)
		}
	}
}

// A mirror whose manifest states another version, package directory or
// site than the target's install is not reused for it, whatever its counts:
// the version it states decides which tracebacks link into it.
func TestMirrorWhoseManifestLiesIsReplaced(t *testing.T) {
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "fixturepkg")
	for _, lie := range []struct {
		field, value string
	}{
		{"version", "2.11.0"},
		{"target_package_dir", "/elsewhere/fixturepkg"},
		{"target_site_dir", "/elsewhere"},
	} {
		t.Run(lie.field, func(t *testing.T) {
			cache := cacheDir(t)
			target := NewLocal(spec)
			defer target.Close()
			m, err := Mirror(testContext(t), target, spec, info, cache, nil)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(m.Root, manifestName)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var man map[string]any
			if err := json.Unmarshal(data, &man); err != nil {
				t.Fatal(err)
			}
			man[lie.field] = lie.value
			if data, err = json.Marshal(man); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o444); err != nil {
				t.Fatal(err)
			}
			again, err := Mirror(testContext(t), target, spec, info, cache, nil)
			if err != nil {
				t.Fatalf("mirroring again: %v", err)
			}
			if got := again.Info(); got.Version != info.Version || got.Location != info.Location || got.Site != info.Site {
				t.Errorf("the lying mirror was reused: it states %s %s at %s in %s; the target has %s %s at %s in %s",
					got.Name, got.Version, got.Location, got.Site, info.Name, info.Version, info.Location, info.Site)
			}
		})
	}
}
