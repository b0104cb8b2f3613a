package hops

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote/sshtest"
)

// fixtureEnv puts the repository's torch-shaped fixture (testdata/site,
// whose torch.add and torch.mul only the target's interpreter can
// resolve) where the chain's interpreter sees it, and returns the target
// environment that selects it. Each first hover on those names is a call
// to the resident helper, through every hop.
func (tp *topology) fixtureEnv(t testing.TB, c chain) map[string]string {
	t.Helper()
	testdata := filepath.Join(tp.repo, "testdata")
	var into []string
	switch {
	case c.needs.lxc:
		into = []string{"pct", "exec", "200", "--"}
	case c.needs.docker:
		into = []string{"docker", "exec", "-i", "trainer"}
	default: // the GPU host's own file system
		return map[string]string{"PYTHONPATH": filepath.Join(testdata, "site")}
	}
	line := "tar -C " + testdata + " -cf - --exclude=__pycache__ site | " + strings.Join(into, " ") + " sh -c 'mkdir -p /opt/fixture && tar -C /opt/fixture -xf -'"
	if out, err := tp.onGPU(time.Minute, "sh", "-c", line); err != nil {
		t.Fatalf("copy the fixture into the container: %v\n%s", err, out)
	}
	return map[string]string{"PYTHONPATH": "/opt/fixture/site"}
}

// fixtureBuffer holds the fixture's two run-time names.
const fixtureBuffer = "import torch\ntorch.add\ntorch.mul\n"

// hoverWant asks for the hover on a line of the fixture buffer and fails
// unless it holds want.
func hoverWant(t *testing.T, env *lsptest.Env, uri string, line uint32, want string) {
	t.Helper()
	h, err := env.Editor.Hover(env.Ctx(), uri, line, 7)
	if err != nil || h == nil || !strings.Contains(h.Contents.Value, want) {
		t.Fatalf("hover on line %d = %+v, %v; want %q", line, h, err, want)
	}
}

// hoverFails asks for the hover on a line while the way to the target is
// broken: it must fail (an error, or nothing), never answer. It returns
// the error text.
func hoverFails(t *testing.T, env *lsptest.Env, uri string, line uint32) string {
	t.Helper()
	h, err := env.Editor.Hover(env.Ctx(), uri, line, 7)
	if err == nil && h != nil {
		t.Fatalf("hover on line %d answered while the target is down: %s", line, h.Contents.Value)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// failUntil asks, up to three times, until a failure's text (the error or
// a message the editor was shown) holds want. The first request after a
// fault may only learn that the old helper is gone.
func failUntil(t *testing.T, env *lsptest.Env, uri string, line uint32, want string) string {
	t.Helper()
	var seen []string
	for i := 0; i < 3; i++ {
		text := hoverFails(t, env, uri, line)
		seen = append(seen, text)
		if strings.Contains(text, want) {
			return text
		}
		for _, e := range env.Editor.Events() {
			var m lsptest.Message
			if (e.Method == "window/showMessage" || e.Method == "window/logMessage") && e.Decode(&m) == nil && strings.Contains(m.Message, want) {
				return m.Message
			}
		}
	}
	t.Fatalf("no failure says %q; the hovers failed with %q", want, seen)
	return ""
}

// TestContainerStopped: the container stops while a session uses it (a
// user's `pct stop 200`, `docker stop trainer`). Requests fail saying the
// container is not running; once it runs again, the next request starts
// a new helper in it and answers. Nothing is left running.
func TestContainerStopped(t *testing.T) {
	t.Parallel()
	tp := newTopology(t, hopSet{lxc: true, docker: true})
	for _, tt := range []struct {
		chain       string
		stop, start []string
		says        string // what the failure must say
	}{
		{"pct", []string{"pct", "stop", "200"}, []string{"pct", "start", "200"}, "container '200' not running"},
		{"docker", []string{"docker", "stop", "-t", "1", "trainer"}, []string{"docker", "start", "trainer"}, "is not running"},
	} {
		t.Run(tt.chain, func(t *testing.T) {
			c := chainNamed(t, tt.chain)
			env := tp.startEditor(t, tp.settings(c, tp.fixtureEnv(t, c)), lsptest.Options{})
			const u = "untitled:stopped"
			env.OpenBuffer(u, fixtureBuffer)
			hoverWant(t, env, u, 1, "def add")
			if out, err := tp.onGPU(time.Minute, tt.stop...); err != nil {
				t.Fatalf("stop the container: %v\n%s", err, out)
			}
			t.Logf("failure while the container is stopped: %s", failUntil(t, env, u, 2, tt.says))
			if out, err := tp.onGPU(time.Minute, tt.start...); err != nil {
				lg, _ := os.ReadFile(filepath.Join(tp.hopEnv["LXC_PATH"], "200.log"))
				t.Fatalf("start the container: %v\n%s\nLXC log:\n%s", err, out, lg)
			}
			hoverWant(t, env, u, 2, "def mul")
			env.Shutdown()
			tp.requireNothingLeft(t)
		})
	}
}

// TestSlurmStepCancelled: the helper's Slurm job is cancelled (scancel, as
// an admin or the user would). The next requests say so, a new job starts
// and answers, and once the session ends no job is left.
func TestSlurmStepCancelled(t *testing.T) {
	t.Parallel()
	tp := newTopology(t, hopSet{slurm: true})
	c := chainNamed(t, "srun")
	env := tp.startEditor(t, tp.settings(c, tp.fixtureEnv(t, c)), lsptest.Options{})
	const u = "untitled:scancel"
	env.OpenBuffer(u, fixtureBuffer)
	hoverWant(t, env, u, 1, "def add")
	// The first answer may come on demand, with the bulk mirror as a
	// second Slurm step behind it: let that one end first.
	env.Await(lsptest.ProgressEnded("torchlsp: torch on gpu", "mirrored"))
	jobs := tp.jobs(t)
	if strings.Count(jobs, "\n") != 0 || !strings.Contains(jobs, "RUNNING") {
		t.Fatalf("Slurm jobs while the helper runs: %q, want one running", jobs)
	}
	id := strings.Fields(jobs)[0]
	if out, err := tp.onGPU(time.Minute, "scancel", id); err != nil {
		t.Fatalf("scancel %s: %v\n%s", id, err, out)
	}
	// The helper's job ended: the next request fails saying what srun
	// said, or (the end already seen) starts a new job and answers.
	h, err := env.Editor.Hover(env.Ctx(), u, 2, 7)
	t.Logf("hover after scancel %s: %+v, %v", id, h, err)
	switch {
	case err != nil:
		if !strings.Contains(err.Error(), "srun: Job step aborted") && !strings.Contains(err.Error(), "CANCELLED") {
			t.Errorf("the failure after scancel does not say the job was cancelled: %v", err)
		}
		hoverWant(t, env, u, 2, "def mul")
	case h == nil:
		hoverWant(t, env, u, 2, "def mul")
	case !strings.Contains(h.Contents.Value, "def mul"):
		t.Fatalf("hover after scancel = %s", h.Contents.Value)
	}
	if now := tp.jobs(t); strings.Contains(now, id+" ") {
		t.Errorf("the cancelled job %s is still listed: %q", id, now)
	}
	env.Shutdown()
	tp.requireNothingLeft(t)
}

// TestLinkCutMidMirror: the link to the bastion dies while Debian's torch
// is mirrored from the LXC container. The request fails or waits for a
// new mirror, nothing half-written is used, the next definition answers
// from a complete mirror, and the mirror's process in the container is
// gone.
func TestLinkCutMidMirror(t *testing.T) {
	t.Parallel()
	tp := newTopology(t, hopSet{lxc: true})
	c := chainNamed(t, "pct")
	env := tp.startEditor(t, tp.settings(c, nil), lsptest.Options{})
	env.Timeout = 3 * time.Minute
	uri := env.OpenFile("train.py")
	pos := env.At(uri, "nn.Linear(4, 4)", 3)
	// Slow enough that the cut lands in the middle of the 4 MB stream.
	tp.relay.Throttle(256 << 10)
	first, err := env.Editor.Start("textDocument/definition", map[string]any{"textDocument": map[string]string{"uri": uri}, "position": pos})
	if err != nil {
		t.Fatal(err)
	}
	env.Await(lsptest.ProgressReported("a mirroring report past 0%", func(v lsptest.ProgressValue) bool {
		return strings.Contains(v.Message, "mirroring") && v.Percentage != nil && *v.Percentage > 0
	}))
	tp.awaitProcs(t, "the mirror script in the container", func(p proc) bool {
		return p.where == "lxc" && strings.HasSuffix(p.cmdline, " torchlsp_mirror")
	})
	tp.relay.Cut()
	tp.relay.SetLink(sshtest.WAN)
	var locs []lsptest.Location
	err = first.Decode(env.Ctx(), &locs)
	t.Logf("definition during the cut mirror: %+v, %v", locs, err)
	if msg := env.AwaitMessage("torchlsp: target gpu:"); !strings.Contains(msg.Message, "mirror torch") {
		t.Errorf("the message about the failed mirror does not name it: %+v", msg)
	}
	if err != nil || len(locs) == 0 {
		locs = env.Definition(uri, pos)
	}
	if len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "/site/torch/nn/modules/linear.py") || strings.Contains(locs[0].URI, "/.tmp-") {
		t.Fatalf("definition after the cut = %+v", locs)
	}
	if got := lineOf(t, uriPath(t, locs[0].URI), int(locs[0].Range.Start.Line)); !strings.HasPrefix(got, "class Linear") {
		t.Errorf("definition after the cut is at %q", got)
	}
	// The answer may have come from the on-demand tree; the bulk mirror
	// is retried behind it and must end complete.
	env.Await(lsptest.ProgressEnded("torchlsp: torch on gpu", "mirrored"))
	var manifests, partial []string
	_ = filepath.WalkDir(env.Sandbox.Cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		switch {
		case d.Name() == "manifest.json":
			manifests = append(manifests, p)
		case d.IsDir() && strings.HasPrefix(d.Name(), ".tmp-"):
			partial = append(partial, p)
		}
		return nil
	})
	if len(manifests) != 1 || len(partial) != 0 {
		t.Errorf("after the cut the cache holds manifests %v and partial trees %v, want one manifest", manifests, partial)
	}
	env.Shutdown()
	tp.requireNothingLeft(t)
}

// TestBastionRestarted: the bastion goes down (every connection through
// it breaks) while a session uses the GPU host's Docker container, and
// comes back. While it is down requests fail naming the jump host; after,
// the next request reconnects through it, starts a new helper and
// answers. The old helper does not linger in the container.
func TestBastionRestarted(t *testing.T) {
	t.Parallel()
	tp := newTopology(t, hopSet{docker: true})
	c := chainNamed(t, "docker")
	env := tp.startEditor(t, tp.settings(c, tp.fixtureEnv(t, c)), lsptest.Options{})
	const u = "untitled:bastion"
	env.OpenBuffer(u, fixtureBuffer)
	hoverWant(t, env, u, 1, "def add")
	old := tp.awaitProcs(t, "the helper in the container", func(p proc) bool {
		return p.where == "docker" && strings.HasSuffix(p.cmdline, " torchlsp_helper")
	})
	tp.bastion.crash(t)
	text := failUntil(t, env, u, 2, "jump host")
	t.Logf("failure while the bastion is down: %s", text)
	if err := tp.bastion.start(); err != nil {
		t.Fatal(err)
	}
	// The reconnect waits out its backoff; the next request answers.
	deadline := time.Now().Add(time.Minute)
	for {
		h, err := env.Editor.Hover(env.Ctx(), u, 2, 7)
		if err == nil && h != nil && strings.Contains(h.Contents.Value, "def mul") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer within a minute of the bastion's return: %+v, %v", h, err)
		}
		// Only a request shows the reconnect has happened, as for a user.
		time.Sleep(500 * time.Millisecond)
	}
	for _, p := range tp.processes(t) {
		for _, o := range old {
			if p.pid == o.pid {
				t.Errorf("the helper from before the restart still runs: %s", p)
			}
		}
	}
	env.Shutdown()
	tp.requireNothingLeft(t)
}

// TestEditorKilled: the editor's server is killed outright (SIGKILL: no
// shutdown, no kill sessions) while its helper runs through the chain. The
// dropped connection alone must end everything on the far side: sshd
// closes the hop's stdin, the hop passes the end on, the helper leaves,
// and through srun its job ends too instead of holding the node.
func TestEditorKilled(t *testing.T) {
	t.Parallel()
	tp := newTopology(t, all)
	bin := buildBinary(t)
	for _, name := range []string{"pct", "docker", "srun", "kubectl"} {
		t.Run(name, func(t *testing.T) {
			c := chainNamed(t, name)
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-R", filepath.Join(tp.repo, "test", "hops", "testdata", "workspace")+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("workspace: %v\n%s", err, out)
			}
			cmd := exec.Command(bin, "serve", "--stdio")
			cmd.Env = append(tp.cliEnv(t, c), "XDG_CACHE_HOME="+t.TempDir())
			cmd.Dir = dir
			p, err := lsptest.StartProcess(cmd, lsptest.Options{RootDir: dir, WorkDoneProgress: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Cmd.Process.Kill(); _, _ = p.Wait() })
			ed := lsptest.NewEditor(p.Client, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if _, err := ed.Handshake(ctx); err != nil {
				t.Fatal(err)
			}
			uri, err := ed.OpenFile("train.py")
			if err != nil {
				t.Fatal(err)
			}
			pos, err := ed.Pos(uri, "nn.Linear(4, 4)", 0, 3)
			if err != nil {
				t.Fatal(err)
			}
			if locs, err := ed.Definition(ctx, uri, pos.Line, pos.Character); err != nil || len(locs) != 1 {
				t.Fatalf("definition = %+v, %v", locs, err)
			}
			tp.awaitProcs(t, "the helper", func(p proc) bool { return strings.HasSuffix(p.cmdline, " torchlsp_helper") })
			if err := p.Cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_, _ = p.Wait()
			tp.requireNothingLeft(t)
		})
	}
}
