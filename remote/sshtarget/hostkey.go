package sshtarget

import (
	"bufio"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyProblem says why a host key was refused.
type HostKeyProblem int

const (
	// HostKeyUnknown: no known_hosts entry for the host.
	HostKeyUnknown HostKeyProblem = iota + 1
	// HostKeyChanged: known_hosts holds other keys for the host.
	HostKeyChanged
	// HostKeyRevoked: the key (or the CA that signed it) is @revoked.
	HostKeyRevoked
	// HostKeyTypeGone: known_hosts holds keys for the host only of types
	// the server no longer offers, so none can be checked.
	HostKeyTypeGone
)

// HostKeyError is a host key that known_hosts does not vouch for. There is
// deliberately no way to accept such a key from torchlsp: the user checks
// it with OpenSSH, which records it.
type HostKeyError struct {
	Problem     HostKeyProblem
	Host        string // as written in known_hosts: host or [host]:port
	Fingerprint string // SHA256 fingerprint of the key the server offered
	Known       []string
	Offered     []string // HostKeyTypeGone: the key types the server offers
	Hint        string
}

func (e *HostKeyError) Error() string {
	switch e.Problem {
	case HostKeyUnknown:
		return fmt.Sprintf("host key for %s is not in known_hosts: %s (the server offered %s)", e.Host, e.Hint, e.Fingerprint)
	case HostKeyChanged:
		return fmt.Sprintf("host key for %s CHANGED (possible attack): server offered %s, known_hosts has %s; %s",
			e.Host, e.Fingerprint, strings.Join(e.Known, ", "), e.Hint)
	case HostKeyTypeGone:
		return fmt.Sprintf("host key for %s cannot be checked: known_hosts has only %s, and the server no longer offers that key type "+
			"(it offers %s), so torchlsp refuses to connect (its keys changed: possibly an attack, usually a server upgrade); %s",
			e.Host, strings.Join(e.Known, ", "), strings.Join(e.Offered, ", "), e.Hint)
	default:
		return fmt.Sprintf("host key for %s is @revoked in %s: refusing to connect", e.Host, strings.Join(e.Known, ", "))
	}
}

// hostKeys checks host keys against known_hosts files, loaded once per dial
// so that keys recorded with OpenSSH meanwhile are picked up.
type hostKeys struct {
	check ssh.HostKeyCallback
	files []string
	// caLines are file:line positions of @cert-authority lines, to tell
	// them apart from plain keys in knownhosts.KeyError.Want.
	caLines map[string]bool
}

func loadHostKeys(files []string) (*hostKeys, error) {
	hk := &hostKeys{caLines: map[string]bool{}}
	for _, f := range files {
		fh, err := os.Open(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("known_hosts: %w", err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if strings.HasPrefix(strings.TrimSpace(sc.Text()), "@cert-authority") {
				hk.caLines[f+":"+strconv.Itoa(n)] = true
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("known_hosts %s: %w", f, err)
		}
		hk.files = append(hk.files, f)
	}
	cb, err := knownhosts.New(hk.files...)
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	hk.check = cb
	return hk, nil
}

// probeKey is a key no known_hosts file holds; checking it returns the
// entries that exist for a host.
func probeKey() ssh.PublicKey {
	pub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public()
	k, _ := ssh.NewPublicKey(pub)
	return k
}

// known returns the known_hosts entries for addr (host:port).
func (hk *hostKeys) known(addr string) []knownhosts.KnownKey {
	err := hk.check(addr, &net.TCPAddr{IP: net.IPv4zero}, probeKey())
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) {
		return ke.Want
	}
	return nil
}

// algorithms returns HostKeyAlgorithms for addr: the algorithms of its
// known keys (and host certificates when a CA is trusted for it), so that
// a server with several host keys offers one known_hosts can verify
// (golang/go#29286). For an unknown host only plain key algorithms are
// asked for, so the error shows the key `ssh` would record.
func (hk *hostKeys) algorithms(addr string) []string {
	var algs []string
	add := func(a ...string) {
		for _, x := range a {
			if !contains(algs, x) {
				algs = append(algs, x)
			}
		}
	}
	for _, k := range hk.known(addr) {
		if hk.caLines[k.Filename+":"+strconv.Itoa(k.Line)] {
			add(ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01, ssh.CertAlgoECDSA521v01,
				ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01)
			continue
		}
		switch t := k.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	if len(algs) == 0 {
		return []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
			ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return algs
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// callback returns the HostKeyCallback for one hop, turning knownhosts
// errors into HostKeyErrors with a fix hint. verify is the ssh command a
// user runs to check and record the key.
func (hk *hostKeys) callback(verify string) ssh.HostKeyCallback {
	return func(addr string, remote net.Addr, key ssh.PublicKey) error {
		err := hk.check(addr, remote, key)
		if err == nil {
			return nil
		}
		name := knownhosts.Normalize(addr)
		fp := ssh.FingerprintSHA256(key)
		if cert, ok := key.(*ssh.Certificate); ok {
			fp = ssh.FingerprintSHA256(cert.Key) + " (certificate signed by CA " + ssh.FingerprintSHA256(cert.SignatureKey) + ")"
			var ke *knownhosts.KeyError
			switch {
			case strings.Contains(err.Error(), "revoked"):
				return &HostKeyError{Problem: HostKeyRevoked, Host: name, Fingerprint: fp, Known: []string{"known_hosts (the certificate or its CA)"}}
			case errors.As(err, &ke):
			default:
				// Like OpenSSH, a certificate no trusted CA vouches for
				// (expired, wrong principal, unknown CA) falls back to
				// its plain key.
				if err = hk.check(addr, remote, cert.Key); err == nil {
					return nil
				}
			}
		}
		var revoked *knownhosts.RevokedError
		if errors.As(err, &revoked) {
			return &HostKeyError{Problem: HostKeyRevoked, Host: name, Fingerprint: fp,
				Known: []string{fmt.Sprintf("%s:%d", revoked.Revoked.Filename, revoked.Revoked.Line)}}
		}
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) {
			return fmt.Errorf("host key for %s (%s): %w", name, fp, err)
		}
		var plain []string
		for _, k := range ke.Want {
			if !hk.caLines[k.Filename+":"+strconv.Itoa(k.Line)] {
				plain = append(plain, fmt.Sprintf("%s %s (%s:%d)", k.Key.Type(), ssh.FingerprintSHA256(k.Key), k.Filename, k.Line))
			}
		}
		if len(plain) == 0 {
			return &HostKeyError{Problem: HostKeyUnknown, Host: name, Fingerprint: fp,
				Hint: fmt.Sprintf("connect once with `%s` to verify and record it", verify)}
		}
		return &HostKeyError{Problem: HostKeyChanged, Host: name, Fingerprint: fp, Known: plain, Hint: changeHint(name, verify, ke.Want)}
	}
}

// changeHint says how to replace the known_hosts entries want for name:
// remove them with ssh-keygen -R, then record the new key with OpenSSH.
func changeHint(name, verify string, want []knownhosts.KnownKey) string {
	if len(want) > 0 && !strings.HasSuffix(want[0].Filename, "/.ssh/known_hosts") {
		return fmt.Sprintf("if the change is expected, remove the old key with `ssh-keygen -f %s -R %s` and connect once with `%s` to record the new one",
			shellWord(want[0].Filename), shellWord(name), verify)
	}
	return fmt.Sprintf("if the change is expected, remove the old key with `ssh-keygen -R %s` and connect once with `%s` to record the new one",
		shellWord(name), verify)
}

// typeGone explains a handshake that found no common host key algorithm:
// the client asks only for the types known_hosts holds for addr (see
// algorithms), so the server dropped, or never had, every one of them.
func (hk *hostKeys) typeGone(addr, verify string, offered []string) *HostKeyError {
	name := knownhosts.Normalize(addr)
	want := hk.known(addr)
	var known []string
	for _, k := range want {
		what := "key"
		if hk.caLines[k.Filename+":"+strconv.Itoa(k.Line)] {
			what = "CA key"
		}
		known = append(known, fmt.Sprintf("a %s %s %s (%s:%d)", k.Key.Type(), what, ssh.FingerprintSHA256(k.Key), k.Filename, k.Line))
	}
	if len(known) == 0 {
		known = []string{"keys of other types"}
	}
	return &HostKeyError{Problem: HostKeyTypeGone, Host: name, Known: known, Offered: offered, Hint: changeHint(name, verify, want)}
}

// shellWord quotes s for a hint the user pastes into a shell.
func shellWord(s string) string {
	if strings.ContainsAny(s, "[]*? '\"$`\\") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}
