package sshtarget

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SSHConfig is a parsed ssh_config file: directives in file order, each with
// the Host or Match condition it sits under. Lookups follow OpenSSH: for
// each keyword the first value obtained wins.
type SSHConfig struct {
	directives []directive
}

type directive struct {
	cond []condition // all must hold: the Host/Match block, plus enclosing ones for Include
	key  string      // lower-case keyword
	args []string
	pos  string // file:line, for errors
}

// condition is one Host line or Match line.
type condition struct {
	all      bool     // Match all, or the implicit block before the first Host
	hosts    []string // patterns matched against the original host name
	never    bool     // Match criteria this parser does not evaluate (exec, canonical, ...)
	userPats []string // Match user
}

// maxIncludeDepth mirrors OpenSSH's limit on nested Include.
const maxIncludeDepth = 16

// ParseSSHConfig reads an ssh_config file. home resolves "~" in Include
// paths; relative Include paths are taken from home/.ssh, as OpenSSH does
// for user configuration files. A missing file is an empty configuration.
func ParseSSHConfig(path, home string) (*SSHConfig, error) {
	c := &SSHConfig{}
	if err := c.parseFile(path, home, nil, 0); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *SSHConfig) parseFile(path, home string, outer []condition, depth int) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ssh config: %w", err)
	}
	defer f.Close()
	return c.parse(f, path, home, outer, depth)
}

func (c *SSHConfig) parse(r io.Reader, name, home string, outer []condition, depth int) error {
	cur := append(outer[:len(outer):len(outer)], condition{all: true})
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		pos := fmt.Sprintf("%s:%d", name, line)
		key, args, err := splitDirective(sc.Text())
		if err != nil {
			return fmt.Errorf("ssh config %s: %w", pos, err)
		}
		if key == "" {
			continue
		}
		switch key {
		case "host":
			if len(args) == 0 {
				return fmt.Errorf("ssh config %s: Host without patterns", pos)
			}
			cur = append(outer[:len(outer):len(outer)], condition{hosts: args})
		case "match":
			cond, err := parseMatch(args)
			if err != nil {
				return fmt.Errorf("ssh config %s: %w", pos, err)
			}
			cur = append(outer[:len(outer):len(outer)], cond)
		case "include":
			if depth >= maxIncludeDepth {
				return fmt.Errorf("ssh config %s: Include nested too deeply", pos)
			}
			for _, pat := range args {
				pat = expandTilde(pat, home)
				if !filepath.IsAbs(pat) {
					pat = filepath.Join(home, ".ssh", pat)
				}
				matches, err := filepath.Glob(pat)
				if err != nil {
					return fmt.Errorf("ssh config %s: Include %q: %w", pos, pat, err)
				}
				for _, m := range matches {
					if err := c.parseFile(m, home, cur, depth+1); err != nil {
						return err
					}
				}
			}
		default:
			c.directives = append(c.directives, directive{cond: cur, key: key, args: args, pos: pos})
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("ssh config %s: %w", name, err)
	}
	return nil
}

func parseMatch(args []string) (condition, error) {
	var cond condition
	if len(args) == 0 {
		return cond, fmt.Errorf("ssh_config: Match without criteria")
	}
	for i := 0; i < len(args); i++ {
		crit := strings.ToLower(args[i])
		switch crit {
		case "all":
			cond.all = true
			continue
		case "canonical", "final":
			cond.never = true
			continue
		}
		if i+1 >= len(args) {
			return cond, fmt.Errorf("ssh_config: Match %s needs an argument", crit)
		}
		i++
		pats := strings.Split(args[i], ",")
		switch crit {
		case "host", "originalhost":
			cond.hosts = append(cond.hosts, pats...)
		case "user":
			cond.userPats = append(cond.userPats, pats...)
		default: // exec, localuser, localnetwork, tagged: never run or guessed
			cond.never = true
		}
	}
	return cond, nil
}

// splitDirective splits "Key Value...", "Key=Value" and "Key = Value"
// lines; double quotes group words. Comments and blank lines give "".
func splitDirective(line string) (string, []string, error) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", nil, nil
	}
	end := strings.IndexAny(line, " \t=")
	if end < 0 {
		return strings.ToLower(line), nil, nil
	}
	key := strings.ToLower(line[:end])
	rest := strings.TrimLeft(line[end:], " \t")
	if strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], " \t")
	}
	var args []string
	for rest != "" {
		if rest[0] == '#' {
			break
		}
		if rest[0] == '"' {
			close := strings.IndexByte(rest[1:], '"')
			if close < 0 {
				return "", nil, fmt.Errorf("unterminated quote in %q", line)
			}
			args = append(args, rest[1:1+close])
			rest = strings.TrimLeft(rest[close+2:], " \t")
			continue
		}
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			end = len(rest)
		}
		args = append(args, rest[:end])
		rest = strings.TrimLeft(rest[end:], " \t")
	}
	return key, args, nil
}

// matchPatterns applies an OpenSSH pattern list: a negated pattern that
// matches rejects, otherwise any positive match accepts.
func matchPatterns(pats []string, s string) bool {
	s = strings.ToLower(s)
	matched := false
	for _, p := range pats {
		p = strings.ToLower(p)
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			if wildcard(neg, s) {
				return false
			}
			continue
		}
		if wildcard(p, s) {
			matched = true
		}
	}
	return matched
}

// wildcard matches s against a pattern of '*' (any run) and '?' (one byte).
func wildcard(p, s string) bool {
	// Iterative matcher with one backtrack point, linear in practice.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

func (d *directive) applies(host, user string) bool {
	for _, c := range d.cond {
		if c.never {
			return false
		}
		if len(c.hosts) > 0 && !matchPatterns(c.hosts, host) {
			return false
		}
		if len(c.userPats) > 0 && (user == "" || !matchPatterns(c.userPats, user)) {
			return false
		}
	}
	return true
}

// HostConfig is what ssh_config says about one host.
type HostConfig struct {
	HostName            string
	User                string
	Port                int
	IdentityFiles       []string // unexpanded; see Expand
	IdentitiesOnly      bool
	ProxyJump           []string // nil when unset; ["none"] disables a default
	UserKnownHostsFiles []string
	ConnectTimeout      time.Duration
	ServerAliveInterval time.Duration
}

// Lookup returns the configuration for host (the name as given, an alias
// or a real host name). user is the user given on the command line, if
// any, for `Match user`.
func (c *SSHConfig) Lookup(host, user string) (HostConfig, error) {
	var hc HostConfig
	seen := map[string]bool{}
	for i := range c.directives {
		d := &c.directives[i]
		if !d.applies(host, user) {
			continue
		}
		if d.key == "identityfile" { // accumulates, as in OpenSSH
			if len(d.args) != 1 {
				return hc, fmt.Errorf("ssh config %s: IdentityFile takes one path", d.pos)
			}
			hc.IdentityFiles = append(hc.IdentityFiles, d.args[0])
			continue
		}
		if seen[d.key] {
			continue
		}
		seen[d.key] = true
		if err := hc.set(d); err != nil {
			return hc, fmt.Errorf("ssh config %s: %w", d.pos, err)
		}
	}
	return hc, nil
}

func (hc *HostConfig) set(d *directive) error {
	one := func() (string, error) {
		if len(d.args) != 1 {
			return "", fmt.Errorf("%s takes one value, got %d", d.key, len(d.args))
		}
		return d.args[0], nil
	}
	switch d.key {
	case "hostname":
		v, err := one()
		hc.HostName = v
		return err
	case "user":
		v, err := one()
		hc.User = v
		return err
	case "port":
		v, err := one()
		if err != nil {
			return err
		}
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("bad Port %q", v)
		}
		hc.Port = p
	case "identitiesonly":
		v, err := one()
		hc.IdentitiesOnly = strings.EqualFold(v, "yes")
		return err
	case "proxyjump":
		v, err := one()
		if err != nil {
			return err
		}
		if strings.EqualFold(v, "none") {
			hc.ProxyJump = []string{"none"}
			return nil
		}
		hc.ProxyJump = strings.Split(v, ",")
	case "userknownhostsfile":
		hc.UserKnownHostsFiles = append([]string(nil), d.args...)
	case "connecttimeout", "serveraliveinterval":
		v, err := one()
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("bad %s %q", d.key, v)
		}
		if d.key == "connecttimeout" {
			hc.ConnectTimeout = time.Duration(n) * time.Second
		} else {
			hc.ServerAliveInterval = time.Duration(n) * time.Second
		}
	}
	return nil
}

// tokens are the values for %-expansion in IdentityFile, UserKnownHostsFile
// and HostName.
type tokens struct {
	home, localUser, host, remoteUser, port, alias string
}

// expand replaces ~ and the OpenSSH tokens %d %u %h %r %p %n %%.
func expand(s string, t tokens) (string, error) {
	s = expandTilde(s, t.home)
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("%q ends in a lone %%", s)
		}
		i++
		switch s[i] {
		case '%':
			b.WriteByte('%')
		case 'd':
			b.WriteString(t.home)
		case 'u':
			b.WriteString(t.localUser)
		case 'h':
			b.WriteString(t.host)
		case 'r':
			b.WriteString(t.remoteUser)
		case 'p':
			b.WriteString(t.port)
		case 'n':
			b.WriteString(t.alias)
		default:
			return "", fmt.Errorf("%q: unsupported token %%%c", s, s[i])
		}
	}
	return b.String(), nil
}

func expandTilde(s, home string) string {
	if s == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return s
}

// Destination is a user, host and port as written on an ssh command line.
type Destination struct {
	User string // empty: from ssh_config, else the local user
	Host string // host name, address or ssh_config alias
	Port int    // 0: from ssh_config, else 22
}

// String formats d as user@host:port, bracketing IPv6 addresses.
func (d Destination) String() string {
	s := d.Host
	if d.Port != 0 {
		s = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
	} else if strings.Contains(s, ":") {
		s = "[" + s + "]"
	}
	if d.User != "" {
		s = d.User + "@" + s
	}
	return s
}

// ParseURL parses "ssh://[user@]host[:port]" as used by --target.
func ParseURL(raw string) (Destination, error) {
	rest, ok := strings.CutPrefix(raw, "ssh://")
	if !ok {
		return Destination{}, fmt.Errorf("ssh URL %q: want ssh://[user@]host[:port]", raw)
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.ContainsAny(rest, "/?#") {
		return Destination{}, fmt.Errorf("ssh URL %q: a path, query or fragment is not allowed", raw)
	}
	return ParseDestination(rest)
}

// ParseDestination parses "[user@]host[:port]", "[user@][v6addr]:port"
// or an ssh:// URL.
func ParseDestination(s string) (Destination, error) {
	if strings.HasPrefix(s, "ssh://") {
		return ParseURL(s)
	}
	var d Destination
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		d.User, s = s[:at], s[at+1:]
		if d.User == "" {
			return d, fmt.Errorf("ssh destination %q: empty user", s)
		}
	}
	switch {
	case strings.HasPrefix(s, "["):
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			if end := strings.IndexByte(s, ']'); end == len(s)-1 {
				host, port = s[1:end], ""
			} else {
				return d, fmt.Errorf("ssh destination %q: %w", s, err)
			}
		}
		d.Host = host
		if port != "" {
			if d.Port, err = parsePort(port); err != nil {
				return d, fmt.Errorf("ssh destination %q: %w", s, err)
			}
		}
	case strings.Count(s, ":") == 1:
		host, port, _ := strings.Cut(s, ":")
		p, err := parsePort(port)
		if err != nil {
			return d, fmt.Errorf("ssh destination %q: %w", s, err)
		}
		d.Host, d.Port = host, p
	default: // a host name, or a bare IPv6 address
		d.Host = s
	}
	if d.Host == "" || strings.HasPrefix(d.Host, "-") || strings.ContainsAny(d.Host, " \t\n'\"`$;&|<>\\") {
		return d, fmt.Errorf("ssh destination %q: bad host name", d.Host)
	}
	if strings.HasPrefix(d.User, "-") || strings.ContainsAny(d.User, " \t\n'\"`$;&|<>\\:") {
		return d, fmt.Errorf("ssh destination: bad user name %q", d.User)
	}
	return d, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p <= 0 || p > 65535 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return p, nil
}
