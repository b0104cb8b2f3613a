package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/remote/sshtest"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// sshRig is a user's GPU set-up rebuilt from real OpenSSH servers on
// loopback: the editor's machine → a jump host (behind a proxy that can
// cut or freeze the link) → the GPU host → `pct exec 200 --` → python.
type sshRig struct {
	t          testing.TB
	keys       *sshtest.Keys
	jump, host *sshtest.Server
	proxy      *sshtest.Proxy // in front of the jump host: cutting it cuts the whole chain
	shim       string         // the pct shim
	home       string         // an empty home: nothing of the real ~/.ssh is read
	knownHosts string         // both hosts, the jump host under the proxy's address
}

func newSSHRig(t testing.TB) *sshRig {
	t.Helper()
	needPython(t)
	sshtest.RequireOpenSSH(t)
	keys := sshtest.NewKeys(t)
	r := &sshRig{t: t, keys: keys, shim: sshtest.PctShim(t), home: t.TempDir()}
	r.host = sshtest.Start(t, sshtest.Config{Keys: keys})
	r.jump = sshtest.Start(t, sshtest.Config{Keys: keys})
	r.proxy = sshtest.NewProxy(t, r.jump.Addr)
	r.knownHosts = sshtest.WriteFile(t, "known_hosts", r.host.KnownHosts(t, "")+r.jump.KnownHosts(t, r.proxy.Addr))
	return r
}

// jumpDest is the jump host as the settings name it.
func (r *sshRig) jumpDest() string { return r.jump.User + "@" + r.proxy.Addr }

// options reads no real user file: its own ssh_config, known_hosts and no
// agent. Keepalives are short so that a frozen link is noticed quickly.
func (r *sshRig) options(identity string) sshtarget.Options {
	return sshtarget.Options{
		ConfigFile:        sshtest.WriteFile(r.t, "ssh_config", "Host *\n  IdentityFile "+identity+"\n"),
		KnownHostsFiles:   []string{r.knownHosts},
		AgentSocket:       "none",
		Home:              r.home,
		KeepaliveInterval: 2 * time.Second,
		KeepaliveTimeout:  5 * time.Second,
	}
}

// settings targets python on the GPU host through every kind of hop.
func (r *sshRig) settings(env map[string]string) json.RawMessage {
	gpu := map[string]any{
		"ssh":    r.host.User + "@" + r.host.Addr,
		"jump":   []string{r.jumpDest()},
		"exec":   []string{r.shim, "exec", "200", "--"},
		"python": debianPython,
	}
	if env != nil {
		gpu["env"] = env
	}
	return mustJSON(r.t, map[string]any{"defaultTarget": "gpu", "targets": map[string]any{"gpu": gpu}})
}

// start runs a server whose targets are reached through opts, for test t
// (the rig's or one of its subtests).
func (r *sshRig) start(t testing.TB, settings json.RawMessage, opts sshtarget.Options) *lsptest.Env {
	t.Helper()
	return start(t, options{settings: settings, opener: sshtarget.Opener{Options: opts}})
}

// localSettings targets the same interpreter on this machine, under the
// same target name, so that answers compare verbatim.
func localSettings(t testing.TB, env map[string]string) json.RawMessage {
	gpu := map[string]any{"python": debianPython}
	if env != nil {
		gpu["env"] = env
	}
	return mustJSON(t, map[string]any{"defaultTarget": "gpu", "targets": map[string]any{"gpu": gpu}})
}

// query is a place in train.py to ask about.
type query struct {
	needle string
	off    int
}

// mirrorLink matches the mirror's file URL in a hover; it differs between
// two caches, the rest must not.
var mirrorLink = regexp.MustCompile(`file://[^)]*/site/`)

// answer is what one query got, with cache paths removed.
type answer struct {
	Hover string
	Defs  []string // path under the mirror's site dir:line:col
}

func answers(t *testing.T, env *lsptest.Env, qs []query) []answer {
	t.Helper()
	uri := env.OpenFile("train.py")
	var out []answer
	for _, q := range qs {
		pos := env.At(uri, q.needle, q.off)
		locs, err := env.Editor.Definition(env.CtxFor(2*time.Minute), uri, pos.Line, pos.Character)
		if err != nil {
			t.Fatalf("definition of %q: %v", q.needle, err)
		}
		h, err := env.Editor.Hover(env.CtxFor(time.Minute), uri, pos.Line, pos.Character)
		if err != nil {
			t.Fatalf("hover of %q: %v", q.needle, err)
		}
		if h != nil && strings.Contains(h.Contents.Value, "being read") {
			// A flag's value is read on the target in the background (the
			// hover never waits for it): wait for the read, then ask again.
			env.AwaitProgressEnd("torchlsp: importing torch on gpu")
			if h, err = env.Editor.Hover(env.CtxFor(time.Minute), uri, pos.Line, pos.Character); err != nil {
				t.Fatalf("hover of %q: %v", q.needle, err)
			}
		}
		var a answer
		if h != nil {
			a.Hover = mirrorLink.ReplaceAllString(h.Contents.Value, "file://MIRROR/site/")
		}
		for _, l := range locs {
			p := uriPath(t, l.URI)
			if !strings.HasPrefix(p, env.Sandbox.Cache) {
				t.Errorf("definition of %q: %s is outside the mirror cache %s", q.needle, p, env.Sandbox.Cache)
			}
			_, rel, _ := strings.Cut(p, "/site/")
			a.Defs = append(a.Defs, fmt.Sprintf("%s:%d:%d", rel, l.Range.Start.Line, l.Range.Start.Character))
		}
		out = append(out, a)
	}
	return out
}

// TestSSHSameAnswersAsLocal: hover and definition through ssh → jump →
// pct exec → python answer exactly what the same interpreter answers as a
// local target, for Debian's torch and for the fixture torch (config
// flags, torch.compile, names only the target's interpreter can resolve).
// The SSH session also shows the work-done progress a user waits on.
func TestSSHSameAnswersAsLocal(t *testing.T) {
	t.Parallel()
	r := newSSHRig(t)
	site := filepath.Join(repoRoot(t), "testdata", "site")
	for _, tt := range []struct {
		name    string
		env     map[string]string
		queries []query
		want    []string // definition files, one per query ("" for none)
	}{
		{"debian torch 1.13", nil,
			[]query{{"nn.Linear(4, 4)", 3}, {"F.relu(y)", 2}, {"checkpoint(self.proj", 0}, {"AdamW(model", 0}, {"torch.compile(model", 6}},
			[]string{"torch/nn/modules/linear.py", "torch/nn/functional.py", "torch/utils/checkpoint.py", "torch/optim/adamw.py", ""}},
		{"fixture torch", map[string]string{"PYTHONPATH": site},
			[]query{{"torch.compile(model", 6}, {"triton.cudagraph_trees = False", 7}, {"torch.add(", 6}, {"nn.Linear(4, 4)", 3}},
			[]string{"torch/__init__.py", "torch/_inductor/config.py", "torch/_C/__init__.pyi", "torch/nn/modules/linear.py"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			local := start(t, options{settings: localSettings(t, tt.env)})
			want := answers(t, local, tt.queries)
			local.Shutdown()

			env := r.start(t, r.settings(tt.env), r.options(r.keys.Client))
			got := answers(t, env, tt.queries)
			for i, q := range tt.queries {
				if len(want[i].Defs) != 1 && tt.want[i] != "" || (len(want[i].Defs) == 1 && !strings.HasPrefix(want[i].Defs[0], tt.want[i]+":")) {
					t.Errorf("local definition of %q = %v, want %s", q.needle, want[i].Defs, tt.want[i])
				}
				if want[i].Hover == "" {
					t.Errorf("local hover of %q is empty", q.needle)
				}
				if fmt.Sprint(got[i].Defs) != fmt.Sprint(want[i].Defs) {
					t.Errorf("definition of %q over ssh = %v, local = %v", q.needle, got[i].Defs, want[i].Defs)
				}
				if got[i].Hover != want[i].Hover {
					t.Errorf("hover of %q over ssh:\n%s\nlocal:\n%s", q.needle, got[i].Hover, want[i].Hover)
				}
			}
			// Progress is sent apart from replies: wait for the load's end.
			env.Await(lsptest.ProgressEnded("torchlsp: torch on gpu", "torch"))
			checkSSHProgress(t, env.Client())
			env.Shutdown()
		})
	}
}

// checkSSHProgress asserts that the editor saw the load of torch as
// work-done progress: created by the server, begun, reported while
// connecting and starting the helper, reported with percentages while
// mirroring, and ended.
func checkSSHProgress(t *testing.T, c *lsptest.Client) {
	t.Helper()
	created := false
	for _, e := range c.Events() {
		created = created || (e.Request && e.Method == "window/workDoneProgress/create")
	}
	if !created {
		t.Error("no window/workDoneProgress/create request")
	}
	var load *lsptest.Progress
	for _, p := range c.Progresses() {
		if p.Title == "torchlsp: torch on gpu" {
			load = &p
			break
		}
	}
	if load == nil {
		t.Fatalf("no progress titled %q among %+v", "torchlsp: torch on gpu", c.Progresses())
	}
	v := load.Values
	if v[0].Kind != "begin" || v[len(v)-1].Kind != "end" {
		t.Errorf("progress does not begin and end: %+v", v)
	}
	var connecting, percent bool
	for _, x := range v {
		connecting = connecting || (x.Kind == "report" && strings.Contains(x.Message, "connecting"))
		percent = percent || (x.Kind == "report" && strings.Contains(x.Message, "mirroring") && x.Percentage != nil && *x.Percentage > 0)
	}
	if !connecting || !percent {
		t.Errorf("progress lacks a connecting report (%v) or a mirroring report with a percentage (%v): %+v", connecting, percent, v)
	}
	if end := v[len(v)-1].Message; strings.HasPrefix(end, "failed") || !strings.Contains(end, "torch") {
		t.Errorf("progress ended with %q, want torch ready", end)
	}
}

// TestSSHConnectionFailuresReachTheEditor: each way an SSH connection is
// refused reaches the editor as a message saying what to do, and the
// server keeps serving.
func TestSSHConnectionFailuresReachTheEditor(t *testing.T) {
	t.Parallel()
	r := newSSHRig(t)
	hostPort := strconv.Itoa(r.host.Port)
	for _, tt := range []struct {
		name       string
		identity   string
		knownHosts string
		hints      []string
	}{
		{"unknown host", r.keys.Client, r.jump.KnownHosts(t, r.proxy.Addr),
			[]string{"ssh host 127.0.0.1 (" + r.host.Addr + ")", "is not in known_hosts",
				"connect once with `ssh -J " + r.jumpDest() + " -p " + hostPort + " " + r.host.User + "@127.0.0.1` to verify and record it"}},
		{"changed host key", r.keys.Client, r.jump.KnownHosts(t, r.host.Addr) + r.jump.KnownHosts(t, r.proxy.Addr),
			[]string{"ssh host 127.0.0.1", "CHANGED", "ssh-keygen -f "}},
		{"wrong user key", r.keys.Unauthorized, "",
			[]string{"ssh jump host 127.0.0.1 (" + r.proxy.Addr + ")", "no key was accepted (tried: " + r.keys.Unauthorized + ")", "authorized_keys"}},
		{"encrypted key without an agent", r.keys.Encrypted, "",
			[]string{"key " + r.keys.Encrypted + " is encrypted and no ssh-agent holds it: run ssh-add " + r.keys.Encrypted}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := r.options(tt.identity)
			if tt.knownHosts != "" {
				opts.KnownHostsFiles = []string{sshtest.WriteFile(t, "known_hosts", tt.knownHosts)}
			}
			env := r.start(t, r.settings(nil), opts)
			msg := env.AwaitMessage("torchlsp: target gpu")
			for _, h := range tt.hints {
				if !strings.Contains(msg.Message, h) {
					t.Errorf("message lacks %q:\n%s", h, msg.Message)
				}
			}
			if msg.Type != 1 {
				t.Errorf("message type %d, want 1 (error)", msg.Type)
			}
			// A request fails or answers nothing; the server lives on.
			uri := env.OpenFile("train.py")
			pos := env.At(uri, "nn.Linear(4, 4)", 3)
			if locs, err := env.Editor.Definition(env.Ctx(), uri, pos.Line, pos.Character); err == nil && len(locs) != 0 {
				t.Errorf("definition through a refused connection = %+v", locs)
			}
			if h := env.Hover(uri, env.At(uri, "Model()", 0)); h != nil {
				t.Errorf("hover on the user's own name = %+v", h)
			}
			// A second request retries the connection and fails the same
			// way; its reply comes after any message the retry sent. The
			// user hears of one failure once.
			if locs, err := env.Editor.Definition(env.Ctx(), uri, pos.Line, pos.Character); err == nil && len(locs) != 0 {
				t.Errorf("second definition through a refused connection = %+v", locs)
			}
			shown := 0
			for _, e := range env.Client().Events() {
				var m lsptest.Message
				if e.Method == "window/showMessage" && e.Decode(&m) == nil && strings.Contains(m.Message, "torchlsp: target gpu") {
					shown++
				}
			}
			if shown != 1 {
				t.Errorf("the failure was shown %d times, want once", shown)
			}
			env.Shutdown()
		})
	}
}

// slowSite is the fixture torch plus a module whose import blocks, so that
// a request can be caught in flight on the target. The module writes its
// process id (the helper's) to the file named by TORCHLSP_E2E_SLOW when
// the import starts.
func slowSite(t *testing.T) string {
	t.Helper()
	site := filepath.Join(t.TempDir(), "site")
	if out, err := exec.Command("cp", "-R", filepath.Join(repoRoot(t), "testdata", "site"), site).CombinedOutput(); err != nil {
		t.Fatalf("copy fixture: %v\n%s", err, out)
	}
	const slow = `"""Blocks on import: a request stays in flight on the target."""
import os
import time

with open(os.environ["TORCHLSP_E2E_SLOW"], "w") as _f:
    _f.write(str(os.getpid()))
time.sleep(120)
globals()["late"] = len
`
	if err := os.WriteFile(filepath.Join(site, "torch", "slowmod.py"), []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	return site
}

// killPIDFile kills the process whose id a file holds, if it exists: the
// tests' own processes left stranded on the far side of a cut link.
func killPIDFile(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestSSHCutDuringRequest: the link dies while the helper is answering a
// hover. The hover fails clearly, and the next request reconnects, starts
// a new helper and answers.
func TestSSHCutDuringRequest(t *testing.T) {
	t.Parallel()
	r := newSSHRig(t)
	mark := filepath.Join(t.TempDir(), "slow.pid")
	t.Cleanup(func() { killPIDFile(mark) })
	env := r.start(t, r.settings(map[string]string{"PYTHONPATH": slowSite(t), "TORCHLSP_E2E_SLOW": mark}), r.options(r.keys.Client))
	ctx := env.CtxFor(90 * time.Second)

	const u = "untitled:cut"
	env.OpenBuffer(u, "import torch\nimport torch.slowmod\ntorch.slowmod.late\ntorch.add\ntorch.mul\n")
	// Mirror first, so that the cut hits the helper call, not the mirror.
	if h, err := env.Editor.Hover(ctx, u, 3, 7); err != nil || h == nil || !strings.Contains(h.Contents.Value, "def add") {
		t.Fatalf("hover on torch.add before the cut = %+v, %v", h, err)
	}
	slow, err := env.Editor.StartHover(u, 2, 15)
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, mark)
	r.proxy.Cut()
	resp, err := slow.Wait(ctx)
	if err != nil {
		t.Fatalf("the hover in flight never ended: %v", err)
	}
	if resp.Error == nil {
		t.Fatalf("hover cut in flight answered %s, want an error", resp.Result)
	}
	if !strings.Contains(resp.Error.Message, "gpu") || !strings.Contains(resp.Error.Message, "torch.slowmod.late") {
		t.Errorf("error does not say which target and name failed: %s", resp.Error.Message)
	}
	t.Logf("hover cut in flight: %s", resp.Error.Message)

	// torch.mul is bound at run time and not asked before (answers are
	// cached): only the target's interpreter resolves it, so this hover
	// needs a new connection and a new helper.
	if h, err := env.Editor.Hover(ctx, u, 4, 7); err != nil || h == nil || !strings.Contains(h.Contents.Value, "def mul") {
		t.Fatalf("hover after the cut = %+v, %v", h, err)
	}
	env.Shutdown()
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := await.File(ctx, path, func(b []byte) bool { return len(b) > 0 }); err != nil {
		t.Fatalf("%s did not appear: %v", path, err)
	}
}

// TestSSHCutDuringMirror: the link dies while Debian's torch (34 MB of
// source) is being mirrored. The request fails, nothing half-written is
// left in the cache, and the next request mirrors again and answers.
func TestSSHCutDuringMirror(t *testing.T) {
	t.Parallel()
	r := newSSHRig(t)
	marker := fmt.Sprintf("torchlsp-e2e-%d-%d", os.Getpid(), time.Now().UnixNano())
	env := r.start(t, r.settings(map[string]string{"TORCHLSP_E2E_MARK": marker}), r.options(r.keys.Client))
	env.Timeout = 2 * time.Minute
	ctx := env.Ctx()
	uri := env.OpenFile("train.py")
	pos := env.At(uri, "nn.Linear(4, 4)", 3)
	params := map[string]any{"textDocument": map[string]string{"uri": uri}, "position": pos}

	// At 256 KB/s the compressed mirror (about 4 MB) takes many seconds,
	// so the cut below lands in its middle however loaded the machine is.
	r.proxy.Throttle(256 << 10)
	first, err := env.Editor.Start("textDocument/definition", params)
	if err != nil {
		t.Fatal(err)
	}
	// Cut once the mirror has reported progress: at the throttled rate
	// it has seconds left to go.
	env.Await(lsptest.ProgressReported("a mirroring report past 0%", func(v lsptest.ProgressValue) bool {
		return strings.Contains(v.Message, "mirroring") && v.Percentage != nil && *v.Percentage > 0
	}))
	r.proxy.Freeze()
	// Cut once part of the tree is on disk, so that the cut leaves a
	// half-written mirror behind for the cache to clean up.
	awaitPartialMirror(t, env.Sandbox.Cache, 30*time.Second)
	r.proxy.Cut()
	r.proxy.Throttle(0)
	// The request either fails, or (torch is loaded again on the same
	// request's second look-up) waits for a new connection and a new
	// mirror; either way it never answers from the cut transfer.
	var locs []lsptest.Location
	err = first.Decode(ctx, &locs)
	t.Logf("definition during the cut mirror: %+v, %v", locs, err)
	if msg := env.AwaitMessage("torchlsp: target gpu:"); !strings.Contains(msg.Message, "mirror torch") {
		t.Errorf("the message about the failed mirror does not name it: %+v", msg)
	}
	if err != nil {
		locs, err = env.Editor.Definition(ctx, uri, pos.Line, pos.Character)
	}
	if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "/site/torch/nn/modules/linear.py") {
		t.Fatalf("definition after the cut = %+v, %v", locs, err)
	}
	// Progress is sent apart from replies: wait for the second load's end.
	env.Await(lsptest.ProgressEnded("torchlsp: torch on gpu", "mirrored"))
	var failed, ended int
	for _, p := range env.Editor.Progresses() {
		if p.Title != "torchlsp: torch on gpu" || len(p.Values) == 0 {
			continue
		}
		end := p.Values[len(p.Values)-1]
		switch {
		case end.Kind == "end" && strings.HasPrefix(end.Message, "failed: ") && strings.Contains(end.Message, "mirror torch"):
			failed++
		case end.Kind == "end" && !strings.HasPrefix(end.Message, "failed"):
			ended++
		}
	}
	if failed != 1 || ended != 1 {
		t.Errorf("progress: %d failed mirrors and %d finished loads, want 1 and 1: %+v", failed, ended, env.Editor.Progresses())
	}
	if left := cacheEntries(t, env.Sandbox.Cache); len(left) != 1 {
		t.Errorf("after mirroring again the cache holds %v, want one manifest", left)
	}
	env.Shutdown()
}

// awaitPartialMirror waits, bounded, until a temporary mirror tree under
// cache holds a file: the mirror has unpacked part of what got through.
func awaitPartialMirror(t *testing.T, cache string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	err := await.Changed(ctx, cache, func() bool {
		found := false
		_ = filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(p, "/.tmp-") {
				found = true
				return fs.SkipAll
			}
			return nil
		})
		return found
	})
	if err != nil {
		t.Fatalf("no partial mirror under %s within %v: %v", cache, within, err)
	}
}

// cacheEntries lists the mirror manifests and temporary trees in a cache.
func cacheEntries(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "manifest.json" || (d.IsDir() && strings.HasPrefix(d.Name(), ".tmp-")) {
			out = append(out, p)
		}
		if d.IsDir() && d.Name() == "site" {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSSHHelperKilled: the helper dies on the far side (killed by someone
// on the GPU host); the next request starts a new one and answers.
func TestSSHHelperKilled(t *testing.T) {
	t.Parallel()
	r := newSSHRig(t)
	marker := fmt.Sprintf("torchlsp-e2e-%d-%d", os.Getpid(), time.Now().UnixNano())
	site := filepath.Join(repoRoot(t), "testdata", "site")
	env := r.start(t, r.settings(map[string]string{"PYTHONPATH": site, "TORCHLSP_E2E_MARK": marker}), r.options(r.keys.Client))
	ctx := env.CtxFor(90 * time.Second)
	const u = "untitled:killed"
	env.OpenBuffer(u, "import torch\ntorch.add\ntorch.mul\n")
	// Both names are bound at run time, so each first hover asks the
	// helper (later ones come from a cache).
	hover := func(line uint32, want string) {
		h, err := env.Editor.Hover(ctx, u, line, 7)
		if err != nil || h == nil || !strings.Contains(h.Contents.Value, want) {
			t.Fatalf("hover on line %d = %+v, %v; want %q", line, h, err, want)
		}
	}
	hover(1, "def add")
	pids := processesWithEnv(t, "TORCHLSP_E2E_MARK="+marker, "torchlsp_helper")
	if len(pids) != 1 {
		t.Fatalf("helper processes carrying the marker: %v, want 1", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	gone, cancelGone := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelGone()
	if err := await.Gone(gone, func() []int { return pids[:1] }); err != nil {
		t.Fatalf("the killed helper still runs: %v", err)
	}
	// The exit notice travels back through pct, sshd, the jump host and
	// the proxy, and nothing tells the editor when it has arrived. A hover
	// sent before it reaches the dead helper and fails as any call in
	// flight does, saying so; the one after it must start a new helper.
	switch h, err := env.Editor.Hover(ctx, u, 2, 7); {
	case err == nil && h != nil && strings.Contains(h.Contents.Value, "mul"):
	case err != nil && strings.Contains(err.Error(), "helper") && strings.Contains(err.Error(), "exited"):
		t.Logf("the first hover raced the exit notice: %v", err)
		hover(2, "mul")
	case err == nil && h == nil:
		env.Await(lsptest.LoggedMessage("helper"))
		t.Log("the first hover raced the exit notice and answered nothing")
		hover(2, "mul")
	default:
		t.Fatalf("hover after the kill = %+v, %v; want mul, or an error saying the helper exited", h, err)
	}
	after := processesWithEnv(t, "TORCHLSP_E2E_MARK="+marker, "torchlsp_helper")
	if len(after) != 1 || after[0] == pids[0] {
		t.Errorf("helpers after the kill: %v (killed %d), want one new one", after, pids[0])
	}
	env.Shutdown()
}

// processesWithEnv lists this user's Python processes whose environment
// holds the entry kv exactly and whose command line contains arg.
func processesWithEnv(t *testing.T, kv, arg string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+kv+"\x00")) {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", d.Name(), "exe"))
		if err != nil || !strings.Contains(filepath.Base(exe), "python") {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(arg)) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestSSHHostileExec: a container name carrying shell syntax is refused
// with a clear message; nothing is run.
func TestSSHHostileExec(t *testing.T) {
	t.Parallel()
	r := newSSHRig(t)
	pwned := filepath.Join(os.TempDir(), fmt.Sprintf("PWNED_%d_%d", os.Getpid(), time.Now().UnixNano()))
	t.Cleanup(func() { os.Remove(pwned) })
	for _, name := range []string{"x; touch " + pwned, "$(touch " + pwned + ")", "`touch " + pwned + "`"} {
		t.Run(name, func(t *testing.T) {
			settings := mustJSON(t, map[string]any{"defaultTarget": "gpu", "targets": map[string]any{"gpu": map[string]any{
				"ssh": r.host.User + "@" + r.host.Addr, "exec": []string{"docker", "exec", "-i", name}, "python": debianPython,
			}}})
			env := r.start(t, settings, r.options(r.keys.Client))
			msg := env.AwaitMessage("exec")
			for _, want := range []string{"target \"gpu\"", "docker"} {
				if !strings.Contains(msg.Message, want) {
					t.Errorf("message lacks %q: %s", want, msg.Message)
				}
			}
			t.Logf("message: %s", msg.Message)
			uri := env.OpenFile("train.py")
			pos := env.At(uri, "nn.Linear(4, 4)", 3)
			if locs, err := env.Editor.Definition(env.Ctx(), uri, pos.Line, pos.Character); err == nil && len(locs) != 0 {
				t.Errorf("definition through a refused exec hop = %+v", locs)
			}
			env.Shutdown()
			if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s exists: the container name was run by a shell", pwned)
			}
		})
	}
}

// doctorEnv makes a home for the real binary: ~/.ssh/config with the key,
// ~/.ssh/known_hosts, the target in ~/.config/torchlsp/config.toml, and no
// agent.
func (r *sshRig) doctorEnv(t *testing.T, knownHosts string) []string {
	t.Helper()
	home := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".ssh/config", "Host *\n  IdentityFile "+r.keys.Client+"\n")
	write(".ssh/known_hosts", knownHosts)
	q := strconv.Quote
	write(".config/torchlsp/config.toml", fmt.Sprintf("default = \"gpu\"\n[targets.gpu]\nssh = %s\njump = [%s]\nexec = [%s, \"exec\", \"200\", \"--\"]\npython = %s\nenv = { TORCHLSP_SECRET = \"hunter2\" }\n",
		q(r.host.User+"@"+r.host.Addr), q(r.jumpDest()), q(r.shim), q(debianPython)))
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "SSH_AUTH_SOCK" && !strings.HasPrefix(k, "XDG_") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home)
}

// TestSSHDoctor runs `torchlsp doctor --target gpu` as a process: every
// hop with its latency, the interpreter, torch's version and path, the
// helper's round trip and the mirror state; a failing hop is named with
// its error and a hint, and the exit status is 1.
func TestSSHDoctor(t *testing.T) {
	t.Parallel()
	r := newSSHRig(t)
	bin, err := binary()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	doctor := func(env []string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "doctor", "--target", "gpu")
		cmd.Env, cmd.Dir = env, t.TempDir()
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("doctor: %v\n%s", err, out)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}

	t.Run("all hops reachable", func(t *testing.T) {
		out, code := doctor(r.doctorEnv(t, r.host.KnownHosts(t, "")+r.jump.KnownHosts(t, r.proxy.Addr)))
		t.Logf("doctor:\n%s", out)
		if code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
		latency := `\[[0-9.]+(µs|ms|s)\]`
		for _, re := range []string{
			`(?m)^ok +config +target gpu \(ssh ` + regexp.QuoteMeta(r.host.User+"@"+r.host.Addr) + `, jump ` + regexp.QuoteMeta(r.jumpDest()) + `, exec .*pct exec 200 --, python /usr/bin/python3 env: TORCHLSP_SECRET\)`,
			`(?m)^ok +hop ssh jump 127\.0\.0\.1 +` + regexp.QuoteMeta(r.jump.User+"@"+r.proxy.Addr) + ` ` + latency + `$`,
			`(?m)^ok +hop ssh 127\.0\.0\.1 +` + regexp.QuoteMeta(r.host.User+"@"+r.host.Addr) + ` ` + latency + `$`,
			`(?m)^ok +interpreter +Python 3\.11\.\d+ at /usr/bin/python3(\.11)? \(pid \d+\) ` + latency + `$`,
			`(?m)^ok +helper round trip +median of 5, .* ` + latency + `$`,
			`(?m)^ok +package torch +torch 1\.13\S* at /usr/lib/python3/dist-packages/torch \(\d+ files, [0-9.]+ MB\) ` + latency + `$`,
			`(?m)^ok +mirror torch +not mirrored yet`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("doctor output does not match %s", re)
			}
		}
		if strings.Contains(out, "hunter2") {
			t.Error("doctor printed an env value")
		}
	})

	t.Run("unknown host key", func(t *testing.T) {
		out, code := doctor(r.doctorEnv(t, r.jump.KnownHosts(t, r.proxy.Addr)))
		t.Logf("doctor:\n%s", out)
		if code != 1 {
			t.Errorf("exit status %d, want 1", code)
		}
		for _, re := range []string{
			`(?m)^ok +hop ssh jump 127\.0\.0\.1 +` + regexp.QuoteMeta(r.jump.User+"@"+r.proxy.Addr),
			`(?m)^FAIL hop ssh 127\.0\.0\.1 +ssh host 127\.0\.0\.1 \(` + regexp.QuoteMeta(r.host.Addr) + `\): host key .* is not in known_hosts`,
			`(?m)^ +hint: .*ssh -J ` + regexp.QuoteMeta(r.jumpDest()) + ` -p ` + strconv.Itoa(r.host.Port),
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("doctor output does not match %s", re)
			}
		}
		if strings.Contains(out, "interpreter") {
			t.Error("doctor went past the failing hop")
		}
	})
}

// TestMeasureSSH prints the SSH numbers of docs/BENCHMARKS.md. It runs
// only with TORCHLSP_MEASURE=1 (and without -race, for honest numbers):
//
//	TORCHLSP_MEASURE=1 go test -count=1 -run TestMeasureSSH -v ./test/e2e/
//
// TORCHLSP_MEASURE_SITE211 names a site dir holding a torch 2.11 source
// tree (default /tmp/site211); it is skipped when missing.
// TORCHLSP_MEASURE_ONLY=wan measures only the WAN link's figures.
func TestMeasureSSH(t *testing.T) {
	if os.Getenv("TORCHLSP_MEASURE") != "1" {
		t.Skip("set TORCHLSP_MEASURE=1 to measure")
	}
	r := newSSHRig(t)
	site211 := os.Getenv("TORCHLSP_MEASURE_SITE211")
	if site211 == "" {
		site211 = "/tmp/site211"
	}
	type tree struct {
		name string
		env  map[string]string
		site string
	}
	trees := []tree{{"debian torch 1.13", nil, "/usr/lib/python3/dist-packages"}}
	if _, err := os.Stat(filepath.Join(site211, "torch", "__init__.py")); err == nil {
		trees = append(trees, tree{"torch 2.11 tree", map[string]string{"PYTHONPATH": site211}, site211})
	}
	direct := func(env map[string]string) json.RawMessage {
		gpu := map[string]any{"ssh": r.host.User + "@" + r.host.Addr, "python": debianPython}
		if env != nil {
			gpu["env"] = env
		}
		return mustJSON(t, map[string]any{"defaultTarget": "gpu", "targets": map[string]any{"gpu": gpu}})
	}
	for _, tr := range trees {
		if os.Getenv("TORCHLSP_MEASURE_ONLY") == "wan" {
			// The link floor alone (docs/BENCHMARKS.md).
			measureWAN(t, r, tr.name, tr.env)
			continue
		}
		for _, route := range []struct {
			name     string
			settings json.RawMessage
		}{{"ssh", direct(tr.env)}, {"ssh+jump+pct", r.settings(tr.env)}} {
			first, hoverIdx, hoverHelper := measureSession(t, r, route.settings)
			t.Logf("MEASURE %s via %s: initialize → first correct definition (empty cache) %v; warm hover nn.Linear (index) p50 %v p99 %v; torch.add (run-time name) p50 %v p99 %v",
				tr.name, route.name, first.Round(time.Millisecond), hoverIdx[0], hoverIdx[1], hoverHelper[0], hoverHelper[1])
		}
		measureBreakdown(t, r, tr.env)
		measureMirrorVersusTar(t, r, tr.site, tr.env)
		measureWAN(t, r, tr.name, tr.env)
	}
}

// measureWAN puts the WAN link (sshtest.WAN: 25 ms each way, 100 Mbit/s)
// in front of the jump host and measures, side by side on that link: a
// bare `ssh -J jump host true`, the manual way (ssh, then python's inspect
// for one definition), and torchlsp's first correct definition and warm
// hovers through ssh, the jump host and the pct hop.
func measureWAN(t *testing.T, r *sshRig, name string, env map[string]string) {
	r.proxy.SetLink(sshtest.WAN)
	defer r.proxy.SetLink(sshtest.Link{})
	best := func(argv ...string) time.Duration {
		d, err := bestOverSSH(t, r, argv...)
		if err != nil {
			t.Logf("%v", err)
			return -1 // a tree no interpreter here can import (2.11's sources)
		}
		return d
	}
	envPrefix := ""
	for k, v := range env {
		envPrefix += k + "=" + v + " "
	}
	bare := best("true")
	manual := best(envPrefix + debianPython + ` -c "import inspect, torch; print(inspect.getsourcefile(torch.nn.Linear), inspect.getsourcelines(torch.nn.Linear)[1])"`)
	first, hoverIdx, hoverHelper := measureSession(t, r, r.settings(env))
	t.Logf("MEASURE WAN (50 ms RTT, 100 Mbit/s) %s: ssh -J jump host true %v; manual ssh + python inspect of nn.Linear %v; torchlsp via ssh+jump+pct: first correct definition (empty cache) %v (%.1f× ssh true); warm hover nn.Linear p50 %v p99 %v; torch.add p50 %v p99 %v",
		name, bare, manual, first.Round(time.Millisecond), float64(first)/float64(bare), hoverIdx[0], hoverIdx[1], hoverHelper[0], hoverHelper[1])
	measureFloor(t, r, name, env)
	measureFirstReferences(t, r, name, env)
}

// measureFirstReferences is a cold start's first references on the WAN
// link, three runs: a server with an empty cache is asked, right after
// initialize, for the references of torch.set_printoptions from a new
// buffer, polled until an answer names a place; with the bytes through
// the jump host's relay before it (the bulk mirror, which the answer no
// longer waits for, streams beside it).
func measureFirstReferences(t *testing.T, r *sshRig, name string, env map[string]string) {
	const text = "import torch\n\ntorch.set_printoptions(precision=2)\n"
	for run := range 3 {
		t0 := time.Now()
		moved0 := r.proxy.Moved()
		e := r.start(t, r.settings(env), r.options(r.keys.Client))
		uri := e.Editor.URI("refs_first.py")
		e.OpenBuffer(uri, text)
		pos := e.At(uri, "set_printoptions(", 0)
		ctx := e.CtxFor(5 * time.Minute)
		for {
			locs, err := e.Editor.Client.References(ctx, uri, pos, true)
			if err == nil && len(locs) > 0 {
				t.Logf("MEASURE first references (WAN) %s, run %d: %v, %d places, %.2f MB through the relay before it",
					name, run+1, time.Since(t0).Round(time.Millisecond), len(locs), float64(r.proxy.Moved()-moved0)/1e6)
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("no references within 5 minutes: %v", err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		e.Shutdown()
	}
}

// measureFloor is the link floor of issue 35: five runs, alternating, of
// a bare `ssh -J jump host true` and of a cold torchlsp's first correct
// definition through ssh, the jump host and the pct hop, on the WAN
// link; the medians, their ratio, and the turns and bytes through the
// jump host's relay of each.
func measureFloor(t *testing.T, r *sshRig, name string, env map[string]string) {
	cfg := sshtest.WriteFile(t, "ssh_config_floor", "Host *\n  IdentityFile "+r.keys.Client+"\n  IdentitiesOnly yes\n  UserKnownHostsFile "+r.knownHosts+"\n  StrictHostKeyChecking yes\n  ControlPath none\n")
	hostPort := strings.TrimPrefix(r.host.Addr, "127.0.0.1:")
	argv := []string{"-F", cfg, "-T", "-J", r.jumpDest(), "-p", hostPort, r.host.User + "@127.0.0.1", "true"}
	const runs = 5
	var bare, first []time.Duration
	var bareTurns, firstTurns, firstMoved []int64
	for range runs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t0, turns0 := time.Now(), r.proxy.Turns()
		out, err := exec.CommandContext(ctx, "ssh", argv...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("ssh true: %v: %s", err, out)
		}
		bare, bareTurns = append(bare, time.Since(t0)), append(bareTurns, r.proxy.Turns()-turns0)
		turns0 = r.proxy.Turns()
		m := measureFirst(t, r, r.settings(env), false)
		first, firstTurns, firstMoved = append(first, m.first), append(firstTurns, r.proxy.Turns()-turns0), append(firstMoved, m.moved)
	}
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("MEASURE floor (WAN) %s: ssh true %v (median of %d; turns %v); torchlsp first correct definition %v (median; turns to the end of the session %v, bytes before the answer %v): %.2f× ssh true",
		name, median(bare).Round(time.Millisecond), runs, bareTurns, median(first).Round(time.Millisecond), firstTurns, firstMoved, float64(median(first))/float64(median(bare)))
}

// measureSession returns the time from initialize to the first correct
// definition of nn.Linear, and p50/p99 of 200 warm hovers on an indexed
// name and on a name the helper resolves.
func measureSession(t *testing.T, r *sshRig, settings json.RawMessage) (time.Duration, [2]time.Duration, [2]time.Duration) {
	m := measureFirst(t, r, settings, true)
	return m.first, m.hoverIndex, m.hoverHelper
}

// firstAnswer is what one cold session measured.
type firstAnswer struct {
	first                   time.Duration // initialize → first correct definition of nn.Linear
	moved                   int64         // bytes through the jump host's relay before it
	hoverIndex, hoverHelper [2]time.Duration
}

// measureFirst starts a server with an empty cache, polls for the first
// correct definition of nn.Linear and, with hovers set, times 200 warm
// hovers on an indexed name and on a name the helper resolves.
func measureFirst(t *testing.T, r *sshRig, settings json.RawMessage, hovers bool) firstAnswer {
	var m firstAnswer
	t0 := time.Now()
	moved0, turns0 := r.proxy.Moved(), r.proxy.Turns()
	env := r.start(t, settings, r.options(r.keys.Client))
	uri := env.OpenFile("train.py")
	pos := env.At(uri, "nn.Linear(4, 4)", 3)
	var first time.Duration
	firstCtx := env.CtxFor(5 * time.Minute)
	for {
		// Polls the server, as an editor's user would, for the first
		// right answer: the figure measured.
		locs, err := env.Editor.Definition(firstCtx, uri, pos.Line, pos.Character)
		if err == nil && len(locs) == 1 && strings.HasSuffix(locs[0].URI, "/torch/nn/modules/linear.py") &&
			strings.Contains(lineText(t, uriPath(t, locs[0].URI), int(locs[0].Range.Start.Line)), "class Linear") {
			first = time.Since(t0)
			if moved := r.proxy.Moved() - moved0; moved > 0 {
				m.moved = moved
				t.Logf("MEASURE through the jump host's relay before the first correct definition: %.2f MB, %d turns", float64(moved)/1e6, r.proxy.Turns()-turns0)
			}
			break
		}
		if time.Since(t0) > 5*time.Minute {
			t.Fatalf("no correct definition after 5 minutes: %+v %v", locs, err)
		}
		// Paces the polls that are the measurement.
		time.Sleep(5 * time.Millisecond)
	}
	m.first = first
	if !hovers {
		env.Shutdown()
		return m
	}
	hoverCtx := env.CtxFor(5 * time.Minute)
	pct := func(needle string, off int) [2]time.Duration {
		p := env.At(uri, needle, off)
		l, c := p.Line, p.Character
		if _, err := env.Editor.Hover(hoverCtx, uri, l, c); err != nil {
			t.Logf("hover %q: %v", needle, err)
			return [2]time.Duration{-1, -1}
		}
		var d []time.Duration
		for i := 0; i < 200; i++ {
			t1 := time.Now()
			h, err := env.Editor.Hover(hoverCtx, uri, l, c)
			if err != nil || h == nil {
				// A tree this machine's Python cannot import (2.11's
				// sources) has no run-time names to hover.
				t.Logf("hover %q: %+v %v", needle, h, err)
				return [2]time.Duration{-1, -1}
			}
			d = append(d, time.Since(t1))
		}
		sortDurations(d)
		return [2]time.Duration{d[len(d)/2].Round(time.Microsecond), d[len(d)*99/100].Round(time.Microsecond)}
	}
	m.hoverIndex, m.hoverHelper = pct("nn.Linear(4, 4)", 3), pct("torch.add(", 6)
	env.Shutdown()
	return m
}

func sortDurations(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}

// measureBreakdown times the steps of a first answer one by one, on the
// direct route: connect, start the helper, locate torch, mirror it, and
// index it (first resolve, then the whole tree).
func measureBreakdown(t *testing.T, r *sshRig, env map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spec := remote.Spec{Name: "gpu", SSH: r.host.User + "@" + r.host.Addr, Python: debianPython, Env: env}
	tg, err := sshtarget.New(spec, r.options(r.keys.Client))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	t0 := time.Now()
	if err := tg.Dial(ctx); err != nil {
		t.Fatal(err)
	}
	connect := time.Since(t0)
	run := func(argv ...string) time.Duration {
		best := time.Duration(0)
		for i := 0; i < 5; i++ {
			t1 := time.Now()
			p, err := tg.Start(ctx, remote.Command{Argv: argv})
			if err != nil {
				t.Fatal(err)
			}
			p.Stdin().Close()
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(t1); i == 0 || d < best {
				best = d
			}
		}
		return best.Round(time.Millisecond)
	}
	t.Logf("MEASURE command over the connection (best of 5): true %v; python3 -c pass %v; python3 -c 'import importlib.util, json, threading' %v",
		run("true"), run(debianPython, "-c", "pass"), run(debianPython, "-c", "import importlib.util, json, threading"))
	t0 = time.Now()
	c := remote.NewClient(tg, spec)
	defer c.Close()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	helper := time.Since(t0)
	t0 = time.Now()
	info, err := c.PackageInfo(ctx, "torch")
	if err != nil {
		t.Fatal(err)
	}
	locate := time.Since(t0)
	t0 = time.Now()
	m, err := remote.Mirror(ctx, tg, spec, info, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mirror := time.Since(t0)
	t0 = time.Now()
	ix, err := pyindex.Open(m.SiteDir, filepath.Join(t.TempDir(), "index.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Resolve("torch.nn.Linear"); err != nil {
		t.Fatal(err)
	}
	resolve := time.Since(t0)
	t0 = time.Now()
	if err := ix.Build(ctx); err != nil {
		t.Fatal(err)
	}
	build := time.Since(t0)
	var pings []time.Duration
	for i := 0; i < 200; i++ {
		t1 := time.Now()
		if err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		pings = append(pings, time.Since(t1))
	}
	sortDurations(pings)
	t.Logf("MEASURE breakdown torch %s (%d files, %.1f MB): connect %v; helper start %v; package_info %v; mirror %v; open index + first resolve %v; full index build %v; helper ping p50 %v p99 %v",
		info.Version, info.FilesCount, float64(info.Bytes)/1e6, connect.Round(time.Millisecond), helper.Round(time.Millisecond),
		locate.Round(time.Millisecond), mirror.Round(time.Millisecond), resolve.Round(time.Millisecond), build.Round(time.Millisecond),
		pings[len(pings)/2].Round(time.Microsecond), pings[len(pings)*99/100].Round(time.Microsecond))
}

// measureMirrorVersusTar compares remote.Mirror with OpenSSH's
// `ssh … 'tar czf - -C SITE torch' | tar xzf - -C DEST` on the same link,
// three runs each, best of three.
func measureMirrorVersusTar(t *testing.T, r *sshRig, site string, env map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	spec := remote.Spec{Name: "gpu", SSH: r.host.User + "@" + r.host.Addr, Python: debianPython, Env: env}
	tg, err := sshtarget.New(spec, r.options(r.keys.Client))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	c := remote.NewClient(tg, spec)
	defer c.Close()
	info, err := c.PackageInfo(ctx, "torch")
	if err != nil {
		t.Fatal(err)
	}
	best := func(f func() error) time.Duration {
		var b time.Duration
		for i := 0; i < 3; i++ {
			t0 := time.Now()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(t0); i == 0 || d < b {
				b = d
			}
		}
		return b.Round(time.Millisecond)
	}
	mirror := best(func() error {
		_, err := remote.Mirror(ctx, tg, spec, info, t.TempDir(), nil)
		return err
	})
	ssh := fmt.Sprintf("ssh -T -i %s -o IdentitiesOnly=yes -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o ControlPath=none -p %d %s@127.0.0.1",
		r.keys.Client, r.knownHosts, r.host.Port, r.host.User)
	shell := func(remoteCmd string) func() error {
		return func() error {
			dest := t.TempDir()
			out, err := exec.CommandContext(ctx, "sh", "-c", ssh+" '"+remoteCmd+"' | tar xzf - -C "+dest).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}
	}
	whole := best(shell("tar czf - -C " + site + " torch"))
	sources := best(shell("cd " + site + " && find torch -name \"*.py\" -o -name \"*.pyi\" | tar czf - -T -"))
	fast := best(shell("cd " + site + " && find torch -name \"*.py\" -o -name \"*.pyi\" | tar cf - -T - | gzip -1"))
	t.Logf("MEASURE mirror of %s (%d files, %.1f MB): remote.Mirror %v; ssh+tar czf whole torch dir %v; ssh+tar czf .py/.pyi only %v; ssh+tar|gzip -1 .py/.pyi only %v",
		site, info.FilesCount, float64(info.Bytes)/1e6, mirror, whole, sources, fast)
}

// TestSSHCachedMirrorWithTargetDown: a restart finds the mirror in the
// cache and answers from it, but the target is down; the user is told so
// in a message, once, and the status item says it, instead of a log line
// under a "ready" status.
func TestSSHCachedMirrorWithTargetDown(t *testing.T) {
	t.Parallel()
	r := newSSHRig(t)
	settings := r.settings(nil)
	sb := lsptest.NewSandbox(t)
	first := start(t, options{sandbox: &sb, settings: settings, opener: sshtarget.Opener{Options: r.options(r.keys.Client)}})
	uri := first.OpenFile("train.py")
	pos := first.At(uri, "nn.Linear(4, 4)", 3)
	if locs := first.Definition(uri, pos); len(locs) != 1 {
		t.Fatalf("first definition = %+v", locs)
	}
	first.Await(lsptest.ProgressEnded("torchlsp: torch on gpu", "mirrored"))
	first.Shutdown()

	r.host.Stop()
	second := start(t, options{sandbox: &sb, settings: settings, opener: sshtarget.Opener{Options: r.options(r.keys.Client)}})
	uri = second.OpenFile("train.py")
	if locs := second.Definition(uri, pos); len(locs) != 1 {
		t.Fatalf("definition from the cache = %+v", locs)
	}
	msg := second.AwaitMessage("answering from the cached mirror")
	if msg.Type != 2 || !strings.Contains(msg.Message, "cannot be reached") {
		t.Errorf("message = %+v, want a warning that the target cannot be reached", msg)
	}
	second.Shutdown()
}
