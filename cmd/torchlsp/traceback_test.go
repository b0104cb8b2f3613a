package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// TestTracebackCLI maps real tracebacks of Debian's torch 1.13 from a file
// and from stdin, in a workspace whose trusted torchlsp.toml names the
// directory they ran in as the target's workdir.
func TestTracebackCLI(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is missing", debianPython)
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"); err != nil {
		t.Skip("Debian's python3-torch is not installed")
	}
	tmp := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
	ws := filepath.Join(tmp, "ws")
	if err := os.CopyFS(ws, os.DirFS(filepath.Join("..", "..", "scripts", "logs"))); err != nil {
		t.Fatal(err)
	}
	toml := "default = \"deb\"\n[targets.deb]\npython = \"/usr/bin/python3\"\nworkdir = \"/tmp/tmp.WOJmxNDkJj\"\n"
	if err := os.WriteFile(filepath.Join(ws, "torchlsp.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := cli(t, "trust", ws); code != 0 {
		t.Fatalf("trust: %d %s %s", code, out, errOut)
	}
	captures, err := filepath.Abs(filepath.Join("..", "..", "server", "traceback", "testdata", "torch113"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(ws)
	withStdin := func(stdin string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	t.Run("a file", func(t *testing.T) {
		code, out, errOut := withStdin("", "traceback", "--quiet", filepath.Join(captures, "threads.txt"))
		for _, want := range []string{
			filepath.Join(ws, "threads.py") + ":8: worker: model(torch.randn(2, 3))\n",
			"/site/torch/nn/modules/linear.py:114: forward: return F.linear(input, self.weight, self.bias)\n",
			"    /usr/lib/python3.11/threading.py:975: run: not mapped",
			"RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x8)\n",
			"innermost frame in your code: " + filepath.Join(ws, "threads.py") + ":8\n",
			"5 of 7 references mapped\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		if code != 0 || t.Failed() {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("stdin, with pseudo-files", func(t *testing.T) {
		code, out, errOut := withStdin(mustRead(t, filepath.Join(captures, "runpy.txt")), "traceback", "--quiet", "-")
		if code != 0 || !strings.Contains(out, "    <frozen runpy>:198: _run_module_as_main: not a file\n") ||
			!strings.Contains(out, filepath.Join(ws, "runpy_main.py")+":4: <module>: torch.ones(2).view(3)\n") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("another torch version is not linked and the exit says so", func(t *testing.T) {
		text := "torch 2.11.0+cu130\n" + strings.ReplaceAll(mustRead(t, filepath.Join(captures, "string.txt")), "/tmp/tmp.WOJmxNDkJj", "/elsewhere")
		code, out, errOut := withStdin(text, "traceback", "--quiet")
		if code != 1 || !strings.Contains(out, "not linked: from torch 2.11.0+cu130, but target deb's mirror holds torch 1.13") ||
			!strings.Contains(errOut, "no reference in the text maps") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("usage", func(t *testing.T) {
		if code, _, _ := withStdin("", "traceback", "a", "b"); code != 2 {
			t.Errorf("two files: exit %d, want 2", code)
		}
		if code, _, errOut := withStdin("", "traceback", "--quiet", filepath.Join(tmp, "missing.log")); code != 1 || !strings.Contains(errOut, "missing.log") {
			t.Errorf("a missing file: exit %d, %s", code, errOut)
		}
	})
}

func TestReadTail(t *testing.T) {
	for _, tc := range []struct {
		in         string
		max, limit int
		want       string
		note       string
	}{
		{"abc", 10, 100, "abc", ""},
		{"abcdefghij", 4, 100, "ghij", "over"},
		{"", 4, 100, "", ""},
		{"abcdefghij", 4, 6, "cdef", "did not end within"},
		{"abcdefghijk", 3, 100, "ijk", "over"},
		{"abcd", 4, 100, "abcd", ""},
	} {
		// The whole text in one read, and one byte a read (the ring
		// wraps at every byte once full).
		for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
			got, note, err := readTail(context.Background(), r, tc.max, tc.limit)
			if err != nil || got != tc.want || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("readTail(%q, %d, %d) = %q, %q, %v", tc.in, tc.max, tc.limit, got, note, err)
			}
		}
	}
}
