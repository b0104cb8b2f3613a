// Package sshtarget runs commands on a remote.Target reached over SSH,
// through jump hosts and container exec hops, behaving like OpenSSH:
// ~/.ssh/config, ssh-agent and identity files, known_hosts on every hop.
// One SSH connection per target is shared by all commands; each command
// is a session channel on it.
package sshtarget

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/shquote"
)

// Options tune a Target. The zero value behaves like OpenSSH for the
// current user.
type Options struct {
	// ConfigFile is the ssh_config to read; "" means ~/.ssh/config and
	// "none" reads none.
	ConfigFile string
	// KnownHostsFiles replace the files from ssh_config
	// (UserKnownHostsFile, default ~/.ssh/known_hosts) and
	// /etc/ssh/ssh_known_hosts.
	KnownHostsFiles []string
	// AgentSocket is the ssh-agent socket; "" means $SSH_AUTH_SOCK and
	// "none" uses no agent.
	AgentSocket string
	// Home is the local home directory for ~ and default key paths; ""
	// means the current user's.
	Home string
	// MaxSessions bounds concurrent commands on the shared connection
	// (default 3); resident commands have one more channel of their own,
	// so the total stays under sshd's MaxSessions (default 10).
	MaxSessions int
	// KeepaliveInterval is the time between keepalive@openssh.com
	// requests (default 15s; ServerAliveInterval from ssh_config wins
	// when set there). KeepaliveTimeout is how long a reply may take
	// before the link is declared dead and closed (default: the interval).
	KeepaliveInterval, KeepaliveTimeout time.Duration
	// ConnectTimeout bounds each hop's TCP connect and SSH handshake
	// (default 20s; ConnectTimeout from ssh_config wins when set there).
	ConnectTimeout time.Duration
	// Logger receives connection events; nil logs nothing. Environment
	// values and command lines are never logged.
	Logger *zap.Logger
}

const (
	defaultMaxSessions    = 3
	defaultKeepalive      = 15 * time.Second
	defaultConnectTimeout = 20 * time.Second
	backoffMin            = 500 * time.Millisecond
	backoffMax            = 30 * time.Second
)

// hop is one SSH server on the way to the target, fully resolved.
type hop struct {
	label          string // "ssh jump host bastion (10.0.0.1:22)" / "ssh host gpu (...)"
	name           string // as the user wrote it
	addr           string // host:port dialled
	user           string
	identities     []string
	identitiesOnly bool
	knownHosts     []string
	verify         string // the OpenSSH command that records this hop's host key
	connectTimeout time.Duration
}

// Target is a remote.Target over SSH. It is safe for concurrent use.
type Target struct {
	spec      remote.Spec
	hops      []hop // jump hosts in order, then the target host
	execHop   []shquote.Hop
	agentSock string
	home      string
	keepalive time.Duration
	kaTimeout time.Duration
	log       *zap.Logger

	dialLock chan struct{} // one dial at a time; a channel so waiting honours ctx
	sessions chan struct{} // permits for ordinary commands
	resident chan struct{} // the permit reserved for resident commands

	mu       sync.Mutex
	conn     *conn
	closed   bool
	failures int
	retryAt  time.Time
	procs    map[*process]struct{}
}

var _ remote.Target = (*Target)(nil)

// New resolves spec against ssh_config and returns a Target; it does not
// connect (see Dial). spec.SSH is "user@host[:port]", an ssh:// URL or an
// ssh_config Host alias; spec.Jump, when set, replaces ProxyJump.
func New(spec remote.Spec, opts Options) (*Target, error) {
	if spec.SSH == "" {
		return nil, fmt.Errorf("ssh target %s: no SSH destination", spec.Name)
	}
	home := opts.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("ssh target %s: %w", spec.Name, err)
		}
		home = h
	}
	localUser := "root"
	if u, err := user.Current(); err == nil {
		localUser = u.Username
	}
	cfgPath := opts.ConfigFile
	if cfgPath == "" {
		cfgPath = filepath.Join(home, ".ssh", "config")
	}
	cfg := &SSHConfig{}
	if cfgPath != "none" {
		var err error
		if cfg, err = ParseSSHConfig(cfgPath, home); err != nil {
			return nil, fmt.Errorf("ssh target %s: %w", spec.Name, err)
		}
	}
	r := resolver{cfg: cfg, home: home, localUser: localUser, knownHosts: opts.KnownHostsFiles,
		connectTimeout: opts.ConnectTimeout}
	final, jumps, hc, err := r.resolve(spec.SSH, "ssh host")
	if err != nil {
		return nil, fmt.Errorf("ssh target %s: %w", spec.Name, err)
	}
	if spec.Jump != nil {
		jumps = spec.Jump
	}
	if len(jumps) == 1 && jumps[0] == "none" {
		jumps = nil
	}
	var hops []hop
	var via []string
	for _, j := range jumps {
		h, _, _, err := r.resolve(j, "ssh jump host")
		if err != nil {
			return nil, fmt.Errorf("ssh target %s: jump host %q: %w", spec.Name, j, err)
		}
		h.verify = verifyCommand(h, via)
		via = append(via, j)
		hops = append(hops, h)
	}
	final.verify = verifyCommand(final, via)
	hops = append(hops, final)

	t := &Target{
		spec:      spec,
		hops:      hops,
		home:      home,
		keepalive: opts.KeepaliveInterval,
		kaTimeout: opts.KeepaliveTimeout,
		log:       opts.Logger,
		procs:     map[*process]struct{}{},
	}
	if len(spec.Exec) > 0 {
		t.execHop = []shquote.Hop{shquote.HopFromExec(spec.Exec)}
		if err := shquote.ValidateHop(t.execHop[0]); err != nil {
			return nil, fmt.Errorf("ssh target %s: exec %q: %w", spec.Name, spec.Exec, err)
		}
	}
	if hc.ServerAliveInterval > 0 {
		t.keepalive = hc.ServerAliveInterval
	}
	if t.keepalive <= 0 {
		t.keepalive = defaultKeepalive
	}
	if t.kaTimeout <= 0 {
		t.kaTimeout = t.keepalive
	}
	switch opts.AgentSocket {
	case "":
		t.agentSock = os.Getenv("SSH_AUTH_SOCK")
	case "none":
	default:
		t.agentSock = opts.AgentSocket
	}
	if t.log == nil {
		t.log = zap.NewNop()
	}
	t.log = t.log.With(zap.String("target", spec.Name))
	n := opts.MaxSessions
	if n <= 0 {
		n = defaultMaxSessions
	}
	t.dialLock = make(chan struct{}, 1)
	t.sessions = make(chan struct{}, n)
	t.resident = make(chan struct{}, 1)
	return t, nil
}

// Name returns the Spec's name.
func (t *Target) Name() string { return t.spec.Name }

// verifyCommand is the OpenSSH command line that checks and records h's
// host key, through the same jump hosts.
func verifyCommand(h hop, via []string) string {
	host, port, _ := splitAddr(h.addr)
	args := []string{"ssh"}
	if len(via) > 0 {
		args = append(args, "-J", joinComma(via))
	}
	if port != 22 {
		args = append(args, "-p", strconv.Itoa(port))
	}
	args = append(args, h.user+"@"+host)
	return shquote.Join(args)
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

// resolver turns destinations into hops using ssh_config.
type resolver struct {
	cfg            *SSHConfig
	home           string
	localUser      string
	knownHosts     []string
	connectTimeout time.Duration
}

func (r resolver) resolve(dest, kind string) (hop, []string, HostConfig, error) {
	d, err := ParseDestination(dest)
	if err != nil {
		return hop{}, nil, HostConfig{}, err
	}
	hc, err := r.cfg.Lookup(d.Host, d.User)
	if err != nil {
		return hop{}, nil, hc, err
	}
	host := d.Host
	if hc.HostName != "" {
		if host, err = expand(hc.HostName, tokens{host: d.Host, alias: d.Host}); err != nil {
			return hop{}, nil, hc, fmt.Errorf("HostName: %w", err)
		}
	}
	port := d.Port
	if port == 0 {
		port = hc.Port
	}
	if port == 0 {
		port = 22
	}
	u := d.User
	if u == "" {
		u = hc.User
	}
	if u == "" {
		u = r.localUser
	}
	tok := tokens{home: r.home, localUser: r.localUser, host: host, remoteUser: u, port: strconv.Itoa(port), alias: d.Host}
	h := hop{
		name:           d.Host,
		addr:           net.JoinHostPort(host, strconv.Itoa(port)),
		user:           u,
		identitiesOnly: hc.IdentitiesOnly,
		connectTimeout: r.connectTimeout,
	}
	if hc.ConnectTimeout > 0 {
		h.connectTimeout = hc.ConnectTimeout
	}
	if h.connectTimeout <= 0 {
		h.connectTimeout = defaultConnectTimeout
	}
	h.label = fmt.Sprintf("%s %s (%s)", kind, d.Host, h.addr)
	ids := hc.IdentityFiles
	if len(ids) == 0 {
		for _, n := range defaultIdentities {
			ids = append(ids, filepath.Join(r.home, ".ssh", n))
		}
	}
	for _, f := range ids {
		p, err := expand(f, tok)
		if err != nil {
			return hop{}, nil, hc, fmt.Errorf("IdentityFile: %w", err)
		}
		h.identities = append(h.identities, p)
	}
	kh := r.knownHosts
	if kh == nil {
		user := hc.UserKnownHostsFiles
		if len(user) == 0 {
			user = []string{"~/.ssh/known_hosts", "~/.ssh/known_hosts2"}
		}
		for _, f := range user {
			p, err := expand(f, tok)
			if err != nil {
				return hop{}, nil, hc, fmt.Errorf("UserKnownHostsFile: %w", err)
			}
			kh = append(kh, p)
		}
		kh = append(kh, "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
	}
	h.knownHosts = kh
	return h, hc.ProxyJump, hc, nil
}

// Close kills running commands and closes the connection. Start fails
// afterwards.
func (t *Target) Close() error {
	t.mu.Lock()
	t.closed = true
	c := t.conn
	t.conn = nil
	procs := make([]*process, 0, len(t.procs))
	for p := range t.procs {
		procs = append(procs, p)
	}
	t.mu.Unlock()
	for _, p := range procs {
		_ = p.Kill()
	}
	if c != nil {
		c.fail(errors.New("target closed"))
	}
	return nil
}

// Dial connects (or reuses the connection) without starting a command.
func (t *Target) Dial(ctx context.Context) error {
	_, err := t.connection(ctx)
	return err
}

func splitAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return host, port, err
}
