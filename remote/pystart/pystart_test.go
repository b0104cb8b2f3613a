package pystart_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/remote/hostiletest"
	"github.com/torchlsp/torchlsp/remote/pystart"
)

// interpreters are the Pythons found here: the system one and pyenv's,
// 3.8 (older than the 3.9 the helper promises) and later where pyenv has them.
func interpreters(t *testing.T) []string {
	var out []string
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		out = append(out, "/usr/bin/python3")
	}
	home, _ := os.UserHomeDir()
	for _, v := range []string{"3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0"} {
		p := filepath.Join(home, ".pyenv", "versions", v, "bin", "python3")
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Skip("no Python interpreter")
	}
	return out
}

// TestArgvIgnoresStartDirectory starts each interpreter in a directory
// whose modules shadow the standard library, with a hostile user site:
// nothing of the directory is imported, the program runs in "/", the
// PYTHONPATH entry stays first, the user site is read only when asked
// for, and what the program starts does not inherit PYTHONSAFEPATH.
func TestArgvIgnoresStartDirectory(t *testing.T) {
	t.Parallel()
	pythons := interpreters(t)
	tmp := t.TempDir()
	start := filepath.Join(tmp, "start")
	extra := filepath.Join(tmp, "extra")
	for _, d := range []string{start, extra} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(extra, "configured.py"), []byte("VALUE = 'configured'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const code = `import json, inspect, threading, re, enum, tempfile, subprocess, configured
print(json.dumps([os.getcwd(), sys.path[0], configured.VALUE, sys.flags.no_user_site, os.environ.get("PYTHONSAFEPATH")]))`
	for _, python := range pythons {
		for _, userSite := range []bool{false, true} {
			name := python
			if userSite {
				name += " with user site"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				marker := filepath.Join(dir, "imported")
				ws := filepath.Join(dir, "ws")
				if err := os.Mkdir(ws, 0o755); err != nil {
					t.Fatal(err)
				}
				hostiletest.ShadowingWorkspace(t, ws, pythons[0], marker)
				userBase := hostiletest.HostileUserBase(t, filepath.Join(dir, "userbase"), python, marker)

				argv := pystart.Argv(python, userSite, code)
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir = ws
				cmd.Env = os.Environ()
				for k, v := range pystart.Env(map[string]string{"PYTHONPATH": extra, "PYTHONUSERBASE": userBase}) {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				wantFlag := "1"
				if userSite {
					wantFlag = "0"
				}
				want := `["/", "` + extra + `", "configured", ` + wantFlag + `, null]`
				if got := strings.TrimSpace(string(out)); got != want {
					t.Errorf("got %s, want %s", got, want)
				}
				imported := strings.Join(hostiletest.Imported(t, marker), " ")
				wantImported := ""
				if userSite {
					wantImported = "pth usercustomize"
				}
				if imported != wantImported {
					t.Errorf("imported %q, want %q", imported, wantImported)
				}
			})
		}
	}
}
