package sshtest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServerWithOpenSSHClient checks the fixture itself with the real ssh
// client: the server, its known_hosts lines, the client key and the shim.
func TestServerWithOpenSSHClient(t *testing.T) {
	s := Start(t, Config{})
	kh := WriteFile(t, "known_hosts", s.KnownHosts(t, ""))
	shim := PctShim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		remote, want string
		wantErr      bool
	}{
		{"echo ok", "ok", false},
		{shim + " exec 200 -- echo via shim", "via shim", false},
		{shim + " exec 20x -- echo no", "", true},
	} {
		out, err := exec.CommandContext(ctx, "ssh", "-F", "none", "-o", "BatchMode=yes",
			"-o", "UserKnownHostsFile="+kh, "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes",
			"-i", s.Keys.Client, "-p", strconv.Itoa(s.Port), s.User+"@"+s.Host, tt.remote).CombinedOutput()
		if (err != nil) != tt.wantErr || strings.TrimSpace(string(out)) != tt.want && !tt.wantErr {
			t.Errorf("ssh %q: %v %q\nsshd log:\n%s", tt.remote, err, out, s.Log())
		}
	}
}
