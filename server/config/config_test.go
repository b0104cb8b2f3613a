package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

func TestParseTOML(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    File
		wantErr string
	}{
		{
			name: "full target",
			src: `default = "gpu"
[targets.gpu]
python = "/root/venv/bin/python3"
env = { CUDA_VISIBLE_DEVICES = "0" }
packages = ["torch", "triton"]
ssh = "root@gpu-host"
jump = ["bastion"]
exec = ["pct", "exec", "200", "--"]
`,
			want: File{Default: "gpu", Targets: map[string]TargetConfig{"gpu": {
				Python: "/root/venv/bin/python3", Env: map[string]string{"CUDA_VISIBLE_DEVICES": "0"},
				Packages: []string{"torch", "triton"}, SSH: "root@gpu-host", Jump: []string{"bastion"},
				Exec: []string{"pct", "exec", "200", "--"},
			}}},
		},
		{name: "empty", src: "", want: File{}},
		{name: "unknown key", src: "[targets.a]\npyhton = \"x\"\n", wantErr: "unknown keys: targets.a.pyhton"},
		{name: "bad syntax", src: "default = \n", wantErr: "torchlsp.toml"},
		{name: "bad target name", src: "[targets.\"a b\"]\n", wantErr: "target name \"a b\""},
		{name: "bad env name", src: "[targets.a]\nenv = { \"A-B\" = \"1\" }\n", wantErr: "not a valid environment variable name"},
		{name: "bad package", src: "[targets.a]\npackages = [\"torch;rm\"]\n", wantErr: "not a valid package name"},
		{name: "wrong type", src: "[targets.a]\nexec = \"pct exec 200\"\n", wantErr: "torchlsp.toml"},
		{
			name: "site",
			src:  "[site]\npackages = [\"einops\", \"-sympy\"]\nhover = \"full\"\n",
			want: File{Site: SiteConfig{Packages: []string{"einops", "-sympy"}, Hover: "full"}},
		},
		{name: "site package with a path", src: "[site]\npackages = [\"../x\"]\n", wantErr: "site.packages"},
		{name: "site package dotted", src: "[site]\npackages = [\"a.b\"]\n", wantErr: "not a top-level package name"},
		{name: "site hover", src: "[site]\nhover = \"loud\"\n", wantErr: "site.hover"},
		{name: "site unknown key", src: "[site]\npackage = [\"x\"]\n", wantErr: "unknown keys: site.package"},
		{
			name: "workdir",
			src:  "[targets.gpu]\nssh = \"gpu\"\nworkdir = \"/root/proj/\"\n",
			want: File{Targets: map[string]TargetConfig{"gpu": {SSH: "gpu", Workdir: "/root/proj/"}}},
		},
		{name: "relative workdir", src: "[targets.gpu]\nworkdir = \"proj\"\n", wantErr: "targets.gpu.workdir: \"proj\" is not an absolute path"},
		{name: "root workdir", src: "[targets.gpu]\nworkdir = \"/..\"\n", wantErr: "is the target's root"},
		{name: "workdir with a newline", src: "[targets.gpu]\nworkdir = \"/a\\nb\"\n", wantErr: "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTOML([]byte(tt.src), "torchlsp.toml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseJSON(t *testing.T) {
	f, err := ParseJSON([]byte(`{"default":"b","targets":{"b":{"python":"/usr/bin/python3","packages":["torch"]}},"logLevel":"debug"}`), "settings")
	if err != nil {
		t.Fatal(err)
	}
	if f.Default != "b" || f.Targets["b"].Python != "/usr/bin/python3" {
		t.Errorf("got %+v", f)
	}
	f, err = ParseJSON([]byte(`{"defaultTarget":"c"}`), "settings")
	if err != nil || f.Default != "c" {
		t.Errorf("defaultTarget: got %+v, %v", f, err)
	}
	if f, err := ParseJSON([]byte(`null`), "settings"); err != nil || f.Default != "" {
		t.Errorf("null: got %+v, %v", f, err)
	}
	if _, err := ParseJSON([]byte(`{"targets":[1]}`), "settings"); err == nil {
		t.Error("wrong shape accepted")
	}
}

func TestMerge(t *testing.T) {
	user := Layer{Source: "user", File: File{Default: "gpu", Targets: map[string]TargetConfig{
		"gpu": {SSH: "root@gpu-host", Python: "/root/venv/bin/python3"},
	}}}
	ws := Layer{Source: "ws", File: File{Targets: map[string]TargetConfig{
		"gpu": {SSH: "root@other", Exec: []string{"pct", "exec", "200", "--"}},
	}}}
	editor := Layer{Source: "editor", File: File{Default: "local"}}

	r, err := Merge(user, ws)
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := r.Target("")
	if err != nil {
		t.Fatal(err)
	}
	if gpu.SSH != "root@other" || gpu.Python != "python3" || !reflect.DeepEqual(gpu.Packages, []string{"torch"}) {
		t.Errorf("workspace layer should replace the user's gpu target whole: %+v", gpu)
	}
	r, err = Merge(user, ws, editor)
	if err != nil || r.Default != "local" {
		t.Fatalf("editor default: %+v %v", r, err)
	}
	if _, err := Merge(Layer{Source: "x", File: File{Default: "nope"}}); err == nil || !strings.Contains(err.Error(), `"nope" is not defined`) {
		t.Errorf("undefined default: %v", err)
	}
	if got := r.Configured(); len(got) != 2 || got[0] != "gpu" || got[1] != "local" {
		t.Errorf("configured with local as default: %v", got)
	}
	if r, _ := Merge(user, ws); len(r.Configured()) != 1 || r.Configured()[0] != "gpu" {
		t.Errorf("the built-in local target counted as configured: %v", r.Configured())
	}
	// site.packages accumulate across layers, in order; the last hover wins.
	r, _ = Merge(Layer{Source: "user", File: File{Site: SiteConfig{Packages: []string{"einops"}, Hover: "full"}}},
		Layer{Source: "ws", File: File{Site: SiteConfig{Packages: []string{"-einops", "numpy"}}}})
	if !reflect.DeepEqual(r.SitePackages, []string{"einops", "-einops", "numpy"}) || r.SiteHover != "full" {
		t.Errorf("site settings merged: %v %q", r.SitePackages, r.SiteHover)
	}
	// A target's workdir comes with the layer that defines the target.
	withDir := Layer{Source: "ws", File: File{Targets: map[string]TargetConfig{"gpu": {SSH: "root@other", Workdir: "/root/proj/./"}}}}
	if r, _ := Merge(user, withDir); r.Workdirs["gpu"] != "/root/proj" {
		t.Errorf("workdir: %q", r.Workdirs["gpu"])
	}
	if r, _ := Merge(withDir, user); len(r.Workdirs) != 0 {
		t.Errorf("a later layer's gpu target without a workdir kept one: %v", r.Workdirs)
	}
	r, _ = Merge()
	local, _ := r.Target("")
	if local.Name != "local" || local.Python != "python3" || !local.IsLocal() {
		t.Errorf("built-in local: %+v", local)
	}
}

func TestTrust(t *testing.T) {
	state := t.TempDir()
	ws := t.TempDir()
	store := NewTrustStore(Dirs{State: state})
	path := filepath.Join(ws, WorkspaceFile)

	if _, st := LoadWorkspace(ws, store); st.State != Absent || st.Message() != "" {
		t.Fatalf("no file: %+v", st)
	}
	content := "default = \"w\"\n[targets.w]\npython = \"/usr/bin/python3\"\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	layer, st := LoadWorkspace(ws, store)
	if st.State != Untrusted || layer.File.Default != "" {
		t.Fatalf("untrusted file was used: %+v %+v", st, layer)
	}
	if msg := st.Message(); !strings.Contains(msg, "torchlsp trust "+ws) {
		t.Errorf("message does not name the command: %q", msg)
	}
	if _, err := store.Trust(path); err != nil {
		t.Fatal(err)
	}
	layer, st = LoadWorkspace(ws, store)
	if st.State != Trusted || layer.File.Default != "w" {
		t.Fatalf("trusted file not used: %+v %+v", st, layer)
	}
	info, err := os.Stat(filepath.Join(state, "trusted.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("trust records: %v %v", info, err)
	}
	if err := os.WriteFile(path, []byte(content+"[targets.x]\nssh = \"evil\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	layer, st = LoadWorkspace(ws, store)
	if st.State != Changed || layer.File.Default != "" || !strings.Contains(st.Message(), "changed") {
		t.Fatalf("changed file was used: %+v %+v", st, layer)
	}
	if err := store.Revoke(path); err != nil {
		t.Fatal(err)
	}
	if _, st = LoadWorkspace(ws, store); st.State != Untrusted {
		t.Fatalf("after revoke: %+v", st)
	}
	// A damaged record file grants nothing.
	if err := os.WriteFile(filepath.Join(state, "trusted.json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, st = LoadWorkspace(ws, store); st.State == Trusted || st.Err == nil {
		t.Fatalf("damaged records: %+v", st)
	}
	// Trusting a file that does not parse is refused.
	if err := os.WriteFile(path, []byte("[targets.a]\nbogus = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Trust(path); err == nil {
		t.Error("trusted an invalid file")
	}
}

func FuzzParseTOML(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	f.Add([]byte("default = \"gpu\"\n[targets.gpu]\nssh = \"root@h\"\nexec = [\"pct\",\"exec\",\"200\",\"--\"]\n"))
	f.Add([]byte("[targets.a]\nenv = { A = \"1\" }\n"))
	f.Add([]byte("[[targets]]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		deadline.Start(t, data)
		file, err := ParseTOML(data, "fuzz.toml")
		if err != nil {
			return
		}
		if _, err := Merge(Layer{Source: "fuzz", File: file}); err != nil && file.Default == "" {
			t.Fatalf("merge of a valid file without default failed: %v", err)
		}
	})
}
