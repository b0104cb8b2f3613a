package source

import (
	"testing"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

func TestFilePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		uri    string
		want   string
		wantOK bool
	}{
		{"file:///home/u/a.py", "/home/u/a.py", true},
		{"file:///home/u/my%20file.py", "/home/u/my file.py", true},
		{"file:///home/u/gr%C3%B6%C3%9Fe.py", "/home/u/größe.py", true},
		{"file://localhost/tmp/x.py", "/tmp/x.py", true},
		{"file://LOCALHOST/tmp/x.py", "/tmp/x.py", true},
		{"FILE:///tmp/x.py", "/tmp/x.py", true},
		{"File:///tmp/x.py", "/tmp/x.py", true},
		{"file:/tmp/x.py", "/tmp/x.py", true},
		{"file:///tmp/a/../b.py", "/tmp/b.py", true},
		{"file:///c%3A/x", "/c:/x", true},
		{"file://server/share/x.py", "", false},
		{"file:relative/x.py", "", false},
		{"file:///%zz", "", false},
		{"file:///a%00b", "", false},
		{"file://", "", false},
		{"untitled:Untitled-1", "", false},
		{"vscode-notebook-cell:/a.ipynb#x", "", false},
		{"", "", false},
		{"::::", "", false},
	}
	for _, tt := range tests {
		got, ok := FilePath(tt.uri)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("FilePath(%q) = %q, %v; want %q, %v", tt.uri, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzFilePath(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	for _, s := range []string{"file:///a/b.py", "untitled:x", "file://host/share/x", "file:///c%3A/x", "%", "FILE://localhost/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		deadline.Start(t, u)
		p, ok := FilePath(u)
		if ok && (p == "" || p[0] != '/') {
			t.Fatalf("FilePath(%q) = %q: not absolute", u, p)
		}
	})
}

func TestFileURIRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/tmp/x.py", "/tmp/my file.py", "/tmp/100%/größe.py", "/tmp/a#b?c.py"} {
		got, ok := FilePath(FileURI(p))
		if !ok || got != p {
			t.Errorf("FilePath(FileURI(%q)) = %q, %v", p, got, ok)
		}
	}
}
