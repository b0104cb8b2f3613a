package repro

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// collectBounded runs collect and fails the test if it does not end: no
// file in a workspace may block the collection.
func collectBounded(t *testing.T, collect func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- collect() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("collection still running after 20s: a file blocked it")
	}
	return nil
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// The files a run needs are added before the walk, so no limit and no
// walk order drops them; the thousands of files that do not fit are one
// line of summary, not one line each.
func TestCollectorRequiredFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 2100 {
		writeFile(t, filepath.Join(dir, "a", fmt.Sprintf("m%04d.py", i)), "x = 1\n")
	}
	writeFile(t, filepath.Join(dir, "zz", "train.py"), "import torch\n")
	c, err := NewCollector(dir, BundleLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Require("zz/train.py"); err != nil {
		t.Fatal(err)
	}
	if err := c.Walk(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := c.Bundle()
	if len(b.Files) != DefaultMaxFiles {
		t.Errorf("%d files, want the %d-file limit", len(b.Files), DefaultMaxFiles)
	}
	if !c.Has("zz/train.py") {
		t.Error("the file under test was dropped past the file limit")
	}
	sum := b.LeftOut.String()
	if b.LeftOut.Count != 101 || !strings.HasPrefix(sum, "101 workspace file(s) left out: 101 past the 2000-file limit (a/m1999.py, a/m2000.py, a/m2001.py, a/m2002.py, a/m2003.py and 96 more)") {
		t.Errorf("left out %d: %q", b.LeftOut.Count, sum)
	}
	if strings.Count(sum, ".py") > maxLeftOutExamples {
		t.Errorf("summary names more than %d files: %q", maxLeftOutExamples, sum)
	}
}

// What a run cannot do without, and cannot send, is an error naming the
// file and why; it never blocks.
func TestCollectorRequireRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		plant func(t *testing.T, dir, path string)
		lim   BundleLimits
		want  string
	}{
		{"link to /dev/zero", func(t *testing.T, dir, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, BundleLimits{}, "m.py is a symbolic link, not a regular file"},
		{"named pipe", func(t *testing.T, dir, path string) { mkfifo(t, path) }, BundleLimits{}, "m.py is a named pipe, not a regular file"},
		{"directory", func(t *testing.T, dir, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, BundleLimits{}, "m.py is a directory"},
		{"too large", func(t *testing.T, dir, path string) { writeFile(t, path, strings.Repeat("x", 101)) }, BundleLimits{MaxFileBytes: 100}, "101 bytes, over the 100-byte limit"},
		{"past the total", func(t *testing.T, dir, path string) { writeFile(t, path, strings.Repeat("x", 90)) }, BundleLimits{MaxFileBytes: 100, MaxBytes: 50}, "pass the 50-byte limit"},
		{"missing", func(t *testing.T, dir, path string) {}, BundleLimits{}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tt.plant(t, dir, filepath.Join(dir, "m.py"))
			c, err := NewCollector(dir, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			err = collectBounded(t, func() error { _, err := c.Require("m.py"); return err })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
			if c.Has("m.py") || len(c.Bundle().Files) != 0 {
				t.Error("refused file is in the bundle")
			}
		})
	}
	c, err := NewCollector(t.TempDir(), BundleLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, rel := range []string{"../x.py", "/etc/passwd", "a/../../x.py", "\x1b]0;x\a.py"} {
		if _, err := c.Require(rel); err == nil || !strings.Contains(err.Error(), "not a name the target accepts") {
			t.Errorf("Require(%q): %v", rel, err)
		}
	}
}

// A file that changes between the walk's look and the read, swapped for
// a named pipe or a link to /dev/zero, or grown far past the limit, is
// left out and named: the walk neither blocks nor holds it in memory.
func TestCollectorWalkChangedFiles(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
		want   string
	}{
		{"swapped for a named pipe", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			mkfifo(t, path)
		}, "1 not a regular file (m.py)"},
		{"swapped for a link to /dev/zero", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "1 unreadable (m.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "keep.py"), "x = 1\n")
			writeFile(t, filepath.Join(dir, "m.py"), "y = 2\n")
			c, err := NewCollector(dir, BundleLimits{MaxFileBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.beforeRead = func(rel string) {
				if rel == "m.py" {
					tt.change(t, filepath.Join(dir, rel))
				}
			}
			if err := collectBounded(t, func() error { return c.Walk(context.Background()) }); err != nil {
				t.Fatal(err)
			}
			b := c.Bundle()
			if len(b.Files) != 1 || b.Files[0].Path != "keep.py" {
				t.Errorf("files %v, want keep.py alone", b.Files)
			}
			if got := b.LeftOut.String(); !strings.Contains(got, tt.want) {
				t.Errorf("left out %q, want %q", got, tt.want)
			}
		})
	}
}

// A file that grows by 400 MiB between the walk's look and the read is
// left out once its limit is passed: the collection holds no more than the
// limit of it. Not parallel: it measures allocation.
func TestCollectorWalkGrowingFile(t *testing.T) {
	const limit = 1 << 20
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "keep.py"), "x = 1\n")
	writeFile(t, filepath.Join(dir, "m.py"), "y = 2\n")
	c, err := NewCollector(dir, BundleLimits{MaxFileBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.beforeRead = func(rel string) {
		if rel != "m.py" {
			return
		}
		// Most of it a hole: only a read would make the bytes real.
		if err := os.Truncate(filepath.Join(dir, rel), 400<<20); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := collectBounded(t, func() error { return c.Walk(context.Background()) }); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	b := c.Bundle()
	if len(b.Files) != 1 || b.Files[0].Path != "keep.py" {
		t.Errorf("files %v, want keep.py alone", b.Files)
	}
	if got := b.LeftOut.String(); !strings.Contains(got, "1 over the 1048576-byte limit for a file (m.py)") {
		t.Errorf("left out %q", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d bytes collecting a 1 MiB-limited file", alloc)
	}
}

// The walk stops after its entry budget and says so.
func TestCollectorEntryBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 30 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("d%02d", i), "m.py"), "x = 1\n")
	}
	b, err := CollectWorkspace(dir, BundleLimits{MaxEntries: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Files) != 5 || !strings.Contains(b.LeftOut.String(), "past the 10 directory entries a walk visits") {
		t.Errorf("%d files, left out %q", len(b.Files), b.LeftOut)
	}
}

func TestLeftOutString(t *testing.T) {
	t.Parallel()
	var l LeftOut
	if l.String() != "" {
		t.Errorf("empty: %q", l.String())
	}
	l.add("not a regular file", "a.py")
	l.add("past the 2-file limit", "b.py")
	l.add("not a regular file", `"\x1b[2J.py"`)
	if got, want := l.String(), `3 workspace file(s) left out: 2 not a regular file (a.py, "\x1b[2J.py"); 1 past the 2-file limit (b.py)`; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// Environments travel under no name: a virtual environment is known by its
// pyvenv.cfg and a conda environment by its conda-meta, whatever the
// folder is called.
func TestCollectorSkipsEnvironments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for p, data := range map[string]string{
		"train.py":                              "import torch\n",
		"env/pyvenv.cfg":                        "home = /usr/bin\n",
		"env/lib/python3.11/site-packages/a.py": "x = 1\n",
		"venv_gpu/pyvenv.cfg":                   "home = /usr/bin\n",
		"venv_gpu/bin/activate_this.py":         "x = 1\n",
		"py310/conda-meta/history":              "",
		"py310/lib/python3.10/os.py":            "x = 1\n",
		"environment/setup.py":                  "x = 1\n",
	} {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(p)), data)
	}
	b, err := CollectWorkspace(dir, BundleLimits{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range b.Files {
		paths = append(paths, f.Path)
	}
	if got, want := strings.Join(paths, " "), "environment/setup.py train.py"; got != want {
		t.Errorf("files %q, want %q", got, want)
	}
}
