package hops

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/remote/sshtest"
)

// hopSet says which exec-hop environments a topology starts on the GPU host.
type hopSet struct {
	lxc, docker, slurm bool
}

// topology is one test's set of hosts: the client (this process, in the
// root network namespace), the relay that gives the link a WAN's delay and
// rate, the bastion, and the GPU host reachable only through the bastion,
// with whatever exec hops the test asked for.
type topology struct {
	t      testing.TB
	repo   string
	prefix string            // every name the run makes starts with it
	run    string            // the run's state directory
	net    map[string]string // net.sh's addresses
	hopEnv map[string]string // what the hop scripts printed: SLURM_CONF, DOCKER_HOST, LXC_PATH

	keys         *sshtest.Keys
	bastion, gpu *host
	relay        *sshtest.Proxy // in front of the bastion
	knownHosts   string         // both hosts, the bastion under the relay's address
}

// newTopology builds a topology for t and tears it down when t ends,
// whatever happens in between (net.sh down stops every daemon of the run
// and deletes its namespaces; a test binary killed outright is swept by
// the next run).
func newTopology(t *testing.T, w hopSet) *topology {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the hop tests build hosts, containers and a Slurm cluster")
	}
	if os.Geteuid() != 0 {
		t.Skip("the hop tests need root (network namespaces, LXC, dockerd, Slurm)")
	}
	sshtest.RequireOpenSSH(t)
	for _, prog := range []string{"ip", "nsenter", "flock"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed: run scripts/setup.sh --test", prog)
		}
	}
	need := map[string]bool{"lxc-start": w.lxc, "debootstrap": w.lxc || w.docker, "dockerd": w.docker, "slurmctld": w.slurm, "munged": w.slurm}
	for prog, needed := range need {
		if _, err := exec.LookPath(prog); needed && err != nil {
			t.Skipf("%s is not installed: run scripts/setup.sh --test (it installs lxc, docker.io, slurm-wlm, munge and debootstrap)", prog)
		}
	}
	tp := &topology{t: t, repo: repoRoot(t), hopEnv: map[string]string{}}
	tp.prefix = "tlh" + runID()
	tp.run = filepath.Join(hopsRun(), tp.prefix)

	// Leftovers of runs whose test binary was killed.
	if _, err := tp.script(2*time.Minute, "net.sh", "sweep"); err != nil {
		t.Fatalf("sweep old runs: %v", err)
	}
	out, err := tp.script(time.Minute, "net.sh", "up", tp.prefix, strconv.Itoa(os.Getpid()))
	t.Cleanup(func() {
		if _, err := tp.script(3*time.Minute, "net.sh", "down", tp.prefix); err != nil {
			t.Errorf("tear down run %s: %v", tp.prefix, err)
		}
	})
	if err != nil {
		if strings.Contains(err.Error(), "not permitted") {
			t.Skipf("this machine cannot create network namespaces: %v", err)
		}
		t.Fatalf("network: %v", err)
	}
	tp.net = parseEnv(out)
	if err := os.MkdirAll(filepath.Join(tp.run, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Images are built once and cached; the first build takes minutes.
	for _, h := range []struct {
		on     bool
		script string
		limit  time.Duration
	}{{w.slurm, "slurm.sh", time.Minute}, {w.lxc, "lxc.sh", 15 * time.Minute}, {w.docker, "docker.sh", 15 * time.Minute}} {
		if !h.on {
			continue
		}
		out, err := tp.script(h.limit, h.script, "up", tp.prefix)
		if err != nil {
			t.Fatalf("%s: %v", h.script, err)
		}
		for k, v := range parseEnv(out) {
			tp.hopEnv[k] = v
		}
	}

	tp.keys = sshtest.NewKeys(t)
	tp.bastion = tp.startHost("bastion", tp.net["NS_BASTION"], tp.net["ADDR_BASTION"], nil)
	setEnv := []string{"PATH=" + filepath.Join(tp.run, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, k := range []string{"SLURM_CONF", "DOCKER_HOST"} {
		if v := tp.hopEnv[k]; v != "" {
			setEnv = append(setEnv, k+"="+v)
		}
	}
	tp.gpu = tp.startHost("gpu", tp.net["NS_GPU"], tp.net["ADDR_GPU"], setEnv)
	tp.relay = sshtest.NewProxy(t, tp.bastion.addr)
	tp.relay.SetLink(sshtest.WAN)
	tp.knownHosts = tp.bastion.knownHost(t, tp.relay.Addr) + tp.gpu.knownHost(t, tp.gpu.addr)
	return tp
}

// runID is unique to this run: the process id and a random part, in the
// few characters an interface name leaves.
func runID() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	id := strconv.FormatInt(int64(os.Getpid())%(36*36*36*36), 36) + fmt.Sprintf("%04x", b)
	return id[:min(len(id), 8)]
}

// hopsRun is where the scripts keep each run's state.
func hopsRun() string {
	if d := os.Getenv("TORCHLSP_HOPS_RUN"); d != "" {
		return d
	}
	return "/run/torchlsp-hops"
}

func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// script runs scripts/hops/NAME with a deadline and returns its stdout; an
// error carries its stderr.
func (tp *topology) script(limit time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(tp.repo, "scripts", "hops", name), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The daemons the scripts start must not hold the test's pipes.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("scripts/hops/%s %s: %w\n%s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// parseEnv reads NAME=VALUE lines.
func parseEnv(s string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			m[k] = v
		}
	}
	return m
}

// onGPU runs a command on the GPU host (in its network namespace, with the
// environment its sshd gives sessions) and returns its combined output.
func (tp *topology) onGPU(limit time.Duration, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=/run/netns/" + tp.net["NS_GPU"], "--"}, argv...)...)
	cmd.Env = append(os.Environ(), tp.gpu.setEnv...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("on the GPU host: %q: %w: %s", argv, err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// host is one host's sshd, in its network namespace, with its own host key.
type host struct {
	t      testing.TB
	name   string
	ns     string
	addr   string // ip:22
	dir    string
	key    string // the host key
	log    string
	conf   string
	setEnv []string // environment sshd gives every session

	cmd  *exec.Cmd
	done chan struct{}
}

func (tp *topology) startHost(name, ns, ip string, setEnv []string) *host {
	t := tp.t
	t.Helper()
	h := &host{t: t, name: name, ns: ns, addr: net.JoinHostPort(ip, "22"), dir: t.TempDir(), setEnv: setEnv}
	h.key = filepath.Join(h.dir, "ssh_host_ed25519_key")
	h.log = filepath.Join(h.dir, "sshd.log")
	h.conf = filepath.Join(h.dir, "sshd_config")
	keygen := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", h.key)
	if out, err := keygen.CombinedOutput(); err != nil {
		t.Fatalf("host key for %s: %v\n%s", name, err, out)
	}
	auth := filepath.Join(h.dir, "authorized_keys")
	if err := os.WriteFile(auth, []byte(sshtest.ReadPublic(t, tp.keys.Client)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		"Port 22",
		"ListenAddress " + ip,
		"HostKey " + h.key,
		"AuthorizedKeysFile " + auth,
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"PidFile none",
		"PermitRootLogin yes",
		"AllowTcpForwarding yes",
		"MaxSessions 30",
		"MaxStartups 60",
		"LogLevel VERBOSE",
	}
	if len(setEnv) > 0 {
		lines = append(lines, "SetEnv "+strings.Join(setEnv, " "))
	}
	if err := os.WriteFile(h.conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.start(); err != nil {
		t.Fatalf("sshd on %s: %v", name, err)
	}
	t.Cleanup(h.stop)
	return h
}

// start runs sshd in the host's namespace and waits until it listens.
func (h *host) start() error {
	_ = os.Remove(h.log)
	cmd := exec.Command("nsenter", "--net=/run/netns/"+h.ns, "--", "/usr/sbin/sshd", "-D", "-e", "-f", h.conf, "-E", h.log)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sshd: %w", err)
	}
	h.cmd, h.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(h.done) }()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	go func() {
		select {
		case <-h.done: // no log line will come
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := await.File(ctx, h.log, func(b []byte) bool { return strings.Contains(string(b), "Server listening on") }); err == nil {
		return nil
	}
	select {
	case <-h.done:
		return fmt.Errorf("sshd exited: %s", h.readLog())
	default:
	}
	h.stop()
	return fmt.Errorf("sshd did not listen within 15 s: %s", h.readLog())
}

func (h *host) readLog() string {
	b, _ := os.ReadFile(h.log)
	return string(b)
}

// stop kills the listening sshd; sessions live on.
func (h *host) stop() {
	if h.cmd == nil || h.cmd.Process == nil {
		return
	}
	select {
	case <-h.done:
	default:
		_ = h.cmd.Process.Kill()
		<-h.done
	}
}

// crash is a reboot as far as SSH goes: the listener and every session
// process of the host die at once, so that every connection through it
// breaks.
func (h *host) crash(t testing.TB) {
	t.Helper()
	h.stop()
	out, err := exec.Command("ip", "netns", "pids", h.ns).Output()
	if err != nil {
		t.Fatalf("processes of %s: %v", h.ns, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
}

// knownHost is the host's known_hosts line as seen at addr.
func (h *host) knownHost(t testing.TB, addr string) string {
	fields := strings.Fields(sshtest.ReadPublic(t, h.key))
	host, port, _ := net.SplitHostPort(addr)
	name := host
	if port != "22" {
		name = "[" + host + "]:" + port
	}
	return name + " " + fields[0] + " " + fields[1] + "\n"
}

// listeners are the sshd processes the topology itself runs.
func (tp *topology) listeners() []int {
	var pids []int
	for _, h := range []*host{tp.bastion, tp.gpu} {
		if h != nil && h.cmd != nil && h.cmd.Process != nil {
			pids = append(pids, h.cmd.Process.Pid)
		}
	}
	return pids
}

// chain is one way to the interpreter: ssh through the bastion to the GPU
// host, then an exec hop.
type chain struct {
	name   string
	needs  hopSet
	exec   []string
	python string
	// What the target's interpreter and torch are.
	pyVersion    string // e.g. "3.11"
	torchVersion string // a prefix of torch.__version__
	torchDir     string // torch's package directory on the target
}

const debianTorch = "/usr/lib/python3/dist-packages/torch"

// chains are every chain the tests drive.
var chains = []chain{
	{name: "ssh+jump", python: "/usr/bin/python3", pyVersion: "3.11", torchVersion: "1.13", torchDir: debianTorch},
	{name: "pct exec (LXC)", needs: hopSet{lxc: true}, exec: []string{"pct", "exec", "200", "--"},
		python: "/usr/bin/python3", pyVersion: "3.11", torchVersion: "1.13", torchDir: debianTorch},
	{name: "docker exec", needs: hopSet{docker: true}, exec: []string{"docker", "exec", "-i", "trainer"},
		python: "/usr/bin/python3", pyVersion: "3.9", torchVersion: "1.10.2+torch39", torchDir: "/usr/local/lib/python3.9/dist-packages/torch"},
	{name: "srun (Slurm)", needs: hopSet{slurm: true}, exec: []string{"srun", "-p", "debug", "--"},
		python: "/usr/bin/python3", pyVersion: "3.11", torchVersion: "1.13", torchDir: debianTorch},
	{name: "kubectl exec (stand-in over docker)", needs: hopSet{docker: true}, exec: []string{"kubectl", "exec", "-i", "-n", "ml", "trainer-0", "-c", "pytorch", "--"},
		python: "/usr/bin/python3", pyVersion: "3.9", torchVersion: "1.10.2+torch39", torchDir: "/usr/local/lib/python3.9/dist-packages/torch"},
}

// chainNamed returns the chain whose name starts with prefix.
func chainNamed(t testing.TB, prefix string) chain {
	for _, c := range chains {
		if strings.HasPrefix(c.name, prefix) {
			return c
		}
	}
	t.Fatalf("no chain %q", prefix)
	return chain{}
}

// all is every hop environment.
var all = hopSet{lxc: true, docker: true, slurm: true}

// gpuDest and jumpDest are the hosts as a user's settings name them.
func (tp *topology) gpuDest() string  { return "root@" + tp.net["ADDR_GPU"] }
func (tp *topology) jumpDest() string { return "root@" + tp.relay.Addr }

// spec is the chain's target named gpu.
func (tp *topology) spec(c chain, env map[string]string) remote.Spec {
	return remote.Spec{Name: "gpu", SSH: tp.gpuDest(), Jump: []string{tp.jumpDest()}, Exec: c.exec, Python: c.python, Env: env}
}

// settings are the editor settings for the chain's target.
func (tp *topology) settings(c chain, env map[string]string) json.RawMessage {
	gpu := map[string]any{"ssh": tp.gpuDest(), "jump": []string{tp.jumpDest()}, "python": c.python}
	if c.exec != nil {
		gpu["exec"] = c.exec
	}
	if env != nil {
		gpu["env"] = env
	}
	b, err := json.Marshal(map[string]any{"defaultTarget": "gpu", "targets": map[string]any{"gpu": gpu}})
	if err != nil {
		tp.t.Fatal(err)
	}
	return b
}

// options read no real user file: their own ssh_config, known_hosts and
// no agent; keepalives short, so that a dead link is noticed quickly.
func (tp *topology) options(t testing.TB) sshtarget.Options {
	return sshtarget.Options{
		ConfigFile:        sshtest.WriteFile(t, "ssh_config", "Host *\n  IdentityFile "+tp.keys.Client+"\n  IdentitiesOnly yes\n"),
		KnownHostsFiles:   []string{sshtest.WriteFile(t, "known_hosts", tp.knownHosts)},
		AgentSocket:       "none",
		Home:              t.TempDir(),
		KeepaliveInterval: 2 * time.Second,
		KeepaliveTimeout:  6 * time.Second,
	}
}

// cliEnv makes a home for the real binary, as a user would set it up: the
// hosts in ~/.ssh/config (the GPU host behind ProxyJump bastion), their
// keys in ~/.ssh/known_hosts, the chain's target in
// ~/.config/torchlsp/config.toml; no agent.
func (tp *topology) cliEnv(t testing.TB, c chain) []string {
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
	relayHost, relayPort, _ := net.SplitHostPort(tp.relay.Addr)
	write(".ssh/config", fmt.Sprintf(`Host bastion
  HostName %s
  Port %s
  User root
Host gpu-host
  HostName %s
  User root
  ProxyJump bastion
Host *
  IdentityFile %s
  IdentitiesOnly yes
`, relayHost, relayPort, tp.net["ADDR_GPU"], tp.keys.Client))
	write(".ssh/known_hosts", tp.knownHosts)
	q := strconv.Quote
	target := fmt.Sprintf("default = \"gpu\"\n[targets.gpu]\nssh = \"gpu-host\"\npython = %s\n", q(c.python))
	if c.exec != nil {
		words := make([]string, len(c.exec))
		for i, w := range c.exec {
			words[i] = q(w)
		}
		target += "exec = [" + strings.Join(words, ", ") + "]\n"
	}
	write(".config/torchlsp/config.toml", target)
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "SSH_AUTH_SOCK" && !strings.HasPrefix(k, "XDG_") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home)
}

// TestTopology checks the topology itself: the GPU host cannot be reached
// from the client, only through the bastion; the bastion's link has the
// WAN's delay; every host has its own host key; and tearing down leaves
// no namespace behind.
func TestTopology(t *testing.T) {
	t.Parallel()
	var prefix string
	t.Run("up", func(t *testing.T) {
		tp := newTopology(t, hopSet{})
		prefix = tp.prefix
		// The client has no link to the GPU host: no address on its
		// subnet, and its route there is not the topology's. (Nothing is
		// dialled: that route leaves the machine.)
		route, err := exec.Command("ip", "-o", "route", "get", tp.net["ADDR_GPU"]).CombinedOutput()
		if err == nil && strings.Contains(string(route), tp.prefix) {
			t.Errorf("the client routes to the GPU host through the topology: %s", route)
		}
		if out, err := exec.Command("ip", "-o", "-4", "addr").Output(); err != nil || strings.Contains(string(out), " "+tp.net["ADDR_BASTION_IN"]+"/") {
			t.Errorf("the client has an address on the GPU host's link (%v): %s", err, out)
		}
		// The bastion reaches it.
		if out, err := exec.Command("nsenter", "--net=/run/netns/"+tp.net["NS_BASTION"], "--", "bash", "-c",
			"exec 3<>/dev/tcp/"+tp.net["ADDR_GPU"]+"/22 && head -c 8 <&3").CombinedOutput(); err != nil || string(out) != "SSH-2.0-" {
			t.Errorf("the bastion does not reach the GPU host's sshd: %q, %v", out, err)
		}
		start := time.Now()
		c, err := net.DialTimeout("tcp", tp.relay.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "SSH-2.0-") {
			t.Fatalf("bastion banner through the relay: %q, %v", line, err)
		}
		if d := time.Since(start); d < sshtest.WAN.Delay {
			t.Errorf("banner through the relay after %v, want at least the link's one-way delay %v", d, sshtest.WAN.Delay)
		}
		if tp.bastion.knownHost(t, "x:22") == tp.gpu.knownHost(t, "x:22") {
			t.Error("bastion and GPU host share a host key")
		}
		// ssh itself, through the bastion to the GPU host, as a user would.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cfg := sshtest.WriteFile(t, "ssh_config", "Host *\n  IdentityFile "+tp.keys.Client+"\n  IdentitiesOnly yes\n  BatchMode yes\n"+
			"  StrictHostKeyChecking yes\n  UserKnownHostsFile "+sshtest.WriteFile(t, "known_hosts", tp.knownHosts)+"\n")
		ssh := exec.CommandContext(ctx, "ssh", "-F", cfg, "-J", tp.jumpDest(), tp.gpuDest(), "ip -4 -o addr show; echo PATH=$PATH")
		out, err := ssh.CombinedOutput()
		if err != nil {
			t.Fatalf("ssh through the bastion: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), " "+tp.net["ADDR_GPU"]+"/") {
			t.Errorf("the session through the bastion is not on the GPU host: %s", out)
		}
		if !strings.Contains(string(out), filepath.Join(tp.run, "bin")+":") {
			t.Errorf("the GPU host's sessions lack the hop programs on PATH: %s", out)
		}
	})
	if prefix == "" {
		return // skipped
	}
	for _, ns := range []string{prefix + "-bastion", prefix + "-gpu"} {
		if _, err := os.Stat("/run/netns/" + ns); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s is left after the test: %v", ns, err)
		}
	}
	if _, err := os.Stat(filepath.Join(hopsRun(), prefix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory of %s is left after the test: %v", prefix, err)
	}
}
