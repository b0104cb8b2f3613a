package remote

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func TestListFilesFixture(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	l, err := c.ListFiles(testContext(t), "fixturepkg")
	if err != nil {
		t.Fatal(err)
	}
	site, _ := filepath.Abs("testdata/site")
	if l.Site != site || l.Member != "fixturepkg" {
		t.Errorf("site %q member %q, want %q fixturepkg", l.Site, l.Member, site)
	}
	var got []string
	for _, f := range l.Files {
		st, err := os.Stat(filepath.Join(site, f.Path))
		if err != nil || st.Size() != f.Size {
			t.Errorf("%s: listed size %d, on disk %v %v", f.Path, f.Size, st, err)
		}
		got = append(got, f.Path)
	}
	sort.Strings(got)
	want := []string{"fixturepkg/__init__.py", "fixturepkg/config.py", "fixturepkg/newconfig.py", "fixturepkg/sub/__init__.py", "fixturepkg/sub/stubs.pyi"}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("listed %v, want %v", got, want)
			break
		}
	}
}

func TestReadFiles(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	site, _ := filepath.Abs("testdata/site")
	tests := []struct {
		name    string
		paths   []string
		read    []string
		skipped []string
	}{
		{"package files", []string{"fixturepkg/__init__.py", "fixturepkg/sub/stubs.pyi"}, []string{"fixturepkg/__init__.py", "fixturepkg/sub/stubs.pyi"}, nil},
		{"missing file", []string{"fixturepkg/nope.py"}, nil, []string{"fixturepkg/nope.py"}},
		{"escapes", []string{"fixturepkg/../noisy/__init__.py", "/etc/passwd.py", "noisy/__init__.py"}, nil, []string{"fixturepkg/../noisy/__init__.py", "/etc/passwd.py", "noisy/__init__.py"}},
		{"not source", []string{"fixturepkg/sub/data.txt"}, nil, []string{"fixturepkg/sub/data.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := c.ReadFiles(testContext(t), "fixturepkg", tt.paths)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Files) != len(tt.read) || len(r.Skipped) != len(tt.skipped) {
				t.Fatalf("read %d skipped %v, want %v and %v", len(r.Files), r.Skipped, tt.read, tt.skipped)
			}
			for i, f := range r.Files {
				want, err := os.ReadFile(filepath.Join(site, tt.read[i]))
				if err != nil || f.Path != tt.read[i] || string(f.Data) != string(want) {
					t.Errorf("file %d: %s (%d bytes), want %s (%d bytes)", i, f.Path, len(f.Data), tt.read[i], len(want))
				}
			}
			for i, s := range r.Skipped {
				if s.Path != tt.skipped[i] || s.Reason == "" {
					t.Errorf("skipped %d: %+v, want %s with a reason", i, s, tt.skipped[i])
				}
			}
		})
	}
	if _, err := c.ReadFiles(testContext(t), "fixturepkg", make([]string, MaxReadFiles+1)); err == nil {
		t.Error("a request over MaxReadFiles was sent")
	}
}

func TestValidRel(t *testing.T) {
	t.Parallel()
	l := DefaultHelperLimits()
	tests := []struct {
		path string
		ok   bool
	}{
		{"torch/__init__.py", true},
		{"torch/nn/x.pyi", true},
		{"torch/../etc/x.py", false},
		{"/torch/x.py", false},
		{"other/x.py", false},
		{"torchx/x.py", false},
		{"torch/x.so", false},
		{"torch//x.py", false},
		{"torch\\x.py", false},
	}
	for _, tt := range tests {
		if err := validRel(tt.path, "torch", l); (err == nil) != tt.ok {
			t.Errorf("validRel(%q) = %v, want ok=%v", tt.path, err, tt.ok)
		}
	}
}

// One request brings the files on a name's import path, re-exports
// followed: Debian's torch re-exports nn.Linear twice.
func TestReadImportPath(t *testing.T) {
	t.Parallel()
	site := "/usr/lib/python3/dist-packages"
	if _, err := os.Stat(filepath.Join(site, "torch", "nn", "modules", "linear.py")); err != nil {
		t.Skip("Debian's python3-torch is not installed")
	}
	c := newTestClient(t)
	tests := []struct {
		qualname string
		want     []string
	}{
		{"torch.nn.Linear", []string{"torch/nn/__init__.py", "torch/nn/modules/__init__.py", "torch/nn/modules/linear.py"}},
		{"torch.optim.AdamW", []string{"torch/optim/__init__.py", "torch/optim/adamw.py"}},
		{"torch.nosuchthing", []string{"torch/__init__.py"}},
	}
	for _, tt := range tests {
		r, err := c.ReadImportPath(testContext(t), "torch", tt.qualname, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		var total int64
		for _, f := range r.Files {
			got[f.Path] = true
			total += f.Size
			want, err := os.ReadFile(filepath.Join(site, f.Path))
			if err != nil || string(want) != string(f.Data) {
				t.Errorf("%s: %s differs from the file (%v)", tt.qualname, f.Path, err)
			}
		}
		for _, w := range tt.want {
			if !got[w] {
				t.Errorf("%s: %s not read; read %v", tt.qualname, w, got)
			}
		}
		if total > MaxReadBytes {
			t.Errorf("%s: %d bytes, over MaxReadBytes", tt.qualname, total)
		}
	}
}
