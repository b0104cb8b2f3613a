// Package remote reaches the places where a user's Python runs: the local
// machine, SSH hosts (through jump hosts), and container exec hops on them.
// It runs the resident helper there and mirrors package sources back.
// It knows nothing of LSP.
package remote

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Spec describes one target as the user configured it.
type Spec struct {
	Name     string            // the table name in torchlsp.toml, e.g. "gpu"
	Python   string            // interpreter path or name on the target; "python3" by default
	Env      map[string]string // environment for the interpreter
	Packages []string          // packages mirrored eagerly; ["torch"] by default
	SSH      string            // "user@host[:port]" or a Host alias from ~/.ssh/config; empty for local
	Jump     []string          // jump hosts, like ProxyJump
	Exec     []string          // argv prefix run on the target host before the interpreter
	// UserSite lets the interpreter see the user's site-packages
	// (~/.local/lib/pythonX.Y/site-packages, its .pth files and
	// usercustomize); off, it is started with -s.
	UserSite bool
}

// IsLocal reports whether the target runs on this machine.
func (s Spec) IsLocal() bool { return s.SSH == "" }

// Command is one process to start on a target. Argv[0] is resolved on the
// target (through the exec hop, if any). Data and scripts travel on stdin,
// never in argv.
type Command struct {
	Argv []string
	Env  map[string]string
}

// Process is a running command on a target.
type Process interface {
	Stdin() io.WriteCloser
	Stdout() io.Reader
	Stderr() io.Reader
	// Wait waits for the process to exit and its output to be drained.
	Wait() error
	// Kill ends the process and everything it started (its process group
	// where the target allows it). It is safe to call more than once and
	// after Wait.
	Kill() error
}

// Target is a place where commands run.
type Target interface {
	// Name is the Spec's name.
	Name() string
	// Start starts cmd. The process is killed when ctx is done.
	Start(ctx context.Context, cmd Command) (Process, error)
	// Close releases connections; running processes are killed.
	Close() error
}

// HopResult is the outcome of reaching one hop of a target (an SSH host, a
// jump host, an exec hop), for `torchlsp doctor`.
type HopResult struct {
	Name    string        // e.g. "jump bastion", "ssh gpu-host", "exec pct"
	Addr    string        // what was reached, e.g. "127.0.0.1:2222"
	Latency time.Duration // time to pass this hop
	Err     error
	Hint    string // what to do about Err
}

// ResidentStarter is implemented by targets that limit concurrent commands
// (SSH channels) and keep a slot for long-lived ones, so the helper that
// answers hovers never queues behind mirrors or repro runs.
type ResidentStarter interface {
	StartResident(ctx context.Context, cmd Command) (Process, error)
}

// startResident starts a long-lived command in the target's reserved slot
// when it has one.
func startResident(ctx context.Context, t Target, cmd Command) (Process, error) {
	if rs, ok := t.(ResidentStarter); ok {
		return rs.StartResident(ctx, cmd)
	}
	return t.Start(ctx, cmd)
}

// HopChecker is implemented by targets that reach the interpreter through
// several hops (ssh, jump hosts) and can test them one by one.
type HopChecker interface {
	CheckHops(ctx context.Context) []HopResult
}

// Opener makes the targets specs describe. The engine is handed one, so
// it never needs to know how a target is reached.
type Opener interface {
	// Open makes the target a spec describes.
	Open(spec Spec) (Target, error)
	// SpecFor makes a spec from a target name that is itself an address
	// (such as ssh://user@host:port); ok is false for names it does not
	// read, which are then looked up in the configuration.
	SpecFor(name string) (spec Spec, ok bool, err error)
}

// LocalOpener opens every spec as a local target and reads no addresses;
// specs that need another transport are refused.
type LocalOpener struct{}

// Open implements Opener.
func (LocalOpener) Open(spec Spec) (Target, error) {
	if !spec.IsLocal() {
		return nil, fmt.Errorf("target %s: only local targets can be opened here", spec.Name)
	}
	return NewLocal(spec), nil
}

// SpecFor implements Opener.
func (LocalOpener) SpecFor(string) (Spec, bool, error) { return Spec{}, false, nil }
