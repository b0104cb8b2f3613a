package hops

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/server"
)

// buildBinary builds torchlsp for the tests that run it as users do
// (TORCHLSP_BIN names a prebuilt one).
func buildBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("TORCHLSP_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "torchlsp")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/torchlsp/torchlsp/cmd/torchlsp").CombinedOutput(); err != nil {
		t.Fatalf("build torchlsp: %v\n%s", err, out)
	}
	return bin
}

// startEditor runs the server in process behind the real wire, its
// targets reached through the topology, in a sandbox whose workspace
// holds the training script.
func (tp *topology) startEditor(t testing.TB, settings json.RawMessage, client lsptest.Options) *lsptest.Env {
	t.Helper()
	return lsptest.Start(t, lsptest.Config{
		Server:   lsptest.InProcess{Engine: server.Options{Opener: sshtarget.Opener{Options: tp.options(t)}}},
		CopyFrom: filepath.Join(tp.repo, "test", "hops", "testdata", "workspace"),
		Settings: settings,
		Client:   client,
		Timeout:  2 * time.Minute,
	})
}

// runCLI runs the binary in dir with env and returns its output and exit
// status.
func runCLI(t testing.TB, bin, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("torchlsp %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// uriPath returns the local path of a file URI.
func uriPath(t testing.TB, uri string) string {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		t.Fatalf("not a file URI: %q (%v)", uri, err)
	}
	return u.Path
}

// lineOf returns a file's 0-based line.
func lineOf(t testing.TB, path string, line int) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if line < 0 || line >= len(lines) {
		t.Fatalf("%s has no line %d", path, line)
	}
	return lines[line]
}

// TestChains drives every chain end to end, through the relay, the
// bastion and the GPU host to its exec hop and the interpreter behind it:
// hover and definition from the editor (the target's torch mirrored over
// the chain and indexed), and the real binary's `check` and `doctor` as a
// user runs them, with ~/.ssh/config's ProxyJump. Nothing may be left
// running on the hosts afterwards.
func TestChains(t *testing.T) {
	t.Parallel()
	tp := newTopology(t, all)
	bin := buildBinary(t)
	t.Run("chain", func(t *testing.T) {
		for _, c := range chains {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				t.Run("editor", func(t *testing.T) { tp.checkEditor(t, c) })
				t.Run("check", func(t *testing.T) { tp.checkCheck(t, c, bin) })
				t.Run("doctor", func(t *testing.T) { tp.checkDoctor(t, c, bin) })
			})
		}
	})
	tp.requireNothingLeft(t)
}

// checkEditor asks for definitions and hovers of torch names in the
// training script: each definition is the mirror's copy of the target's
// file, at the line that defines the name, and each hover names the
// file on the target and the target's torch.
func (tp *topology) checkEditor(t *testing.T, c chain) {
	env := tp.startEditor(t, tp.settings(c, nil), lsptest.Options{})
	uri := env.OpenFile("train.py")
	for _, q := range []struct {
		needle string
		off    int
		file   string // under torch/
		line   string // the definition's line starts with this, once trimmed
	}{
		{"nn.Linear(4, 4)", 3, "nn/modules/linear.py", "class Linear"},
		{"F.relu(", 2, "nn/functional.py", "def relu"},
		{"checkpoint(self.proj", 0, "utils/checkpoint.py", "def checkpoint"},
		{"is_available()", 0, "cuda/__init__.py", "def is_available"},
	} {
		pos := env.At(uri, q.needle, q.off)
		locs := env.Definition(uri, pos)
		if len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "/site/torch/"+q.file) {
			t.Errorf("definition of %q = %+v, want the mirror's torch/%s", q.needle, locs, q.file)
			continue
		}
		p := uriPath(t, locs[0].URI)
		if !strings.HasPrefix(p, env.Sandbox.Cache) {
			t.Errorf("definition of %q: %s is outside the mirror cache", q.needle, p)
		}
		if got := strings.TrimSpace(lineOf(t, p, int(locs[0].Range.Start.Line))); !strings.HasPrefix(got, q.line) {
			t.Errorf("definition of %q at line %d: %q, want %q", q.needle, locs[0].Range.Start.Line, got, q.line)
		}
		h := env.Hover(uri, pos)
		if h == nil {
			t.Errorf("no hover on %q", q.needle)
			continue
		}
		for _, want := range []string{c.torchDir + "/" + q.file + ":", "torch " + c.torchVersion, "gpu"} {
			if !strings.Contains(h.Contents.Value, want) {
				t.Errorf("hover on %q lacks %q:\n%s", q.needle, want, h.Contents.Value)
			}
		}
	}
	env.Shutdown()
}

// checkCheck runs `torchlsp check` on the script: neither torch has
// torch.compile, which the target's own source decides, so the compile
// call gets TL005, and check exits 1.
func (tp *topology) checkCheck(t *testing.T, c chain, bin string) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(tp.repo, "test", "hops", "testdata", "workspace", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "train.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, bin, dir, tp.cliEnv(t, c), "check", "--format", "json", "train.py")
	if code != 1 {
		t.Errorf("check exited %d, want 1 (a finding)\n%s", code, out)
	}
	var findings []struct {
		File, Code, Message string
		Line                int
	}
	i := strings.IndexByte(out, '[')
	if i < 0 {
		t.Fatalf("check printed no JSON:\n%s", out)
	}
	if err := json.Unmarshal([]byte(out[i:]), &findings); err != nil {
		t.Fatalf("check's JSON: %v\n%s", err, out)
	}
	found := false
	for _, f := range findings {
		found = found || (strings.HasPrefix(f.Code, "TL005") && f.Line == 20 && strings.HasSuffix(f.File, "train.py"))
	}
	if !found {
		t.Errorf("no TL005 at train.py:20 among %+v", findings)
	}
}

// checkDoctor runs `torchlsp doctor --import`: every hop of the chain, the
// interpreter, torch and its import all ok, exit status 0.
func (tp *topology) checkDoctor(t *testing.T, c chain, bin string) {
	out, code := runCLI(t, bin, t.TempDir(), tp.cliEnv(t, c), "doctor", "--target", "gpu", "--import")
	t.Logf("doctor through %s:\n%s", c.name, out)
	if code != 0 {
		t.Errorf("doctor exited %d, want 0", code)
	}
	latency := `\[[0-9.]+(µs|ms|s)\]`
	exec := ""
	if c.exec != nil {
		exec = `, exec ` + regexp.QuoteMeta(strings.Join(c.exec, " "))
	}
	for _, re := range []string{
		`(?m)^ok +config +target gpu \(ssh gpu-host` + exec + `, python ` + regexp.QuoteMeta(c.python) + `\)`,
		`(?m)^ok +hop ssh jump bastion +root@` + regexp.QuoteMeta(tp.relay.Addr) + ` ` + latency + `$`,
		`(?m)^ok +hop ssh gpu-host +root@` + regexp.QuoteMeta(tp.gpu.addr) + ` ` + latency + `$`,
		`(?m)^ok +interpreter +Python ` + regexp.QuoteMeta(c.pyVersion) + `\.\d+ at ` + regexp.QuoteMeta(c.python) + ` \(pid \d+\) ` + latency + `$`,
		`(?m)^ok +helper round trip +median of 5`,
		`(?m)^ok +package torch +torch ` + regexp.QuoteMeta(c.torchVersion) + `\S* at ` + regexp.QuoteMeta(c.torchDir) + ` \(\d+ files`,
		`(?m)^ok +import torch +[0-9.]+ s in the interpreter`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("doctor output does not match %s", re)
		}
	}
}
