package shquote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
)

func TestPrepareExec(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, want []string
	}{
		{nil, nil},
		{[]string{"srun", "-p", "debug", "--"}, []string{"srun", "--unbuffered", "-p", "debug", "--"}},
		{[]string{"/opt/slurm/bin/srun", "--jobid", "12", "--overlap", "--"}, []string{"/opt/slurm/bin/srun", "--unbuffered", "--jobid", "12", "--overlap", "--"}},
		{[]string{"srun", "-u", "-p", "debug", "--"}, []string{"srun", "-u", "-p", "debug", "--"}},
		{[]string{"srun", "--unbuffered", "--"}, []string{"srun", "--unbuffered", "--"}},
		// -u after the command is the command's, not srun's.
		{[]string{"srun", "--", "env", "-u", "X"}, []string{"srun", "--unbuffered", "--", "env", "-u", "X"}},
		{[]string{"docker", "exec", "-i", "trainer"}, []string{"docker", "exec", "-i", "trainer"}},
		{[]string{"pct", "exec", "200", "--"}, []string{"pct", "exec", "200", "--"}},
	} {
		if got := PrepareExec(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("PrepareExec(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	in := []string{"srun", "--"}
	PrepareExec(in)
	if !slices.Equal(in, []string{"srun", "--"}) {
		t.Errorf("PrepareExec changed its argument: %q", in)
	}
}

func TestLaunchLines(t *testing.T) {
	t.Parallel()
	py := []string{"/usr/bin/python3", "-u", "-c", "pass"}
	for _, tt := range []struct {
		name      string
		hop       []string
		argv      []string
		lineHas   []string
		token     bool
		killStart string // KillLine(42) starts with this
		killHas   []string
	}{
		{"no hop", nil, py, []string{"/usr/bin/python3 -u -c pass"}, false, "kill -s KILL -- -42 2>&1 || true", nil},
		{"pct", []string{"pct", "exec", "200", "--"}, py, []string{"pct exec 200 -- /usr/bin/python3"}, false,
			"kill -s KILL -- -42 2>&1 || true", nil},
		{"srun", []string{"srun", "-p", "debug", "--"}, py, []string{"srun --unbuffered -p debug -- /usr/bin/python3"}, false,
			"kill -s TERM -- -42 2>/dev/null && {", []string{"kill -s 0 -- -42", "kill -s KILL -- -42"}},
		{"docker", []string{"docker", "exec", "-i", "trainer"}, py, []string{"docker exec -i trainer env '" + TokenVar + "="}, true,
			"docker exec -i trainer env 'PYTHONSAFEPATH=torchlsp' /usr/bin/python3 -s -u -B -c ", []string{"</dev/null", "kill -s KILL -- -42 2>&1 || true"}},
		{"kubectl", []string{"kubectl", "exec", "-i", "-n", "ml", "trainer-0", "-c", "pytorch", "--"}, py,
			[]string{"kubectl exec -i -n ml trainer-0 -c pytorch -- env '" + TokenVar + "="}, true,
			"kubectl exec -i -n ml trainer-0 -c pytorch -- env 'PYTHONSAFEPATH=torchlsp' /usr/bin/python3 -s -u -B -c ", nil},
		{"docker, not python", []string{"docker", "exec", "-i", "trainer"}, []string{"true"}, []string{"docker exec -i trainer true"}, false,
			"kill -s KILL -- -42 2>&1 || true", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hops []Hop
			if tt.hop != nil {
				hops = []Hop{HopFromExec(tt.hop)}
			}
			l, err := NewLaunch(hops, nil, tt.argv)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.lineHas {
				if !strings.Contains(l.Line, want) {
					t.Errorf("line %q lacks %q", l.Line, want)
				}
			}
			if got := strings.Contains(l.Line, TokenVar+"="); got != tt.token {
				t.Errorf("line %q: token %v, want %v", l.Line, got, tt.token)
			}
			kill := l.KillLine(42)
			if !strings.HasPrefix(kill, tt.killStart) {
				t.Errorf("kill line %q does not start with %q", kill, tt.killStart)
			}
			for _, want := range tt.killHas {
				if !strings.Contains(kill, want) {
					t.Errorf("kill line %q lacks %q", kill, want)
				}
			}
			if tt.token {
				// The kill names the very token the command carries.
				tok := l.Line[strings.Index(l.Line, TokenVar+"=")+len(TokenVar)+1:]
				tok = tok[:min(32, len(tok))]
				if len(tok) != 32 || !strings.Contains(kill, " "+tok+" </dev/null") {
					t.Errorf("token %q is not the kill line's argument: %q", tok, kill)
				}
			}
		})
	}
	a, _ := NewLaunch([]Hop{HopFromExec([]string{"docker", "exec", "-i", "x"})}, nil, py)
	b, _ := NewLaunch([]Hop{HopFromExec([]string{"docker", "exec", "-i", "x"})}, nil, py)
	if a.token == b.token {
		t.Errorf("two launches share the token %q", a.token)
	}
}

// startGroup starts sh -c script as the leader of a new process group,
// with extra environment, and reaps it in the background.
func startGroup(t *testing.T, script string, env ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		// Only a group whose leader is not yet reaped: a reaped leader's
		// pid may already lead another test's group.
		select {
		case <-done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	return cmd, done
}

// groupGone waits up to d for every process of group pgid to exit.
func groupGone(pgid int, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return await.Gone(ctx, func() []int { return await.Group(pgid) }) == nil
}

// waitFor waits up to 10 s for a file to hold something.
func waitFor(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := await.File(ctx, path, func(b []byte) bool { return len(b) > 0 }); err != nil {
		t.Fatalf("%s did not appear: %v", path, err)
	}
}

// TestInHopKill runs the in-hop kill program for real: the processes
// carrying the token (a command and the child it started) die, a process
// carrying another token lives.
func TestInHopKill(t *testing.T) {
	t.Parallel()
	needPython(t)
	dir := t.TempDir()
	// A session of its own, as docker exec gives the command.
	script := `python3 -c 'import os,subprocess,sys,time; subprocess.Popen(["sleep","300"]); open(sys.argv[1],"w").write("up"); time.sleep(300)' `
	marked, markedDone := startGroup(t, script+filepath.Join(dir, "marked"), TokenVar+"=tok1")
	decoy, _ := startGroup(t, script+filepath.Join(dir, "decoy"), TokenVar+"=tok2")
	waitFor(t, filepath.Join(dir, "marked"))
	waitFor(t, filepath.Join(dir, "decoy"))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// It starts where a container hop would, in a checkout whose modules
	// shadow the ones it imports: none of them runs.
	checkout := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	for _, m := range []string{"signal.py", "os.py", "sys.py", "sitecustomize.py"} {
		if err := os.WriteFile(filepath.Join(checkout, m), []byte("open("+strconv.Quote(pwned)+", 'a').write('"+m+"\\n')\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	argv := inHopKillArgv(echoArgv[0], "tok1")
	kill := exec.CommandContext(ctx, argv[0], argv[1:]...)
	kill.Dir = checkout
	if out, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("kill program: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(pwned); err == nil {
		t.Errorf("the kill program imported the checkout's modules: %s", b)
	}
	select {
	case <-markedDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the marked command lives on")
	}
	if !groupGone(marked.Process.Pid, 10*time.Second) {
		t.Error("the marked command's child lives on")
	}
	if groupGone(decoy.Process.Pid, 200*time.Millisecond) {
		t.Error("the process with another token was killed")
	}
}

// termScript and upScript make a group leader that records SIGTERM in $F
// (or ignores it), then writes $U and waits.
const (
	termScript = `exec python3 -c 'import os,signal,time
def leave(*_):
    open(os.environ["F"],"w").write("term")
    os._exit(0)
`
	upScript = `
open(os.environ["U"],"w").write("up")
time.sleep(300)'`
)

// TestSlurmKillLine runs the srun kill line under sh: the group gets
// SIGTERM first (srun cancels its step on it), and SIGKILL when it
// ignores that.
func TestSlurmKillLine(t *testing.T) {
	t.Parallel()
	l, err := NewLaunch([]Hop{HopFromExec([]string{"srun", "--"})}, nil, []string{"python3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		shell  string // the login shell that runs the kill line
		script string
		term   bool // the group records the SIGTERM
	}{
		{"leaves on SIGTERM, sh", "/bin/sh", termScript + `signal.signal(signal.SIGTERM, leave)` + upScript, true},
		{"ignores SIGTERM, sh", "/bin/sh", termScript + `signal.signal(signal.SIGTERM, signal.SIG_IGN)` + upScript, false},
		{"leaves on SIGTERM, bash", "/bin/bash", termScript + `signal.signal(signal.SIGTERM, leave)` + upScript, true},
		{"ignores SIGTERM, bash", "/bin/bash", termScript + `signal.signal(signal.SIGTERM, signal.SIG_IGN)` + upScript, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			up, term := filepath.Join(dir, "up"), filepath.Join(dir, "term")
			cmd, done := startGroup(t, tt.script, "F="+term, "U="+up)
			waitFor(t, up)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			if out, err := exec.CommandContext(ctx, tt.shell, "-c", l.KillLine(cmd.Process.Pid)).CombinedOutput(); err != nil {
				t.Fatalf("kill line: %v\n%s", err, out)
			}
			if !groupGone(cmd.Process.Pid, 5*time.Second) {
				t.Fatalf("group %d lives on after %v", cmd.Process.Pid, time.Since(start))
			}
			if _, err := os.Stat(term); (err == nil) != tt.term {
				<-done
				t.Errorf("SIGTERM recorded: %v, want %v (the group's leader: %v; kill line %q)", err == nil, tt.term, cmd.ProcessState, l.KillLine(cmd.Process.Pid))
			}
		})
	}
	if !strings.Contains(l.KillLine(7), "-"+strconv.Itoa(7)) {
		t.Error("the kill line does not name the group")
	}
}
