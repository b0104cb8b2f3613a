package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunRootNeedsTrustedFileOfTheUser: a torchlsp.toml planted in a
// shared parent (empty, untrusted; or trusted but another user's) makes
// no workspace root for a run: only the file and what it imports travel,
// the run's files go under the cache, nothing is written into the
// parent, and stderr says why. A trusted torchlsp.toml of the user's
// still makes the root. (Any file of that name made a root: every Python
// file under the parent travelled, and the run was written into its
// .torchlsp.)
func TestRunRootNeedsTrustedFileOfTheUser(t *testing.T) {
	_, cache := cliHome(t)
	src := strings.Replace(namedStep, "NAME", "body.py", 1)
	layout := func(t *testing.T) (shared, step string) {
		t.Helper()
		shared = t.TempDir()
		step = filepath.Join(shared, "me", "proj", "step.py")
		for p, text := range map[string]string{
			step: src,
			filepath.Join(shared, "other", "secret.py"): "SECRET_KEY = 'hunter2'\n",
		} {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return shared, step
	}
	explain := func(t *testing.T, step string) string {
		t.Helper()
		code, out, errOut := cliBounded(t, 4*time.Minute, "explain", "--verbose", "--timeout", "3m", "--python", debianPython, step+":17")
		if code != 0 {
			t.Fatalf("explain: %d\n%s\n%s", code, out, errOut)
		}
		return errOut
	}
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, toml string)
		why   string
	}{
		{"an empty file", func(t *testing.T, toml string) {
			if err := os.WriteFile(toml, nil, 0o666); err != nil {
				t.Fatal(err)
			}
		}, "torchlsp.toml is not trusted, so "},
		{"a trusted file of another user's", func(t *testing.T, toml string) {
			if os.Geteuid() != 0 {
				t.Skip("making a file of another user's needs root")
			}
			if err := os.WriteFile(toml, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if code, out, errOut := cli(t, "trust", filepath.Dir(toml)); code != 0 {
				t.Fatalf("trust: %d %s %s", code, out, errOut)
			}
			if err := os.Chown(toml, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "torchlsp.toml belongs to another user (uid 65534), not to you, so "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shared, step := layout(t)
			tt.plant(t, filepath.Join(shared, "torchlsp.toml"))
			errOut := explain(t, step)
			for _, want := range []string{
				tt.why + shared + " is not a workspace root: a run sends only step.py and the modules it imports",
				"1 workspace file(s) sent",
				"torchlsp: files of the run are in " + filepath.Join(cache, "repros"),
			} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if _, err := os.Lstat(filepath.Join(shared, ".torchlsp")); !os.IsNotExist(err) {
				t.Errorf("%s/.torchlsp was written (%v)", shared, err)
			}
		})
	}

	t.Run("a trusted file of the user's", func(t *testing.T) {
		shared, step := layout(t)
		if err := os.WriteFile(filepath.Join(shared, "torchlsp.toml"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := cli(t, "trust", shared); code != 0 {
			t.Fatalf("trust: %d %s %s", code, out, errOut)
		}
		errOut := explain(t, step)
		if !strings.Contains(errOut, "2 workspace file(s) sent") || !strings.Contains(errOut, "torchlsp: files of the run are in "+filepath.Join(shared, ".torchlsp", "repros")) {
			t.Errorf("want the root's files sent and the run kept in its .torchlsp:\n%s", errOut)
		}
	})
}

// TestTracebackWorkspaceNeedsTrustedFile: the traceback command maps a
// path into the workspace of the current directory by the same rule: a
// torchlsp.toml planted in a shared parent does not make that parent the
// workspace, so its other files' lines are not shown. (They were.)
func TestTracebackWorkspaceNeedsTrustedFile(t *testing.T) {
	_, _ = cliHome(t)
	shared := t.TempDir()
	proj := filepath.Join(shared, "me", "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, text := range map[string]string{
		filepath.Join(shared, "torchlsp.toml"):      "",
		filepath.Join(shared, "other", "secret.py"): "SECRET_KEY = 'hunter2'\n",
		filepath.Join(proj, "train.py"):             "import torch\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(proj)
	text := "Traceback (most recent call last):\n" +
		"  File \"" + filepath.Join(shared, "other", "secret.py") + "\", line 1, in <module>\n" +
		"  File \"" + filepath.Join(proj, "train.py") + "\", line 1, in <module>\n" +
		"RuntimeError: boom\n"
	trace := filepath.Join(t.TempDir(), "trace.txt")
	if err := os.WriteFile(trace, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cliBounded(t, 4*time.Minute, "traceback", "--timeout", "3m", "--python", debianPython, trace)
	if code != 0 || !strings.Contains(out, filepath.Join(proj, "train.py")+":1: <module>: import torch\n") {
		t.Errorf("want the project's own file mapped: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "hunter2") {
		t.Errorf("a file of the shared parent was shown:\n%s", out)
	}
	if !strings.Contains(errOut, filepath.Join(shared, "torchlsp.toml")+" is not trusted, so "+shared+" is not a workspace root") {
		t.Errorf("stderr does not say why the parent is no workspace:\n%s", errOut)
	}
}
