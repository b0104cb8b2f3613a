package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Relative paths in a torchlsp.toml or config.toml name files next to
// that file, whatever directory torchlsp runs in: trust pins the text, so
// the text must pin what runs. Targets reached through ssh or an exec hop
// keep their paths, which name files over there.
func TestRelativePathsResolveAgainstTheFile(t *testing.T) {
	t.Parallel()
	const toml = `default = "venv"
[targets.venv]
python = "venv/bin/python3"
env = { PYTHONPATH = "src:/opt/site:../shared" }
user_site = true
[targets.bare]
python = "python3"
[targets.remote]
ssh = "gpu-host"
python = "venv/bin/python3"
[targets.container]
exec = ["docker", "exec", "-i", "trainer"]
python = "./bin/python"
`
	want := func(dir string) map[string][2]string {
		return map[string][2]string{
			"venv":      {filepath.Join(dir, "venv/bin/python3"), filepath.Join(dir, "src") + ":/opt/site:" + filepath.Join(filepath.Dir(dir), "shared")},
			"bare":      {"python3", ""},
			"remote":    {"venv/bin/python3", ""},
			"container": {"./bin/python", ""},
		}
	}
	check := func(t *testing.T, f File, dir string) {
		t.Helper()
		for name, w := range want(dir) {
			got := f.Targets[name]
			if got.Python != w[0] || got.Env["PYTHONPATH"] != w[1] {
				t.Errorf("%s: python %q, PYTHONPATH %q; want %q, %q", name, got.Python, got.Env["PYTHONPATH"], w[0], w[1])
			}
		}
		if !f.Targets["venv"].UserSite {
			t.Error("user_site = true was lost")
		}
	}

	t.Run("workspace", func(t *testing.T) {
		t.Parallel()
		ws := filepath.Join(t.TempDir(), "project")
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, WorkspaceFile), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		store := NewTrustStore(Dirs{State: t.TempDir()})
		if _, err := store.Trust(filepath.Join(ws, WorkspaceFile)); err != nil {
			t.Fatal(err)
		}
		layer, st := LoadWorkspace(ws, store)
		if st.State != Trusted || st.Err != nil {
			t.Fatalf("workspace file: %+v", st)
		}
		check(t, layer.File, ws)
		r, err := Merge(layer)
		if err != nil {
			t.Fatal(err)
		}
		if spec, _ := r.Target("venv"); spec.Python != filepath.Join(ws, "venv/bin/python3") || !spec.UserSite {
			t.Errorf("merged spec %+v", spec)
		}
	})
	t.Run("user config", func(t *testing.T) {
		t.Parallel()
		d := Dirs{Config: t.TempDir()}
		if err := os.WriteFile(d.UserFile(), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		layer, err := LoadUser(d)
		if err != nil {
			t.Fatal(err)
		}
		check(t, layer.File, d.Config)
	})
}

// PYTHONPATH entries that would name the directory the interpreter
// starts in are refused, with the reason.
func TestPythonPathEntries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, target string
		json         bool
		want         string // error substring; empty for none
	}{
		{"absolute", `python = "/usr/bin/python3"` + "\nenv = { PYTHONPATH = \"/a:/b\" }", false, ""},
		{"relative, local, file", `env = { PYTHONPATH = "src" }`, false, ""},
		{"empty entry", `env = { PYTHONPATH = "/a:" }`, false, "empty entry"},
		{"only empty", `env = { PYTHONPATH = "" }`, false, "empty entry"},
		{"relative over ssh", "ssh = \"h\"\nenv = { PYTHONPATH = \"src\" }", false, "is relative"},
		{"relative through a hop", "exec = [\"docker\", \"exec\", \"-i\", \"c\"]\nenv = { PYTHONPATH = \"/a:src\" }", false, "is relative"},
		{"relative in editor settings", `{"targets":{"t":{"env":{"PYTHONPATH":"src"}}}}`, true, "no directory to be relative to"},
		{"absolute in editor settings", `{"targets":{"t":{"env":{"PYTHONPATH":"/src"},"userSite":true}}}`, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tt.json {
				_, err = ParseJSON([]byte(tt.target), "settings")
			} else {
				_, err = ParseTOML([]byte("[targets.t]\n"+tt.target+"\n"), "torchlsp.toml")
			}
			if tt.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "targets.t.env") {
				t.Errorf("err = %v, want one about targets.t.env saying %q", err, tt.want)
			}
		})
	}
}
