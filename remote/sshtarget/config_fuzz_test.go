package sshtarget

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// FuzzSSHConfig parses arbitrary ssh_config text and resolves a few hosts
// through it, jump hosts included: parsing and lookups may fail, but must
// not panic or loop. Include is followed only inside a scratch home, so
// fuzzed paths cannot make the parser read other files.
func FuzzSSHConfig(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	seed, err := os.ReadFile("testdata/ssh_config")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, "gpu")
	for _, s := range []string{
		"Host a\n ProxyJump a\n",
		"Host a\n ProxyJump b\nHost b\n ProxyJump a\n",
		"Host *\n HostName %h.%h.%%%\n Port 65536\n",
		"Match user root host a,!b\n User x\n",
		"Match exec \"true\" canonical all\n",
		"Host \"a b\" 'c\n IdentityFile \"~/.ssh/id %r\"\n",
		"Include self\nHost a\n",
		"Host=a\n\tHostName=\"10.0.0.1\"\n ConnectTimeout -5\n ServerAliveInterval 99999999999999999999\n",
		"Host a\n ProxyJump user@[::1]:22,ssh://u@h:1\n",
	} {
		f.Add([]byte(s), "a")
	}
	f.Fuzz(func(t *testing.T, text []byte, host string) {
		deadline.Start(t, text, host)
		home := t.TempDir()
		lower := bytes.ToLower(text)
		if bytes.Contains(lower, []byte("include")) && bytes.ContainsAny(text, "/~") {
			t.Skip("Include outside the scratch home")
		}
		if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o755); err != nil {
			t.Fatal(err)
		}
		// A relative Include names files here, this one included.
		if err := os.WriteFile(filepath.Join(home, ".ssh", "self"), text, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := &SSHConfig{}
		if err := cfg.parse(bytes.NewReader(text), "fuzz", home, nil, 0); err != nil {
			return
		}
		r := resolver{cfg: cfg, home: home, localUser: "me"}
		for _, h := range []string{host, "a", "gpu", "u@" + strings.TrimSpace(host) + ":2222"} {
			if _, err := cfg.Lookup(h, "root"); err != nil {
				continue
			}
			_, _, _, _ = r.resolve(h, "ssh host")
		}
	})
}
