package sshtarget

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtest"
)

const python = "/usr/bin/python3"

// fixture is one sshd plus the client-side files a Target needs.
type fixture struct {
	srv  *sshtest.Server
	keys *sshtest.Keys
	home string
}

func newFixture(t *testing.T, cfg sshtest.Config) *fixture {
	t.Helper()
	if cfg.Keys == nil {
		cfg.Keys = sshtest.NewKeys(t)
	}
	return &fixture{srv: sshtest.Start(t, cfg), keys: cfg.Keys, home: t.TempDir()}
}

// options returns Options that read nothing of the real user's ~/.ssh.
func (f *fixture) options(t *testing.T, knownHosts string) Options {
	t.Helper()
	return Options{
		ConfigFile:      "none",
		KnownHostsFiles: []string{sshtest.WriteFile(t, "known_hosts", knownHosts)},
		AgentSocket:     "none",
		Home:            f.home,
	}
}

// withConfig writes an ssh_config and returns opts reading it.
func withConfig(t *testing.T, opts Options, lines ...string) Options {
	t.Helper()
	opts.ConfigFile = sshtest.WriteFile(t, "ssh_config", strings.Join(lines, "\n")+"\n")
	return opts
}

func (f *fixture) hostBlock(alias string, identity string) []string {
	return []string{
		"Host " + alias,
		"  HostName " + f.srv.Host,
		"  Port " + strconv.Itoa(f.srv.Port),
		"  User " + f.srv.User,
		"  IdentityFile " + identity,
	}
}

func newTarget(t *testing.T, spec remote.Spec, opts Options) *Target {
	t.Helper()
	if spec.Name == "" {
		spec.Name = "test"
	}
	tg, err := New(spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}

// run starts argv, feeds stdin, and returns stdout, stderr and Wait's error.
func run(t *testing.T, tg *Target, argv []string, env map[string]string, stdin string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := tg.Start(ctx, remote.Command{Argv: argv, Env: env})
	if err != nil {
		return "", "", err
	}
	return collect(t, p, stdin)
}

func collect(t *testing.T, p remote.Process, stdin string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	errc := make(chan error, 2)
	go func() { _, err := io.Copy(&stdout, p.Stdout()); errc <- err }()
	go func() { _, err := io.Copy(&stderr, p.Stderr()); errc <- err }()
	if _, err := io.WriteString(p.Stdin(), stdin); err != nil {
		t.Logf("write stdin: %v", err)
	}
	p.Stdin().Close()
	<-errc
	<-errc
	err := p.Wait()
	return stdout.String(), stderr.String(), err
}

// echoArgvEnv prints argv, one environment variable and stdin as JSON.
const echoArgvEnv = `import json,os,sys; print(json.dumps([sys.argv[1:], os.environ.get("TL_SECRET"), sys.stdin.read()]))`

func requirePython(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
}

func TestRunPythonWithConfigAlias(t *testing.T) {
	requirePython(t)
	f := newFixture(t, sshtest.Config{})
	opts := withConfig(t, f.options(t, f.srv.KnownHosts(t, "")), f.hostBlock("gpu", f.keys.Client)...)
	tg := newTarget(t, remote.Spec{SSH: "gpu"}, opts)
	args := []string{"a b", "'", "$(touch /tmp/sshtarget-pwned)", "`id`", "-x", "\n", "日本"}
	out, stderr, err := run(t, tg, append([]string{python, "-c", echoArgvEnv}, args...),
		map[string]string{"TL_SECRET": "s3cr3t 'x' $(y)"}, "from stdin")
	if err != nil {
		t.Fatalf("%v\nstderr: %s\nsshd log:\n%s", err, stderr, f.srv.Log())
	}
	want := `[["a b", "'", "$(touch /tmp/sshtarget-pwned)", "` + "`id`" + `", "-x", "\n", "\u65e5\u672c"], "s3cr3t 'x' $(y)", "from stdin"]`
	if strings.TrimSpace(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, err := os.Stat("/tmp/sshtarget-pwned"); err == nil {
		t.Error("an argument was executed by a shell")
	}
	// The connection is shared: a second command reuses it.
	if _, _, err := run(t, tg, []string{"true"}, nil, ""); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(f.srv.Log(), "Accepted publickey"); n != 1 {
		t.Errorf("%d logins for two commands, want 1 shared connection", n)
	}
	// A failing command reports its exit status.
	_, _, err = run(t, tg, []string{python, "-c", "raise SystemExit(3)"}, nil, "")
	var exitErr *ssh.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 3 {
		t.Errorf("exit error %v, want status 3", err)
	}
}

func TestJumpHostAndExecHop(t *testing.T) {
	requirePython(t)
	keys := sshtest.NewKeys(t)
	final := newFixture(t, sshtest.Config{Keys: keys})
	jump := sshtest.Start(t, sshtest.Config{Keys: keys})
	shim := sshtest.PctShim(t)
	kh := final.srv.KnownHosts(t, "") + jump.KnownHosts(t, "")

	for _, tt := range []struct {
		name string
		spec remote.Spec
		cfg  []string
	}{
		{"spec jump", remote.Spec{SSH: final.srv.User + "@" + final.srv.Addr, Jump: []string{"bastion"}}, nil},
		{"config ProxyJump", remote.Spec{SSH: "gpu"}, []string{"  ProxyJump bastion"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines := append(final.hostBlock("gpu", keys.Client), tt.cfg...)
			lines = append(lines, "Host bastion", "  HostName "+jump.Host, "  Port "+strconv.Itoa(jump.Port),
				"  User "+jump.User, "  IdentityFile "+keys.Client, "Host *", "  IdentityFile "+keys.Client)
			opts := withConfig(t, final.options(t, kh), lines...)
			spec := tt.spec
			spec.Exec = []string{shim, "exec", "200", "--"}
			tg := newTarget(t, spec, opts)
			before := strings.Count(jump.Log(), "direct-tcpip")
			out, stderr, err := run(t, tg, []string{python, "-c", echoArgvEnv, "x"}, map[string]string{"TL_SECRET": "v"}, "in")
			if err != nil {
				t.Fatalf("%v\nstderr: %s", err, stderr)
			}
			if want := `[["x"], "v", "in"]`; strings.TrimSpace(out) != want {
				t.Errorf("got %s, want %s", out, want)
			}
			if strings.Count(jump.Log(), "direct-tcpip") == before {
				t.Errorf("the jump host forwarded nothing; its log:\n%s", jump.Log())
			}
			hops := tg.Hops(context.Background())
			if len(hops) != 2 || hops[0].Err != nil || hops[1].Err != nil || hops[0].Addr != jump.Addr || hops[1].Latency <= 0 ||
				!hops[0].Jump || hops[1].Jump {
				t.Errorf("Hops = %+v", hops)
			}
		})
	}

	// The jump host's own key is checked: unknown there is an error naming it.
	opts := final.options(t, final.srv.KnownHosts(t, ""))
	opts = withConfig(t, opts, "Host *", "  IdentityFile "+keys.Client)
	tg := newTarget(t, remote.Spec{SSH: final.srv.User + "@" + final.srv.Addr, Jump: []string{jump.User + "@" + jump.Addr}}, opts)
	err := tg.Dial(context.Background())
	want := fmt.Sprintf("ssh jump host %s (%s): host key for [%s]:%d is not in known_hosts", jump.Host, jump.Addr, jump.Host, jump.Port)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to contain %q", err, want)
	}
	hops := tg.Hops(context.Background())
	if len(hops) != 1 || hops[0].Err == nil {
		t.Errorf("Hops = %+v, want the jump host to fail", hops)
	}
}

func TestHostKeys(t *testing.T) {
	keys := sshtest.NewKeys(t)
	f := newFixture(t, sshtest.Config{Keys: keys})
	ca := newFixture(t, sshtest.Config{Keys: keys, HostCA: true})
	other := newFixture(t, sshtest.Config{Keys: keys})
	name := func(s *sshtest.Server) string { return knownhosts.Normalize(s.Addr) }

	revoked := ""
	for _, hk := range f.srv.HostKeys {
		revoked += "@revoked * " + sshtest.ReadPublic(t, hk) + "\n"
	}
	hashed := ""
	for _, line := range strings.Split(strings.TrimSpace(f.srv.KnownHosts(t, "")), "\n") {
		_, rest, _ := strings.Cut(line, " ")
		hashed += knownhosts.HashHostname(name(f.srv)) + " " + rest + "\n"
	}
	// Only the RSA key is known: the client must ask for RSA, not fail
	// on the server's preferred ed25519 key as "changed".
	rsaOnly := strings.Split(strings.TrimSpace(f.srv.KnownHosts(t, "")), "\n")[1] + "\n"
	caRevoked := ca.srv.CertAuthority(t, "") + "@revoked * " + sshtest.ReadPublic(t, ca.srv.CA) + "\n"

	for _, tt := range []struct {
		name       string
		fx         *fixture
		knownHosts string
		problem    HostKeyProblem
		wantErr    string
	}{
		{"known", f, f.srv.KnownHosts(t, ""), 0, ""},
		{"hashed", f, hashed, 0, ""},
		{"rsa only", f, rsaOnly, 0, ""},
		{"unknown", f, other.srv.KnownHosts(t, other.srv.Addr), HostKeyUnknown,
			fmt.Sprintf("host key for %s is not in known_hosts: connect once with `ssh -p %d %s@%s` to verify and record it",
				name(f.srv), f.srv.Port, f.srv.User, f.srv.Host)},
		{"changed", f, other.srv.KnownHosts(t, f.srv.Addr), HostKeyChanged,
			fmt.Sprintf("host key for %s CHANGED (possible attack)", name(f.srv))},
		{"revoked", f, revoked + f.srv.KnownHosts(t, ""), HostKeyRevoked, "@revoked"},
		{"cert authority", ca, ca.srv.CertAuthority(t, ""), 0, ""},
		{"cert authority of another host", ca, ca.srv.CertAuthority(t, other.srv.Addr), HostKeyUnknown, "not in known_hosts"},
		{"revoked CA", ca, caRevoked, HostKeyRevoked, "@revoked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := withConfig(t, tt.fx.options(t, tt.knownHosts), "Host *", "  IdentityFile "+keys.Client)
			tg := newTarget(t, remote.Spec{SSH: tt.fx.srv.User + "@" + tt.fx.srv.Addr}, opts)
			err := tg.Dial(context.Background())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("%v\nsshd log:\n%s", err, tt.fx.srv.Log())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
			var hkErr *HostKeyError
			if tt.problem != 0 && (!errors.As(err, &hkErr) || hkErr.Problem != tt.problem) {
				t.Fatalf("error %v: want HostKeyError problem %d", err, tt.problem)
			}
			if tt.problem == HostKeyChanged && !strings.Contains(err.Error(), "ssh-keygen -f ") {
				t.Errorf("changed-key error lacks the ssh-keygen -R hint: %v", err)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	requirePython(t)
	keys := sshtest.NewKeys(t)
	f := newFixture(t, sshtest.Config{Keys: keys})
	kh := f.srv.KnownHosts(t, "")
	for _, tt := range []struct {
		name     string
		identity string // "" means no IdentityFile line: defaults in an empty home
		agent    []string
		wantErr  string
	}{
		{"identity file", keys.Client, nil, ""},
		{"wrong key", keys.Unauthorized, nil, "no key was accepted (tried: " + keys.Unauthorized + ")"},
		{"encrypted without agent", keys.Encrypted, nil,
			"key " + keys.Encrypted + " is encrypted and no ssh-agent holds it: run ssh-add " + keys.Encrypted},
		{"encrypted held by agent", keys.Encrypted, []string{keys.Encrypted}, ""},
		{"agent only", "", []string{keys.Client}, ""},
		{"agent with wrong key", "", []string{keys.Unauthorized}, "no key was accepted (tried: agent key SHA256:"},
		{"nothing at all", "", nil, "no keys: no ssh-agent and no identity file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := f.options(t, kh)
			if tt.identity != "" {
				opts = withConfig(t, opts, "Host *", "  IdentityFile "+tt.identity)
			}
			if tt.agent != nil {
				opts.AgentSocket = sshtest.StartAgent(t, keys.Passphrase, tt.agent...)
			}
			tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + f.srv.Addr}, opts)
			_, _, err := run(t, tg, []string{"true"}, nil, "")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "ssh host 127.0.0.1 ("+f.srv.Addr+")") {
				t.Errorf("error does not name the hop: %v", err)
			}
		})
	}
}

// pgrep lists processes whose command line contains marker.
func pgrep(t *testing.T, marker string) string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-af", marker).Output()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.Contains(l, "pgrep") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func TestKillLeavesNoProcess(t *testing.T) {
	requirePython(t)
	f := newFixture(t, sshtest.Config{})
	shim := sshtest.PctShim(t)
	for _, tt := range []struct {
		name   string
		exec   []string
		cancel bool
	}{
		{"kill", nil, false},
		{"kill through pct", []string{shim, "exec", "200", "--"}, false},
		{"context cancelled", nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := withConfig(t, f.options(t, f.srv.KnownHosts(t, "")), "Host *", "  IdentityFile "+f.keys.Client)
			tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + f.srv.Addr, Exec: tt.exec}, opts)
			marker := fmt.Sprintf("sshtarget-kill-marker-%d-%d", os.Getpid(), time.Now().UnixNano())
			// The child sleeps too, so the whole process group must go.
			code := "import subprocess,sys,time; subprocess.Popen(['/bin/sh','-c','sleep 300; : " + marker + "']); print('up', flush=True); time.sleep(300)"
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := tg.Start(ctx, remote.Command{Argv: []string{python, "-c", code, marker}})
			if err != nil {
				t.Fatal(err)
			}
			line := make([]byte, 3)
			if _, err := io.ReadFull(p.Stdout(), line); err != nil || string(line) != "up\n" {
				t.Fatalf("read %q, %v", line, err)
			}
			// Popen returned after the child's exec, before "up"; on a
			// loaded machine /proc can show the exec a moment later.
			ps := pgrep(t, marker)
			for deadline := time.Now().Add(10 * time.Second); strings.Count(ps, "\n") < 1 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				ps = pgrep(t, marker)
			}
			if strings.Count(ps, "\n") < 1 {
				t.Fatalf("the program and its child are not both running:\n%s", ps)
			}
			if tt.cancel {
				cancel()
			} else if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
				t.Errorf("Wait after Kill = %v", err)
			}
			gone, cancelGone := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancelGone()
			if err := await.Gone(gone, func() []int { return await.Cmdline(marker) }); err != nil {
				t.Fatalf("remote processes still running: %v\n%s", err, pgrep(t, marker))
			}
			if err := p.Kill(); err != nil {
				t.Errorf("second Kill: %v", err)
			}
		})
	}
}

func TestHostileExecNames(t *testing.T) {
	requirePython(t)
	f := newFixture(t, sshtest.Config{})
	shim := sshtest.PctShim(t)
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	opts := withConfig(t, f.options(t, f.srv.KnownHosts(t, "")), "Host *", "  IdentityFile "+f.keys.Client)
	for _, exe := range [][]string{
		{shim, "exec", "200; touch " + pwned, "--"},
		{shim, "exec", "$(touch " + pwned + ")", "--"},
		{shim, "exec", "200\ntouch " + pwned, "--"},
		{shim, "exec", "-200", "--"},
		{"docker", "exec", "-i", "c; touch " + pwned},
		{"kubectl", "exec", "pod", "-c", "`touch " + pwned + "`", "--"},
		{"-oProxyCommand=touch " + pwned},
	} {
		if _, err := New(remote.Spec{Name: "t", SSH: f.srv.User + "@" + f.srv.Addr, Exec: exe}, opts); err == nil {
			t.Errorf("exec %q accepted", exe)
		}
	}
	// Hops of unknown programs are not validated by name, but stay inert.
	tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + f.srv.Addr, Exec: []string{"env", "X=; touch " + pwned}}, opts)
	out, stderr, err := run(t, tg, []string{python, "-c", "import os; print(os.environ['X'])"}, nil, "")
	if err != nil || strings.TrimSpace(out) != "; touch "+pwned {
		t.Errorf("got %q %v, stderr %s", out, err, stderr)
	}
	// Hostile argv reaches the program as data.
	_, _, err = run(t, tg, []string{python, "-c", "pass", "; touch " + pwned, "$(touch " + pwned + ")", "`touch " + pwned + "`"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("a hostile name was executed")
	}
}

func TestCutConnectionThenReconnect(t *testing.T) {
	requirePython(t)
	f := newFixture(t, sshtest.Config{})
	proxy := sshtest.NewProxy(t, f.srv.Addr)
	opts := withConfig(t, f.options(t, f.srv.KnownHosts(t, proxy.Addr)), "Host *", "  IdentityFile "+f.keys.Client)
	tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + proxy.Addr}, opts)
	p, err := tg.Start(context.Background(), remote.Command{Argv: []string{python, "-c", "import sys; print('up', flush=True); sys.stdin.read()"}})
	if err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 3)
	if _, err := io.ReadFull(p.Stdout(), line); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	err = p.Wait()
	if err == nil || !strings.Contains(err.Error(), "connection lost") || !strings.Contains(err.Error(), proxy.Addr) {
		t.Fatalf("Wait after cut = %v, want a lost connection naming the host", err)
	}
	out, _, err := run(t, tg, []string{python, "-c", "print('again')"}, nil, "")
	if err != nil || strings.TrimSpace(out) != "again" {
		t.Fatalf("after reconnect: %q %v", out, err)
	}
}

func TestKeepaliveDetectsDeadLink(t *testing.T) {
	requirePython(t)
	f := newFixture(t, sshtest.Config{})
	proxy := sshtest.NewProxy(t, f.srv.Addr)
	opts := withConfig(t, f.options(t, f.srv.KnownHosts(t, proxy.Addr)), "Host *", "  IdentityFile "+f.keys.Client)
	opts.KeepaliveInterval = 100 * time.Millisecond
	opts.KeepaliveTimeout = 300 * time.Millisecond
	tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + proxy.Addr}, opts)
	p, err := tg.Start(context.Background(), remote.Command{Argv: []string{python, "-c", "import sys; print('up', flush=True); sys.stdin.read()"}})
	if err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 3)
	if _, err := io.ReadFull(p.Stdout(), line); err != nil {
		t.Fatal(err)
	}
	proxy.Freeze()
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "keepalive") {
			t.Fatalf("Wait on a dead link = %v, want a keepalive failure", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a dead link was not detected")
	}
	proxy.Thaw()
	proxy.Cut() // drop the stale frozen connection on the server side
	out, _, err := run(t, tg, []string{python, "-c", "print('again')"}, nil, "")
	if err != nil || strings.TrimSpace(out) != "again" {
		t.Fatalf("after reconnect: %q %v", out, err)
	}
}

func TestSessionLimitKeepsResidentChannel(t *testing.T) {
	f := newFixture(t, sshtest.Config{})
	opts := withConfig(t, f.options(t, f.srv.KnownHosts(t, "")), "Host *", "  IdentityFile "+f.keys.Client)
	opts.MaxSessions = 2
	tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + f.srv.Addr}, opts)
	ctx := context.Background()
	var held []remote.Process
	for i := 0; i < 2; i++ {
		p, err := tg.Start(ctx, remote.Command{Argv: []string{"cat"}})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := tg.Start(short, remote.Command{Argv: []string{"true"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third Start = %v, want it to wait for a channel", err)
	}
	helper, err := tg.StartResident(ctx, remote.Command{Argv: []string{"cat"}})
	if err != nil {
		t.Fatalf("resident start starved: %v", err)
	}
	if _, _, err := collect(t, helper, "x"); err != nil {
		t.Fatal(err)
	}
	held[0].Stdin().Close()
	if err := held[0].Wait(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, tg, []string{"true"}, nil, ""); err != nil {
		t.Fatalf("Start after a channel freed: %v", err)
	}
	held[1].Kill()
}

func TestReconnectBacksOff(t *testing.T) {
	f := newFixture(t, sshtest.Config{})
	opts := withConfig(t, f.options(t, f.srv.KnownHosts(t, "")), "Host *", "  IdentityFile "+f.keys.Client)
	tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + f.srv.Addr}, opts)
	f.srv.Stop()
	ctx := context.Background()
	if err := tg.Dial(ctx); err == nil || !strings.Contains(err.Error(), "connect: ") {
		t.Fatalf("Dial to a stopped server = %v", err)
	}
	// Right after a failure the next attempt waits out the backoff.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := tg.Dial(short); err == nil || !strings.Contains(err.Error(), "before reconnecting") {
		t.Fatalf("Dial during backoff = %v", err)
	}
	f.srv.Restart(t)
	if _, _, err := run(t, tg, []string{"true"}, nil, ""); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

func TestCloseKillsProcesses(t *testing.T) {
	f := newFixture(t, sshtest.Config{})
	opts := withConfig(t, f.options(t, f.srv.KnownHosts(t, "")), "Host *", "  IdentityFile "+f.keys.Client)
	tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + f.srv.Addr}, opts)
	p, err := tg.Start(context.Background(), remote.Command{Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	tg.Close()
	if err := p.Wait(); err == nil {
		t.Error("Wait after Close = nil, want killed")
	}
	if _, err := tg.Start(context.Background(), remote.Command{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Start after Close = %v", err)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	f := &fixture{keys: sshtest.NewKeys(b), home: b.TempDir()}
	f.srv = sshtest.Start(b, sshtest.Config{Keys: f.keys})
	tg, err := New(remote.Spec{Name: "bench", SSH: f.srv.User + "@" + f.srv.Addr}, Options{
		ConfigFile: sshtest.WriteFile(b, "cfg", "Host *\n IdentityFile "+f.keys.Client+"\n"), AgentSocket: "none", Home: f.home,
		KnownHostsFiles: []string{sshtest.WriteFile(b, "kh", f.srv.KnownHosts(b, ""))}})
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	ctx := context.Background()
	if err := tg.Dial(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("true", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := tg.Start(ctx, remote.Command{Argv: []string{"true"}})
			if err != nil {
				b.Fatal(err)
			}
			p.Stdin().Close()
			if err := p.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stdout-10MB", func(b *testing.B) {
		const size = 10 << 20
		b.ReportAllocs()
		b.SetBytes(size)
		for b.Loop() {
			p, err := tg.Start(ctx, remote.Command{Argv: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}})
			if err != nil {
				b.Fatal(err)
			}
			p.Stdin().Close()
			go io.Copy(io.Discard, p.Stderr())
			n, err := io.Copy(io.Discard, p.Stdout())
			if err != nil || n != size {
				b.Fatalf("read %d bytes: %v", n, err)
			}
			if err := p.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
