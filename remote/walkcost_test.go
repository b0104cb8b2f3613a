package remote

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// walkCount runs the rule's walk (source_files, the same block in the
// helper and the mirror script) over site's package torch with os.open
// counted, and returns how many files it yielded, how many opens it made
// and the most descriptors it held at once.
const walkCount = `
import os, sys
SOURCE_SUFFIXES = (".py", ".pyi")
exec(sys.stdin.read())
_open, _close = os.open, os.close
opens, held, most = [0], set(), [0]
def counted_open(*a, **kw):
    fd = _open(*a, **kw)
    opens[0] += 1
    held.add(fd)
    most[0] = max(most[0], len(held))
    return fd
def counted_close(fd):
    held.discard(fd)
    _close(fd)
os.open, os.close = counted_open, counted_close
files = list(source_files(sys.argv[1], "torch", True))
print(len(files), opens[0], most[0], len(held))
`

// TestWalkOpensEachDirectoryOnce: the walk of a package opens each
// directory once, relative to the one that listed it, however deep it
// lies, and holds at most the descriptors of WALK_HELD_DIRS directories;
// past that depth it opens each from the site again and still yields every
// file. (Opened from the site level by level, torch 2.11's include tree,
// thousands of directories up to eight deep, doubled the listing an
// on-demand answer waits for.)
func TestWalkOpensEachDirectoryOnce(t *testing.T) {
	t.Parallel()
	begin, end := "# ---- The one rule on the target's links.", "# ---- End of the rule on links.\n"
	src := string(helperSource)
	rule := src[strings.Index(src, begin) : strings.Index(src, end)+len(end)]
	tests := []struct {
		depth             int // the chain of directories under torch, each with a side directory
		wantOpens         int // the site, then each directory once
		mostHeld, atLeast int
	}{
		{depth: 20, wantOpens: 1 + 1 + 2*20, mostHeld: 1 + 20 + 1},
		// Past 64 held directories each deeper one is opened from the
		// site, level by level: more opens, never more descriptors.
		{depth: 100, atLeast: 1 + 1 + 2*100, mostHeld: 64 + 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.depth), func(t *testing.T) {
			t.Parallel()
			site := t.TempDir()
			dir := filepath.Join(site, "torch")
			files := 1
			mk := func(d, name string) {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, name), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			mk(dir, "__init__.py")
			for i := range tt.depth {
				mk(filepath.Join(dir, "side"), fmt.Sprintf("s%d.py", i))
				dir = filepath.Join(dir, "d")
				mk(dir, fmt.Sprintf("m%d.py", i))
				files += 2
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-c", walkCount, site)
			cmd.Stdin = strings.NewReader(rule)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("walk: %v\n%s", err, stderr.String())
			}
			var yielded, opens, most, left int
			if _, err := fmt.Sscan(string(out), &yielded, &opens, &most, &left); err != nil {
				t.Fatalf("walk printed %q: %v", out, err)
			}
			if yielded != files || left != 0 {
				t.Errorf("yielded %d files, want %d; %d descriptors left open", yielded, files, left)
			}
			if tt.wantOpens > 0 && opens != tt.wantOpens {
				t.Errorf("%d opens, want %d: one per directory", opens, tt.wantOpens)
			}
			if opens < tt.atLeast {
				t.Errorf("%d opens, want at least %d", opens, tt.atLeast)
			}
			if most > tt.mostHeld {
				t.Errorf("held %d descriptors at once, want at most %d", most, tt.mostHeld)
			}
		})
	}
}
