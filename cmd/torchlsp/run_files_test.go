package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// namedStep compiles, at run time, source under a file name the workspace
// decides; the run's findings then name that file.
const namedStep = `"""Source compiled under a name the workspace decides."""
import torch

NS = {}
exec(compile("def body(x):\n    print('body')\n    return x + 1\n", "NAME", "exec"), NS)


def make_x(seed):
    return (torch.ones(2),)


def step(x):
    return NS["body"](x)

# torchlsp: inputs=make_x
compiled = torch.compile(step)
`

// cliBounded runs the command line and fails the test if it does not end.
func cliBounded(t *testing.T, within time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := cli(t, args...)
		done <- result{code, out, errOut}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.errOut
	case <-time.After(within):
		t.Fatalf("torchlsp %s still running after %v", strings.Join(args, " "), within)
	}
	return 0, "", ""
}

// cliHome gives the command line a home directory and XDG directories of
// the test's own.
func cliHome(t *testing.T) (home, cache string) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is missing: run scripts/setup.sh --test", debianPython)
	}
	tmp := t.TempDir()
	home = filepath.Join(tmp, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
	return home, filepath.Join(tmp, "cache", "torchlsp")
}

// TestExplainCommandHostileNames: explain on code that names a link to
// /dev/zero or a named pipe as its source ends, with the finding on that
// file's line, instead of reading the device or the pipe. (The process
// ran out of memory, or hung past --timeout.)
func TestExplainCommandHostileNames(t *testing.T) {
	_, _ = cliHome(t)
	for _, tt := range []struct {
		name, file string
		plant      func(path string) error
	}{
		{"link to /dev/zero", "zero.py", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"named pipe", "pipe.py", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			src := strings.Replace(namedStep, "NAME", tt.file, 1)
			step := filepath.Join(ws, "step.py")
			if err := os.WriteFile(step, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := tt.plant(filepath.Join(ws, tt.file)); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := cliBounded(t, 4*time.Minute, "explain", "--quiet", "--timeout", "3m", "--python", debianPython, step+":17")
			if code != 0 {
				t.Fatalf("explain: %d\n%s\n%s", code, out, errOut)
			}
			if want := filepath.Join(ws, tt.file) + ":2:1: Graph break: stand-in: print()"; !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		})
	}
}

// TestOwnRunFromHome: `repro --own` and `explain` on a file in the home
// directory, with no torchlsp.toml above it, refuse until --allow-home,
// and then send the file and what it imports alone; nothing is written
// into the home directory. (The whole home directory travelled, another
// project's settings.py with it, and ~/.torchlsp was created.)
func TestOwnRunFromHome(t *testing.T) {
	home, cache := cliHome(t)
	src := strings.Replace(namedStep, "NAME", "body.py", 1)
	step := filepath.Join(home, "step.py")
	for p, text := range map[string]string{
		step: src,
		filepath.Join(home, "projects", "other_client", "src", "settings.py"): "SECRET_KEY = 'hunter2'\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range []string{"repro", "explain"} {
		args := []string{cmd, "--quiet", "--timeout", "3m", "--python", debianPython, step + ":17"}
		if cmd == "repro" {
			args = append([]string{cmd, "--own"}, args[1:]...)
		}
		code, out, errOut := cliBounded(t, 4*time.Minute, args...)
		if code == 0 || !strings.Contains(errOut, home+" is your home directory") || !strings.Contains(errOut, "pass --allow-home") {
			t.Errorf("%s from the home directory: %d\n%s\n%s", cmd, code, out, errOut)
		}
	}
	code, out, errOut := cliBounded(t, 4*time.Minute, "explain", "--allow-home", "--verbose", "--timeout", "3m", "--python", debianPython, step+":17")
	if code != 0 {
		t.Fatalf("explain --allow-home: %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "1 workspace file(s) sent") {
		t.Errorf("want the file alone sent:\n%s", errOut)
	}
	if !strings.Contains(errOut, "torchlsp: files of the run are in "+filepath.Join(cache, "repros")) {
		t.Errorf("want the run's files under the cache:\n%s", errOut)
	}
	if _, err := os.Lstat(filepath.Join(home, ".torchlsp")); !os.IsNotExist(err) {
		t.Errorf("~/.torchlsp was created (%v)", err)
	}
}

// TestCheckSkipsPipesAndDevices: `check DIR` checks the regular Python
// files of a tree and passes over a named pipe or a link to /dev/zero
// there; named on the command line, such a file is an error that says
// what it is. (The read blocked on the pipe, or ran out of memory.)
func TestCheckSkipsPipesAndDevices(t *testing.T) {
	_, _ = cliHome(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "ok.py"), []byte("import torch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe.py"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(ws, "zero.py")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := cliBounded(t, 4*time.Minute, "check", "--python", debianPython, ws); code != 0 {
		t.Errorf("check %s: %d\n%s\n%s", ws, code, out, errOut)
	}
	for _, f := range []string{"pipe.py", "zero.py"} {
		code, _, errOut := cliBounded(t, 4*time.Minute, "check", "--python", debianPython, filepath.Join(ws, f))
		if code == 0 || !strings.Contains(errOut, "not a regular file") {
			t.Errorf("check %s: %d %q", f, code, errOut)
		}
	}
}
