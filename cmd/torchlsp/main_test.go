package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const debianPython = "/usr/bin/python3"

func TestParseFilePos(t *testing.T) {
	tests := []struct {
		arg     string
		want    filePos
		wantErr bool
	}{
		{"train.py:3:7", filePos{"train.py", 3, 7}, false},
		{"C:/odd:name.py:10:1", filePos{"C:/odd:name.py", 10, 1}, false},
		{"train.py:3", filePos{}, true},
		{"train.py:0:1", filePos{}, true},
		{"train.py:a:1", filePos{}, true},
	}
	for _, tt := range tests {
		got, err := parseFilePos(tt.arg)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("parseFilePos(%q) = %+v, %v", tt.arg, got, err)
		}
	}
}

// cli runs the command line in-process with its own XDG directories, on
// the torch-shaped fixture through Debian's interpreter.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func setup(t *testing.T) string {
	t.Helper()
	tmp := isolatedCLI(t)
	site, err := filepath.Abs(filepath.Join("..", "..", "testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", site)
	ws := filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "test", "e2e", "testdata", "workspace", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "train.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(string(src), `mode="reduce-overhead"`, `mode="max-autotune-no-cudagraphs"`, 1)
	fixed = strings.Replace(fixed, "inductor_config.triton.cudagraph_trees = False\n", "", 1)
	if err := os.WriteFile(filepath.Join(ws, "fixed.py"), []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestCommands(t *testing.T) {
	ws := setup(t)
	train := filepath.Join(ws, "train.py")

	t.Run("usage errors exit 2", func(t *testing.T) {
		for _, args := range [][]string{{}, {"bogus"}, {"hover"}, {"definition", "x.py:1"}, {"check", "--format", "xml", ws}} {
			if code, _, _ := cli(t, args...); code != 2 {
				t.Errorf("%q exited %d, want 2", args, code)
			}
		}
	})

	t.Run("definition", func(t *testing.T) {
		code, out, errOut := cli(t, "definition", "--quiet", "--python", debianPython, train+":15:25")
		if code != 0 || !strings.Contains(out, "/site/torch/nn/modules/linear.py:19:7") || !strings.Contains(out, "on the target: ") {
			t.Fatalf("definition: %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("hover", func(t *testing.T) {
		code, out, errOut := cli(t, "hover", "--quiet", "--python", debianPython, train+":24:22")
		if code != 0 || !strings.Contains(out, "def compile(") || !strings.Contains(out, "2.99.0+fixture") {
			t.Fatalf("hover: %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("check finds the threaded compile and exits 1", func(t *testing.T) {
		code, out, errOut := cli(t, "check", "--quiet", "--python", debianPython, train)
		if code != 1 || !strings.Contains(out, "TL001 cudagraphs-in-threads") {
			t.Fatalf("check: %d\n%s\n%s", code, out, errOut)
		}
		code, out, _ = cli(t, "check", "--quiet", "--format", "json", "--python", debianPython, train)
		var findings []struct{ Code, Severity string }
		if code != 1 || json.Unmarshal([]byte(out), &findings) != nil || len(findings) == 0 {
			t.Fatalf("check --format json: %d\n%s", code, out)
		}
	})

	t.Run("check --format json keeps a file name that is not UTF-8", func(t *testing.T) {
		dir := t.TempDir()
		name := filepath.Join(dir, "tr\xffain.py")
		if err := os.WriteFile(name, []byte(mustRead(t, train)), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := cli(t, "check", "--quiet", "--format", "json", "--python", debianPython, name)
		var findings []struct {
			File       string `json:"file"`
			FileBase64 string `json:"file_base64"`
		}
		if code != 1 || json.Unmarshal([]byte(out), &findings) != nil || len(findings) == 0 {
			t.Fatalf("check --format json: %d\n%s\n%s", code, out, errOut)
		}
		raw, err := base64.StdEncoding.DecodeString(findings[0].FileBase64)
		if err != nil || string(raw) != name || !strings.Contains(findings[0].File, "\uFFFD") {
			t.Errorf("file %q, file_base64 %q (%v); want the exact name %q beside its display form", findings[0].File, raw, err, name)
		}
	})

	t.Run("check is quiet on the fixed twin", func(t *testing.T) {
		code, out, errOut := cli(t, "check", "--quiet", "--python", debianPython, filepath.Join(ws, "fixed.py"))
		if code != 0 || strings.Contains(out, "TL001") {
			t.Fatalf("check fixed: %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("check is silent on a torch whose cudagraph trees make per-thread state", func(t *testing.T) {
		site := filepath.Join(t.TempDir(), "site")
		if out, err := exec.Command("cp", "-R", filepath.Join("..", "..", "testdata", "site"), site).CombinedOutput(); err != nil {
			t.Fatalf("copy the fixture: %v\n%s", err, out)
		}
		fixed := mustRead(t, filepath.Join("..", "..", "server", "diagnose", "testdata", "fixed_tls", "cudagraph_trees.py"))
		if err := os.WriteFile(filepath.Join(site, "torch", "_inductor", "cudagraph_trees.py"), []byte(fixed), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PYTHONPATH", site)
		code, out, errOut := cli(t, "check", "--quiet", "--python", debianPython, train)
		if strings.Contains(out, "TL001") {
			t.Fatalf("check on the fixed-TLS torch: %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("gates", func(t *testing.T) {
		code, out, errOut := cli(t, "gates", "--quiet", "--python", debianPython, "triton.cudagraph_trees")
		if code != 0 || !strings.Contains(out, "torch/_inductor/compile_fx.py:") || !strings.Contains(out, "if config.triton.cudagraph_trees:") {
			t.Fatalf("gates: %d\n%s\n%s", code, out, errOut)
		}
		code, _, errOut = cli(t, "gates", "--quiet", "--python", debianPython, "triton.cudagraph_tree")
		if code != 1 || !strings.Contains(errOut, "did you mean triton.cudagraph_trees") {
			t.Fatalf("gates with a typo: %d\n%s", code, errOut)
		}
	})

	t.Run("site prints the directory alone on stdout", func(t *testing.T) {
		t.Chdir(ws)
		code, out, errOut := cli(t, "site", "--python", debianPython)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 1 || !filepath.IsAbs(lines[0]) {
			t.Fatalf("site: %d\n%s\n%s", code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(lines[0], "torch", "nn", "modules", "linear.py")); err != nil {
			t.Errorf("the site lacks the fixture's torch: %v", err)
		}
		if !strings.Contains(errOut, "2.99.0+fixture") || !strings.Contains(errOut, "site of target local") {
			t.Errorf("site's summary on stderr:\n%s", errOut)
		}
		code, again, errOut := cli(t, "site", "--quiet", "--python", debianPython)
		if code != 0 || again != out || errOut != "" {
			t.Errorf("site again: %d %q (first %q), stderr %q", code, again, out, errOut)
		}
		if code, _, _ := cli(t, "site", "extra"); code != 2 {
			t.Errorf("site with an argument exited %d, want 2", code)
		}
	})

	t.Run("trust", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(ws, "torchlsp.toml"), []byte("[targets.x]\npython = \"/usr/bin/python3\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := cli(t, "trust", ws); code != 0 || !strings.Contains(out, "trusted") {
			t.Fatalf("trust: %d %s %s", code, out, errOut)
		}
		if code, out, _ := cli(t, "trust", "--list"); code != 0 || !strings.Contains(out, filepath.Join(ws, "torchlsp.toml")) {
			t.Fatalf("trust --list: %d %s", code, out)
		}
		if code, _, _ := cli(t, "trust", "--revoke", ws); code != 0 {
			t.Fatalf("trust --revoke: %d", code)
		}
		if code, out, _ := cli(t, "trust", "--list"); code != 0 || strings.Contains(out, "torchlsp.toml") {
			t.Fatalf("trust --list after revoke: %d %s", code, out)
		}
	})
}

// The command line's answers a user trips over: numbers in the user's own
// 1-based terms, no chatter for names torchlsp leaves to other tools, no
// repro of a call the user did not point at.
func TestCommandLineFriction(t *testing.T) {
	ws := setup(t)
	train := filepath.Join(ws, "train.py")
	lines := strings.Count(mustRead(t, train), "\n") + 1

	t.Run("a line past the end is named as given", func(t *testing.T) {
		past := lines + 3
		code, _, errOut := cli(t, "hover", "--quiet", "--python", debianPython, fmt.Sprintf("%s:%d:1", train, past))
		if code == 0 || !strings.Contains(errOut, fmt.Sprintf("line %d, the text has %d", past, lines)) {
			t.Fatalf("hover past the end: %d %q", code, errOut)
		}
	})

	t.Run("standard library names are left alone quietly", func(t *testing.T) {
		src := filepath.Join(ws, "stdlib.py")
		if err := os.WriteFile(src, []byte("import os\nimport torch\nos.path.join\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := cli(t, "hover", "--python", debianPython, src+":3:5")
		if code != 1 || out != "" || !strings.Contains(errOut, "nothing to say") || strings.Contains(errOut, "failed") || strings.Contains(errOut, "ValueError") {
			t.Fatalf("hover on os.path: %d out %q err %q", code, out, errOut)
		}
	})

	t.Run("hover on a flag waits for its value on the target", func(t *testing.T) {
		code, out, errOut := cli(t, "hover", "--quiet", "--python", debianPython, train+":29:30")
		if code != 0 || !strings.Contains(out, "config flag") || !strings.Contains(out, "On target **") || strings.Contains(out, "being read") {
			t.Fatalf("hover on a flag: %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("repro never runs a call below the line", func(t *testing.T) {
		code, out, errOut := cli(t, "repro", "--quiet", "--python", debianPython, train+":1")
		if code == 0 || out != "" || !strings.Contains(errOut, "no torch.compile call at or before line 1") {
			t.Fatalf("repro at line 1: %d out %q err %q", code, out, errOut)
		}
	})
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A command that starts a mirror lets it finish before it exits: its
// progress ends in what was done, never "cancelled", and the next command
// answers from the cache without mirroring again.
func TestCommandFinishesTheMirrorItStarted(t *testing.T) {
	ws := setup(t)
	train := filepath.Join(ws, "train.py")
	at := train + ":" + lineColOf(t, train, "torch.compile(", len("torch."))
	code, out, errOut := cli(t, "hover", "--python", debianPython, at)
	if code != 0 || !strings.Contains(out, "compile") {
		t.Fatalf("hover: %d\n%s\n%s", code, out, errOut)
	}
	// The mirror is complete once its manifest is written (a quick one
	// prints no progress at all); nothing it printed says cancelled.
	manifests, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "torchlsp", "*", "*", "torch-*", "manifest.json"))
	if len(manifests) != 1 || strings.Contains(errOut, "cancelled") {
		t.Errorf("after the first command: %d complete mirrors (want 1), and it printed:\n%s", len(manifests), errOut)
	}
	code, _, errOut = cli(t, "hover", "--python", debianPython, at)
	if code != 0 || strings.Contains(errOut, "mirroring") {
		t.Errorf("the second command mirrored again: %d\n%s", code, errOut)
	}
}

// lineColOf is "LINE:COL" (1-based) of off bytes into the first needle in
// a file.
func lineColOf(t *testing.T, path, needle string, off int) string {
	t.Helper()
	text := mustRead(t, path)
	i := strings.Index(text, needle)
	if i < 0 {
		t.Fatalf("%s has no %q", path, needle)
	}
	line := strings.Count(text[:i], "\n") + 1
	col := i - strings.LastIndex(text[:i], "\n")
	return strconv.Itoa(line) + ":" + strconv.Itoa(col+off)
}
