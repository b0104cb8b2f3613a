package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEscapeTerminal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in, line, text string
	}{
		{"plain", "train.py", "train.py", "train.py"},
		{"unicode kept", "modèle_日本.py", "modèle_日本.py", "modèle_日本.py"},
		{"title and clear", "a\x1b]0;pwned\x07\x1b[2Jb.py", `a\u001b]0;pwned\u0007\u001b[2Jb.py`, `a\u001b]0;pwned\u0007\u001b[2Jb.py`},
		{"fake line", "x.py\n[local threads] ok", `x.py\n[local threads] ok`, "x.py\n[local threads] ok"},
		{"carriage return", "ok\rFAIL", `ok\rFAIL`, `ok\rFAIL`},
		{"tab", "a\tb", `a\tb`, "a\tb"},
		{"DEL and C1", "a\x7fb\u009bc", `a\u007fb\u009bc`, `a\u007fb\u009bc`},
		{"bidi override", "evil\u202egnp.py", `evil\u202egnp.py`, `evil\u202egnp.py`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := termName(tt.in); got != tt.line {
				t.Errorf("termName(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := escapeTerminal(tt.in, true); got != tt.text {
				t.Errorf("escapeTerminal(%q, true) = %q, want %q", tt.in, got, tt.text)
			}
		})
	}
}

// termWriter holds back a UTF-8 sequence split across writes, escapes
// what a terminal would act on, and keeps JSON valid and equal.
func TestTermWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := &termWriter{w: &buf}
	in := "é\x1b[2J\n日"
	for i := 0; i < len(in); i++ {
		if _, err := w.Write([]byte{in[i]}); err != nil {
			t.Fatal(err)
		}
	}
	w.Write([]byte{0xe6}) // a sequence that never completes
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "é\\u001b[2J\n日\\xe6"; buf.String() != want {
		t.Errorf("wrote %q, want %q", buf.String(), want)
	}

	buf.Reset()
	value := map[string]string{"file": "a\x7f\u0085\u202e.py"}
	if err := json.NewEncoder(w).Encode(value); err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["file"] != value["file"] {
		t.Errorf("JSON through the writer: %q → %v, %v", buf.String(), back, err)
	}
}

// hostileNames are workspace file names that would retitle and clear the
// terminal, or fake a line of output, if printed as they are.
var hostileNames = []string{
	"a\x1b]0;pwned\x07\x1b[2Jb.py",
	"c\n[local main-thread] all variants passed\nd.py",
}

// assertInert fails if out holds a byte a terminal acts on, other than
// line breaks and tabs, or a line that the names faked.
func assertInert(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\r"} {
		if strings.Contains(out, c) {
			t.Errorf("%s printed %q raw:\n%s", what, c, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "[local main-thread] all variants passed") {
			t.Errorf("%s printed a line a file name faked:\n%s", what, out)
		}
	}
}

// TestWorkspaceNamesReachTheTerminalEscaped runs the commands that print
// workspace file names on a workspace whose names carry terminal escapes
// and line breaks: check prints the files it lints, explain the files it
// leaves out of what it sends.
func TestWorkspaceNamesReachTheTerminalEscaped(t *testing.T) {
	ws := ownWorkspace(t)
	// A trusted torchlsp.toml makes ws the workspace root, whose other
	// files travel: the odd names are among them and are left out by name.
	if err := os.WriteFile(filepath.Join(ws, "torchlsp.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := cli(t, "trust", ws); code != 0 {
		t.Fatalf("trust: %d %s %s", code, out, errOut)
	}
	train := mustRead(t, filepath.Join("..", "..", "test", "e2e", "testdata", "workspace", "train.py"))
	for _, name := range hostileNames {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(train), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errOut := cli(t, "explain", "--quiet", "--python", debianPython, filepath.Join(ws, "breaks.py")+":17")
	if code != 0 || !strings.Contains(errOut, "left out") {
		t.Errorf("explain: %d, want 0 and the odd names left out:\n%s\n%s", code, out, errOut)
	}
	assertInert(t, "explain", out+errOut)

	// check on the torch-shaped fixture, whose threaded compile it flags.
	t.Setenv("PYTHONPATH", mustAbs(t, filepath.Join("..", "..", "testdata", "site")))
	code, out, errOut = cli(t, "check", "--quiet", "--python", debianPython, ws)
	if code != 1 || !strings.Contains(out, `a\u001b]0;pwned\u0007\u001b[2Jb.py:`) || !strings.Contains(out, `c\n[local main-thread] all variants passed\nd.py:`) {
		t.Errorf("check: %d, want 1 and each name escaped on its finding's line:\n%s\n%s", code, out, errOut)
	}
	assertInert(t, "check", out+errOut)
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
