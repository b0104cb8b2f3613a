package links

import (
	"github.com/torchlsp/torchlsp/internal/plant"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/source"
	"github.com/torchlsp/torchlsp/server/traceback"
)

func TestLinesOf(t *testing.T) {
	t.Parallel()
	m := source.NewMapper("a\nb\r\nc\rd")
	for _, tc := range []struct {
		first, last int
		want        string
	}{
		{0, 0, "a\n"},
		{1, 2, "b\r\nc\r"},
		{2, 1, "c\r"},
		{3, 9, "d"},
		{-4, 0, "a\n"},
		{7, 9, ""},
	} {
		if got := linesOf(m, tc.first, tc.last); got != tc.want {
			t.Errorf("linesOf(%d, %d) = %q, want %q", tc.first, tc.last, got, tc.want)
		}
	}
}

// TestTracebackFileReadsAreBounded: a frame's file is proved and read on
// one handle, and neither blocks nor runs away: a named pipe and a link to
// /dev/zero are not files of the workspace, a file over the bound is
// linked without its text, and a run folder's result files are read the
// same way. (A frame's line was read by path with no bound on a pipe.)
func TestTracebackFileReadsAreBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plant.Tree(t, dir, map[string]string{
		"swapped.py": "|fifo",
		"zero.py":    "->/dev/zero",
		"ok.py":      "x = 1\n",
		"run/a.json": "|fifo",
		"run/b.json": "->/dev/zero",
		"run/c.json": `{"workspace_dir": "/tmp/tmp.abc"}`,
		"run/d.json": "->c.json",
		"run/e.json": "->../ok.py",
		"run/f.json": "->" + filepath.Join(dir, "run", "c.json"),
	})
	grown := filepath.Join(dir, "grown.py")
	f, err := os.Create(grown)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxSourceFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	m := &pathMap{roots: map[string]*os.Root{}, memo: map[refKey]mapped{}, sources: newFileLines()}
	defer m.close()
	bounded := func(what string, do func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { do(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still reading after 10s: it blocked", what)
		}
	}
	for _, name := range []string{"swapped.py", "zero.py"} {
		bounded(name, func() {
			if local, ok := m.inWorkspace(dir, name); ok {
				t.Errorf("%s mapped to %s", name, local)
			}
		})
	}
	bounded("grown.py", func() {
		local, ok := m.inWorkspace(dir, "grown.py")
		if !ok {
			t.Fatal("a regular file over the bound is not linked")
		}
		if text, ok := m.sources.text(local); ok || text != "" || m.sources.line(local, 0) != "" {
			t.Errorf("a file over the bound was read: %d bytes", len(text))
		}
	})
	bounded("the run folder", func() {
		if got := readRunWorkspaceDirs(filepath.Join(dir, "run")); !slices.Equal(got, []string{"/tmp/tmp.abc"}) {
			t.Errorf("workspace dirs %q", got)
		}
	})
}

// workspaceMap maps paths into ws alone, as a traceback's map does for a
// workspace folder; proved is called between each file's proof and the
// read of its text.
func workspaceMap(ws string, proved func(local string)) *pathMap {
	m := &pathMap{folders: []string{ws}, roots: map[string]*os.Root{}, memo: map[refKey]mapped{}, proved: proved}
	m.addPrefix(filepath.ToSlash(ws), ws, "the workspace")
	return m
}

// traceIn maps a parsed text through m and closes it.
func traceIn(m *pathMap, parsed traceback.Result) *TracebackResult {
	defer m.close()
	return m.traceback(parsed)
}

// passwdLine is what a link planted in the workspace leads to.
const passwdLine = "root:x:0:0:root:/root:/bin/bash"

// TestTracebackLineIsTheProvedFile: a workspace file swapped for a link
// to a file outside the workspace between the proof that maps a frame to
// it and the read of its line shows the line of the file proved; the link
// target is never read. (The proof was a stat through the os.Root, the
// read a later open by path that followed the link: /etc/passwd's first
// line was shown as the frame's source.)
func TestTracebackLineIsTheProvedFile(t *testing.T) {
	t.Parallel()
	ws, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "passwd")
	plant.Tree(t, outside, map[string]string{"passwd": passwdLine + "\n"})
	plant.Tree(t, ws, map[string]string{"train.py": "model = build()\n"})
	train := filepath.Join(ws, "train.py")
	text := "Traceback (most recent call last):\n  File \"" + train + "\", line 1, in <module>\nRuntimeError: boom\n"
	swaps := 0
	res := traceIn(workspaceMap(ws, func(local string) {
		if local != train {
			t.Errorf("proved %s", local)
			return
		}
		swaps++
		if err := os.Remove(train); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, train); err != nil {
			t.Fatal(err)
		}
	}), traceback.Parse(text, 10))
	if swaps != 1 || len(res.Frames) != 1 || res.Frames[0].Path != train || res.Frames[0].Source != "model = build()" {
		t.Fatalf("swapped %d times; frames %+v", swaps, res.Frames)
	}
	if got, _ := res.sources.text(train); strings.Contains(got, "root:x") {
		t.Errorf("the link's target was read: %q", got)
	}
	// Mapped again, the path is now a link out of the workspace: it maps
	// nowhere, and still nothing reads its target.
	res = traceIn(workspaceMap(ws, nil), traceback.Parse(text, 10))
	if res.Mapped != 0 || res.Frames[0].Path != "" || res.Frames[0].Source != "" {
		t.Errorf("a link out of the workspace mapped: %+v", res.Frames)
	}
}

// TestTracebackLineUnderSwaps: while a workspace file is swapped again and
// again between itself and a link to a file outside, every traceback
// shows the file's own line or maps nowhere; never the link target's.
// (One check and a later read by path showed the target now and then.)
func TestTracebackLineUnderSwaps(t *testing.T) {
	t.Parallel()
	ws, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "passwd")
	plant.Tree(t, outside, map[string]string{"passwd": passwdLine + "\n"})
	plant.Tree(t, ws, map[string]string{"train.py": "model = build()\n"})
	train := filepath.Join(ws, "train.py")
	parsed := traceback.Parse("Traceback (most recent call last):\n  File \""+train+"\", line 1, in <module>\nRuntimeError: boom\n", 10)
	stop := make(chan struct{})
	swapped := make(chan error, 1)
	go func() {
		link, file := filepath.Join(ws, ".link"), filepath.Join(ws, ".file")
		for {
			select {
			case <-stop:
				swapped <- nil
				return
			default:
			}
			for _, step := range []func() error{
				func() error { return os.Symlink(secret, link) },
				func() error { return os.Rename(link, train) },
				func() error { return os.WriteFile(file, []byte("model = build()\n"), 0o600) },
				func() error { return os.Rename(file, train) },
			} {
				if err := step(); err != nil {
					swapped <- err
					return
				}
			}
		}
	}()
	const rounds = 5000
	mapped := 0
	for range rounds {
		res := traceIn(workspaceMap(ws, nil), parsed)
		if src := res.Frames[0].Source; strings.Contains(src, "root:x") {
			close(stop)
			t.Fatalf("the link's target was shown as the frame's line: %q", src)
		} else if src != "" {
			mapped++
		}
	}
	close(stop)
	if err := <-swapped; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d tracebacks mapped the file", mapped, rounds)
}
