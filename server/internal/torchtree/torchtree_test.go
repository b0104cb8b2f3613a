package torchtree

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Version reads the real version files of the torch releases torchlsp
// meets: Debian's 1.13 and the torch 2.11 of the GPU host (a generated
// file whose __all__ line names __version__ first), and the fixture's.
func TestVersionOfRealFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, site, want, skip string }{
		{"fixture", "../../../testdata/site", "2.99.0+fixture", ""},
		{"debian", "/usr/lib/python3/dist-packages", "1.13.0a0", "Debian's python3-torch is not installed"},
		{"torch211", os.Getenv("TORCHLSP_TORCH211_SITE"), "2.11.0+cu130", "TORCHLSP_TORCH211_SITE is unset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := os.Stat(filepath.Join(tc.site, "torch", "version.py")); tc.site == "" || err != nil {
				if tc.skip == "" {
					t.Fatalf("%s has no torch/version.py", tc.site)
				}
				t.Skip(tc.skip)
			}
			if got := Version(tc.site); got != tc.want {
				t.Errorf("Version(%s) = %q, want %q", tc.site, got, tc.want)
			}
		})
	}
}

// The rule on the lines that real files do not show: only a top-level
// binding of the name itself, annotated or not, to a quoted string.
func TestVersionRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, text, want string }{
		{"plain", "__version__ = '2.1.0'\n", "2.1.0"},
		{"double quotes", "__version__ = \"2.1.0+cpu\"\n", "2.1.0+cpu"},
		{"annotated", "__version__: str = '2.12.0'\n", "2.12.0"},
		{"no spaces", "__version__='1.0'\n", "1.0"},
		{"all first", "__all__ = ['__version__', 'debug']\n__version__ = '2.11.0'\n", "2.11.0"},
		{"first wins", "__version__ = '1'\n__version__ = '2'\n", "1"},
		{"indented", "if True:\n    __version__ = '9.9'\n__version__ = '2.0'\n", "2.0"},
		{"only indented", "if True:\n    __version__ = '9.9'\n", ""},
		{"longer name", "__version__2 = '9.9'\n__version__ = '2.0'\n", "2.0"},
		{"comparison", "__version__ == '9.9'\n", ""},
		{"not a string", "__version__ = get_version()\n", ""},
		{"unterminated", "__version__ = '2.0\n", ""},
		{"empty", "__version__ = ''\n", ""},
		{"crlf", "__version__ = '2.0'\r\n", "2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			site := t.TempDir()
			if err := os.MkdirAll(filepath.Join(site, "torch"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(site, "torch", "version.py"), []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := Version(site); got != tc.want {
				t.Errorf("Version of %q = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
	if got := Version(t.TempDir()); got != "" {
		t.Errorf("Version without version.py = %q, want none", got)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	site := t.TempDir()
	for _, f := range []string{"torch/__init__.py", "torch/_refs/a.py", "torch/_refs/b.pyi", "torch/_refs/sub/c.py", "torch/_meta.py", "torch/x.txt"} {
		p := filepath.Join(site, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rels := func(files []File) []string {
		var out []string
		for _, f := range files {
			out = append(out, f.Rel)
			if f.Size != 6 || f.Mtime == 0 {
				t.Errorf("%s: size %d, mtime %d", f.Rel, f.Size, f.Mtime)
			}
		}
		return out
	}
	all, err := List(site, "torch")
	if want := []string{"torch/__init__.py", "torch/_meta.py", "torch/_refs/a.py", "torch/_refs/sub/c.py"}; err != nil || !reflect.DeepEqual(rels(all), want) {
		t.Errorf("List(torch) = %v, %v; want %v", rels(all), err, want)
	}
	// Roots are files or directories; one an older torch lacks is skipped.
	some, err := List(site, "torch/_refs", "torch/_meta.py", "torch/_inductor")
	if want := []string{"torch/_meta.py", "torch/_refs/a.py", "torch/_refs/sub/c.py"}; err != nil || !reflect.DeepEqual(rels(some), want) {
		t.Errorf("List(roots) = %v, %v; want %v", rels(some), err, want)
	}
	if _, err := List(t.TempDir(), "torch"); err == nil {
		t.Error("a site dir without torch listed")
	}
}

// The fingerprint moves with the header, torch's version and any file's
// size or time.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	site := t.TempDir()
	files := []File{{Rel: "torch/a.py", Size: 1, Mtime: 2}}
	base := Fingerprint("gates/1", site, files)
	if Fingerprint("gates/1", site, files) != base {
		t.Error("the fingerprint is not stable")
	}
	if Fingerprint("gates/2", site, files) == base {
		t.Error("the header does not count")
	}
	if Fingerprint("gates/1", site, []File{{Rel: "torch/a.py", Size: 1, Mtime: 3}}) == base {
		t.Error("a file's time does not count")
	}
	if err := os.MkdirAll(filepath.Join(site, "torch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "torch", "version.py"), []byte("__version__ = '1'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if Fingerprint("gates/1", site, files) == base {
		t.Error("torch's version does not count")
	}
}
