package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/internal/torchsites"
)

// The on-demand tree resolves a name from the few files on its import path,
// and is never taken for a mirror.
func TestOnDemandResolve(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/lib/python3/dist-packages/torch/__init__.py"); err != nil {
		t.Skip("Debian's python3-torch is not installed")
	}
	for _, tree := range torchsites.Trees(t) {
		t.Run(tree.Name, func(t *testing.T) {
			t.Parallel()
			s := testSession(t, tree.Site)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ps, err := s.openQuick(ctx, "torch", "torch.nn.Linear")
			if err != nil {
				t.Fatal(err)
			}
			// The first round trip brought the import path.
			if _, err := os.Stat(filepath.Join(ps.mirror.SiteDir, "torch", "nn", "modules", "linear.py")); err != nil {
				t.Errorf("the import path of nn.Linear was not read at once: %v", err)
			}
			for _, tt := range []struct{ name, file, line string }{
				{"torch.nn.Linear", "torch/nn/modules/linear.py", "class Linear"},
				{"torch.nn.functional.relu", "torch/nn/functional.py", "def relu"},
			} {
				res, err := ps.index.Resolve(tt.name)
				if err != nil {
					t.Fatalf("resolve %s: %v", tt.name, err)
				}
				if !strings.HasPrefix(res.Symbol.Path, ps.mirror.SiteDir) || !strings.HasSuffix(res.Symbol.Path, tt.file) {
					t.Errorf("%s in %s, want %s under %s", tt.name, res.Symbol.Path, tt.file, ps.mirror.SiteDir)
				}
				data, err := os.ReadFile(res.Symbol.Path)
				if err != nil {
					t.Fatal(err)
				}
				if line := strings.Split(string(data), "\n")[res.Symbol.Line]; !strings.Contains(line, tt.line) {
					t.Errorf("%s at line %d: %q, want %q", tt.name, res.Symbol.Line+1, line, tt.line)
				}
				if local, ok := ps.mirror.LocalPath(ps.mirror.TargetPath(res.Symbol.Path)); !ok || local != res.Symbol.Path {
					t.Errorf("%s: target path does not map back: %q %v", tt.name, local, ok)
				}
			}
			st := ps.index.Stats()
			if st.Files < 1000 || st.Parsed > 20 {
				t.Errorf("listing of %d files, %d parsed: want the whole listing and only the import path parsed", st.Files, st.Parsed)
			}
			var fetched int
			var bytes int64
			_ = filepath.Walk(ps.mirror.SiteDir, func(p string, info os.FileInfo, err error) error {
				if err == nil && info.Mode().IsRegular() {
					fetched++
					bytes += info.Size()
				}
				return nil
			})
			t.Logf("%s: %d files listed, %d parsed, %d fetched (%d bytes)", tree.Name, st.Files, st.Parsed, fetched, bytes)
			if bytes > 3<<20 {
				t.Errorf("fetched %d bytes, over 3 MB", bytes)
			}
			if m, err := remote.LookupMirror(s.opts.CacheDir, s.spec, "torch"); err == nil && m != nil {
				t.Errorf("the on-demand tree %s was taken for a mirror", m.Root)
			}
			if want := remote.MirrorDir(s.opts.CacheDir, s.spec, ps.info); ps.mirror.Root != want {
				t.Errorf("the on-demand tree is in %s, want where its mirror will be, %s", ps.mirror.Root, want)
			}
		})
	}
}
