// Package sshtest starts real OpenSSH servers on loopback for tests: host
// and client keys made by ssh-keygen, known_hosts lines, a TCP proxy that
// can cut or freeze links, and a `pct` shim for container exec hops.
// Nothing here is faked: sshd, the shells it runs and the shim are real.
package sshtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SSHD is the OpenSSH server binary; sshd requires an absolute path.
const SSHD = "/usr/sbin/sshd"

// RequireOpenSSH skips the test when sshd or ssh-keygen is missing.
func RequireOpenSSH(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(SSHD); err != nil {
		t.Skipf("OpenSSH server not installed (%s missing): apt-get install openssh-server", SSHD)
	}
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not on PATH: apt-get install openssh-client")
	}
}

// Keys are client keys shared by the servers of one test.
type Keys struct {
	Dir string
	// Client is an unencrypted ed25519 private key every server accepts.
	Client string
	// Encrypted is a passphrase-protected ed25519 key every server accepts.
	Encrypted  string
	Passphrase string
	// Unauthorized is a key no server accepts.
	Unauthorized string
}

// NewKeys generates the client keys with ssh-keygen.
func NewKeys(t testing.TB) *Keys {
	t.Helper()
	RequireOpenSSH(t)
	dir := t.TempDir()
	k := &Keys{
		Dir:          dir,
		Client:       filepath.Join(dir, "id_ed25519"),
		Encrypted:    filepath.Join(dir, "id_encrypted"),
		Passphrase:   "correct horse battery staple",
		Unauthorized: filepath.Join(dir, "id_unauthorized"),
	}
	keygen(t, "-t", "ed25519", "-N", "", "-C", "client", "-f", k.Client)
	keygen(t, "-t", "ed25519", "-N", k.Passphrase, "-C", "encrypted", "-f", k.Encrypted)
	keygen(t, "-t", "ed25519", "-N", "", "-C", "unauthorized", "-f", k.Unauthorized)
	return k
}

// keygen runs ssh-keygen quietly.
func keygen(t testing.TB, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ssh-keygen", append([]string{"-q"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen %q: %v\n%s", args, err, out)
	}
}

// ReadPublic returns the contents of path.pub without the trailing newline.
func ReadPublic(t testing.TB, private string) string {
	t.Helper()
	b, err := os.ReadFile(private + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Config configures a Server.
type Config struct {
	// Keys are the client keys to authorize; nil generates fresh ones.
	Keys *Keys
	// HostCA signs the server's host keys with a fresh CA, for
	// @cert-authority tests; the CA is Server.CA.
	HostCA bool
	// ExtraConfig lines are appended to sshd_config.
	ExtraConfig []string
}

// Server is a running sshd on 127.0.0.1.
type Server struct {
	Addr    string // 127.0.0.1:port
	Host    string
	Port    int
	User    string // the user the tests log in as: the current user
	Dir     string
	Keys    *Keys
	LogFile string
	// HostKeys are the private host key paths (ed25519, rsa).
	HostKeys []string
	// CA is the private key that signed the host keys, when Config.HostCA.
	CA string

	cmd      *exec.Cmd
	done     chan struct{}
	authFile string
	cfg      Config
}

// Start starts sshd with a generated configuration and stops it when the
// test ends.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	RequireOpenSSH(t)
	if cfg.Keys == nil {
		cfg.Keys = NewKeys(t)
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("create /run/sshd: %v", err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &Server{Host: "127.0.0.1", User: u.Username, Dir: dir, Keys: cfg.Keys, LogFile: filepath.Join(dir, "sshd.log")}
	for _, kt := range []string{"ed25519", "rsa"} {
		p := filepath.Join(dir, "ssh_host_"+kt+"_key")
		args := []string{"-t", kt, "-N", "", "-C", "host", "-f", p}
		if kt == "rsa" {
			args = append(args, "-b", "2048")
		}
		keygen(t, args...)
		s.HostKeys = append(s.HostKeys, p)
	}
	if cfg.HostCA {
		s.CA = filepath.Join(dir, "host_ca")
		keygen(t, "-t", "ed25519", "-N", "", "-C", "host-ca", "-f", s.CA)
		for _, hk := range s.HostKeys {
			keygen(t, "-s", s.CA, "-I", "sshtest-host", "-h", "-n", s.Host, "-V", "-5m:+1d", hk+".pub")
		}
	}
	auth := ReadPublic(t, cfg.Keys.Client) + "\n" + ReadPublic(t, cfg.Keys.Encrypted) + "\n"
	authFile := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authFile, []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}

	s.authFile, s.cfg = authFile, cfg
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.Port = port
		s.Addr = net.JoinHostPort(s.Host, strconv.Itoa(port))
		if lastErr = s.launch(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("start sshd: %v\nlog:\n%s", lastErr, s.Log())
	return nil
}

// Restart starts a stopped server again on the same port, with the same
// keys.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.launch(); err != nil {
		t.Fatalf("restart sshd: %v\nlog:\n%s", err, s.Log())
	}
}

func (s *Server) launch() error {
	authFile, cfg := s.authFile, s.cfg
	lines := []string{
		"Port " + strconv.Itoa(s.Port),
		"ListenAddress " + s.Host,
		"AuthorizedKeysFile " + authFile,
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"PidFile none",
		"PermitRootLogin yes",
		"AllowTcpForwarding yes",
		"AllowAgentForwarding yes",
		"MaxSessions 10",
		"LogLevel DEBUG1",
		"Subsystem sftp internal-sftp",
	}
	for _, hk := range s.HostKeys {
		lines = append(lines, "HostKey "+hk)
		if s.CA != "" {
			lines = append(lines, "HostCertificate "+hk+"-cert.pub")
		}
	}
	lines = append(lines, cfg.ExtraConfig...)
	conf := filepath.Join(s.Dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	_ = os.Remove(s.LogFile)
	cmd := exec.Command(SSHD, "-D", "-e", "-f", conf, "-E", s.LogFile)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", SSHD, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("sshd exited early: %s", strings.TrimSpace(s.Log()))
		default:
		}
		if banner(s.Addr) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return errors.New("sshd did not answer within 15s")
}

// banner reports whether an SSH server answers on addr.
func banner(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "SSH-2.0-")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop kills the listening sshd. Connections already accepted live on in
// their own sshd processes until their clients leave; cut those with a Proxy.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Log returns sshd's log so far, for failure messages.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.LogFile)
	return string(b)
}

// KnownHosts returns known_hosts lines for the server's host keys as seen
// at addr ("" means Server.Addr), in the [host]:port form.
func (s *Server) KnownHosts(t testing.TB, addr string) string {
	t.Helper()
	if addr == "" {
		addr = s.Addr
	}
	var b strings.Builder
	for _, hk := range s.HostKeys {
		fields := strings.Fields(ReadPublic(t, hk))
		fmt.Fprintf(&b, "%s %s %s\n", knownHostsName(addr), fields[0], fields[1])
	}
	return b.String()
}

// CertAuthority returns the @cert-authority line trusting the host CA for
// addr ("" means Server.Addr).
func (s *Server) CertAuthority(t testing.TB, addr string) string {
	t.Helper()
	if s.CA == "" {
		t.Fatal("server started without HostCA")
	}
	if addr == "" {
		addr = s.Addr
	}
	fields := strings.Fields(ReadPublic(t, s.CA))
	return fmt.Sprintf("@cert-authority %s %s %s\n", knownHostsName(addr), fields[0], fields[1])
}

// knownHostsName writes host:port as known_hosts does: bare for port 22.
func knownHostsName(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "22" {
		return addr
	}
	return "[" + host + "]:" + port
}

// WriteFile writes content to a new file in the test's temp dir.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pctShim behaves like Proxmox's `pct exec VMID -- argv...` for a
// container that is the host itself: it checks its arguments and execs
// argv directly, without a shell, as pct does.
const pctShim = `#!/bin/sh
if [ "$1" != exec ]; then echo "pct: only 'exec' is supported, got '$1'" >&2; exit 2; fi
case "$2" in ''|*[!0-9]*) echo "pct: invalid VMID '$2'" >&2; exit 2;; esac
if [ "$3" != "--" ]; then echo "pct: want '--' after the VMID" >&2; exit 2; fi
shift 3
if [ $# -eq 0 ]; then echo "pct: no command" >&2; exit 2; fi
exec "$@"
`

// PctShim writes the pct shim to a temp dir and returns its absolute path,
// whose base name is "pct" so that hop validation treats it as pct.
func PctShim(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pct")
	if err := os.WriteFile(p, []byte(pctShim), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
