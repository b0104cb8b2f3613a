package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRootOf: only a torchlsp.toml that is a regular file of the user's,
// whose content the user trusts, makes its directory a file's workspace
// root; anything else of that name (an empty file planted in a shared
// parent, a directory, a link to a trusted file, a named pipe, a trusted
// file of another user's, one changed since) makes none and says why,
// and the search stops at it. (Any entry named torchlsp.toml made a root:
// an empty file in /tmp sent every readable Python file under it.)
func TestRootOf(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	store := NewTrustStore(Dirs{State: filepath.Join(base, "state")})
	trusted := func(t *testing.T, dir string) string {
		t.Helper()
		p := filepath.Join(dir, WorkspaceFile)
		if err := os.WriteFile(p, []byte(goodTOML), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Trust(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	project := func(t *testing.T) (shared, proj string) {
		t.Helper()
		shared = t.TempDir()
		proj = filepath.Join(shared, "me", "proj", "src")
		if err := os.MkdirAll(proj, 0o755); err != nil {
			t.Fatal(err)
		}
		return shared, proj
	}

	t.Run("a trusted file of the user's is the root", func(t *testing.T) {
		shared, src := project(t)
		trusted(t, filepath.Join(shared, "me", "proj"))
		if root, st := RootOf(src, store); root != filepath.Join(shared, "me", "proj") || st.State != Trusted || st.RootMessage("") != "" {
			t.Errorf("RootOf = %q, %+v", root, st)
		}
	})

	t.Run("none", func(t *testing.T) {
		_, src := project(t)
		if root, st := RootOf(src, store); root != "" || st.State != Absent || st.RootMessage("") != "" {
			t.Errorf("RootOf = %q, %+v", root, st)
		}
	})

	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, path string)
		why   string
	}{
		{"an empty file planted in a shared parent", func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o666); err != nil {
				t.Fatal(err)
			}
		}, "is not trusted"},
		{"a directory", directory, "is a directory, not a regular file"},
		{"a named pipe", fifo, "is a named pipe, not a regular file"},
		{"a link to a trusted file", func(t *testing.T, p string) {
			symlinkTo(trusted(t, t.TempDir()))(t, p)
		}, "is a symbolic link"},
		{"a trusted file changed since", func(t *testing.T, p string) {
			trusted(t, filepath.Dir(p))
			if err := os.WriteFile(p, []byte(goodTOML+"# more\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "changed since you trusted it"},
		{"a trusted file of another user's", func(t *testing.T, p string) {
			if os.Geteuid() != 0 {
				t.Skip("making a file of another user's needs root")
			}
			trusted(t, filepath.Dir(p))
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "belongs to another user (uid 65534), not to you"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shared, src := project(t)
			// A trusted root further up does not count: the file nearest
			// the user's decides.
			trusted(t, filepath.Join(shared))
			tt.plant(t, filepath.Join(shared, "me", WorkspaceFile))
			done := make(chan struct{})
			var root string
			var st WorkspaceStatus
			go func() {
				root, st = RootOf(src, store)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("RootOf still running after 10s: it blocked")
			}
			if root != "" || st.Dir != filepath.Join(shared, "me") {
				t.Errorf("RootOf = %q, %+v; want no root", root, st)
			}
			msg := st.RootMessage("a run sends only the file and the modules it imports")
			for _, want := range []string{tt.why, filepath.Join(shared, "me") + " is not a workspace root", "sends only the file and the modules it imports"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
		})
	}
}
