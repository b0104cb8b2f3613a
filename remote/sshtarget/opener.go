package sshtarget

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
)

// Opener opens local specs as local targets and the others over SSH, reading
// the user's ~/.ssh/config and known_hosts like OpenSSH does. It reads
// ssh://[user@]host[:port] target names.
type Opener struct {
	Options Options
}

var _ remote.Opener = Opener{}

// Open implements remote.Opener.
func (o Opener) Open(spec remote.Spec) (remote.Target, error) {
	if spec.IsLocal() {
		return remote.NewLocal(spec), nil
	}
	t, err := New(spec, o.Options)
	if err != nil {
		return nil, err
	}
	return hopChecking{t}, nil
}

// SpecFor implements remote.Opener: an ssh:// URL is a target of its own,
// needing no configuration file.
func (Opener) SpecFor(name string) (remote.Spec, bool, error) {
	if !strings.HasPrefix(name, "ssh://") {
		return remote.Spec{}, false, nil
	}
	d, err := ParseURL(name)
	if err != nil {
		return remote.Spec{}, true, fmt.Errorf("target %s: %w", name, err)
	}
	return remote.Spec{Name: name, SSH: d.String()}, true, nil
}

// hopChecking adds the doctor's hop-by-hop check to an SSH target.
type hopChecking struct{ *Target }

var _ remote.HopChecker = hopChecking{}

// CheckHops implements remote.HopChecker.
func (h hopChecking) CheckHops(ctx context.Context) []remote.HopResult {
	var out []remote.HopResult
	for _, hop := range h.Hops(ctx) {
		name := "ssh " + hop.Name
		if hop.Jump {
			name = "ssh jump " + hop.Name
		}
		r := remote.HopResult{Name: name, Addr: hop.User + "@" + hop.Addr, Latency: hop.Latency, Err: hop.Err}
		var hk *HostKeyError
		if errors.As(hop.Err, &hk) {
			r.Hint = hk.Hint
		}
		out = append(out, r)
	}
	return out
}
