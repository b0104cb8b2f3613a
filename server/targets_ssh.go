package server

import (
	"context"
	"errors"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
)

// openSSH makes an SSH target that reads the user's ~/.ssh/config and
// known_hosts like OpenSSH does.
func openSSH(spec remote.Spec, opts sshtarget.Options) (remote.Target, error) {
	t, err := sshtarget.New(spec, opts)
	if err != nil {
		return nil, err
	}
	return sshWithHops{t}, nil
}

// sshWithHops adds the doctor's hop-by-hop check to an SSH target.
type sshWithHops struct{ *sshtarget.Target }

func (s sshWithHops) CheckHops(ctx context.Context) []remote.HopResult {
	var out []remote.HopResult
	for _, h := range s.Hops(ctx) {
		name := "ssh " + h.Name
		if h.Jump {
			name = "ssh jump " + h.Name
		}
		r := remote.HopResult{Name: name, Addr: h.User + "@" + h.Addr, Latency: h.Latency, Err: h.Err}
		var hk *sshtarget.HostKeyError
		if errors.As(h.Err, &hk) {
			r.Hint = hk.Hint
		}
		out = append(out, r)
	}
	return out
}
