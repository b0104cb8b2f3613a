package sshtarget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtest"
)

// known_hosts holds only the host's RSA key, and the server offers only
// ed25519 now (an upgrade dropped RSA, or an attacker has only an ed25519
// key): the connection is refused, and the message says why and how to
// replace the entry, instead of a raw "no common algorithm" handshake
// error.
func TestHostKeyTypeNoLongerOffered(t *testing.T) {
	t.Parallel()
	keys := sshtest.NewKeys(t)
	f := newFixture(t, sshtest.Config{Keys: keys, ExtraConfig: []string{"HostKeyAlgorithms ssh-ed25519"}})
	rsaOnly := strings.Split(strings.TrimSpace(f.srv.KnownHosts(t, "")), "\n")[1] + "\n"
	if !strings.Contains(rsaOnly, "ssh-rsa") {
		t.Fatalf("fixture: %q is not the RSA key", rsaOnly)
	}
	opts := withConfig(t, f.options(t, rsaOnly), "Host *", "  IdentityFile "+keys.Client)
	tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + f.srv.Addr}, opts)
	err := tg.Dial(context.Background())
	var hkErr *HostKeyError
	if !errors.As(err, &hkErr) || hkErr.Problem != HostKeyTypeGone {
		t.Fatalf("err = %v, want HostKeyError HostKeyTypeGone", err)
	}
	name := knownhosts.Normalize(f.srv.Addr)
	for _, want := range []string{
		"host key for " + name + " cannot be checked",
		"known_hosts has only a ssh-rsa key SHA256:",
		"the server no longer offers that key type (it offers ssh-ed25519)",
		"ssh-keygen -f ",
		fmt.Sprintf("`ssh -p %d %s@%s`", f.srv.Port, f.srv.User, f.srv.Host),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	t.Log(err)
	if strings.Contains(err.Error(), "handshake failed") {
		t.Errorf("the raw handshake error leaked: %v", err)
	}
}

// exec = ["bash", "-lc"] is a shell hop: the command reaches the
// interpreter through bash as one string, with hostile words intact.
func TestBashLoginExecHop(t *testing.T) {
	t.Parallel()
	requirePython(t)
	keys := sshtest.NewKeys(t)
	f := newFixture(t, sshtest.Config{Keys: keys})
	opts := withConfig(t, f.options(t, f.srv.KnownHosts(t, "")), "Host *", "  IdentityFile "+keys.Client)
	tg := newTarget(t, remote.Spec{SSH: f.srv.User + "@" + f.srv.Addr, Exec: []string{"bash", "-lc"}}, opts)
	args := []string{"a b", "$HOME", "'", "; touch pwned", "-lc"}
	stdout, stderr, err := run(t, tg, append([]string{python, "-c", echoArgvEnv}, args...), map[string]string{"TL_SECRET": "s p"}, "in")
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	want := `[["a b", "$HOME", "'", "; touch pwned", "-lc"], "s p", "in"]`
	if strings.TrimSpace(stdout) != want {
		t.Errorf("got %s, want %s", stdout, want)
	}
	if _, err := New(remote.Spec{Name: "x", SSH: f.srv.User + "@" + f.srv.Addr, Exec: []string{"bash", "-l"}}, opts); err == nil ||
		!strings.Contains(err.Error(), `does not take a command string`) {
		t.Errorf("exec [bash -l]: %v", err)
	}
}
