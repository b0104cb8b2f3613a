package sshtarget

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/shquote"
)

// Start runs cmd on the target host through the exec hop, as a new session
// channel on the shared connection (connecting or reconnecting first when
// needed). It waits for one of MaxSessions channels. The environment is
// passed with `env K=V` inside the exec hop, since sshd refuses most
// Setenv requests and exec hops do not forward it.
func (t *Target) Start(ctx context.Context, cmd remote.Command) (remote.Process, error) {
	return t.start(ctx, cmd, t.sessions)
}

// StartResident is Start for a long-lived command such as the resident
// helper: it uses a channel reserved for it, so a burst of short commands
// holding every ordinary channel never starves it. One resident command
// runs at a time; another waits for the first to end.
func (t *Target) StartResident(ctx context.Context, cmd remote.Command) (remote.Process, error) {
	return t.start(ctx, cmd, t.resident)
}

func (t *Target) start(ctx context.Context, cmd remote.Command, permits chan struct{}) (remote.Process, error) {
	launch, err := shquote.NewLaunch(t.execHop, cmd.Env, cmd.Argv)
	if err != nil {
		return nil, fmt.Errorf("ssh target %s: %w", t.spec.Name, err)
	}
	select {
	case permits <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("ssh target %s: waiting for a free session channel: %w", t.spec.Name, ctx.Err())
	}
	release := sync.OnceFunc(func() { <-permits })

	for attempt := 0; ; attempt++ {
		c, err := t.connection(ctx)
		if err != nil {
			release()
			return nil, err
		}
		p, err := t.startSession(ctx, c, cmd.Argv[0], launch, release)
		if err == nil {
			return p, nil
		}
		// A link that died unnoticed shows up here first; retry once on a
		// fresh connection.
		if attempt == 0 && waitLost(c, 200*time.Millisecond) != nil {
			continue
		}
		release()
		return nil, err
	}
}

func (t *Target) startSession(ctx context.Context, c *conn, argv0 string, launch shquote.Launch, release func()) (*process, error) {
	sess, err := c.client().NewSession()
	if err != nil {
		return nil, fmt.Errorf("%s: open session: %w", c.label, err)
	}
	p := &process{t: t, c: c, sess: sess, argv0: argv0, killLine: launch.KillLine, release: release, done: make(chan struct{})}
	var stdout io.Reader
	if p.stdin, err = sess.StdinPipe(); err == nil {
		if stdout, err = sess.StdoutPipe(); err == nil {
			p.stderr, err = sess.StderrPipe()
		}
	}
	p.stdout = bufio.NewReaderSize(stdout, 32<<10)
	// The login shell reports its pid, which sshd made a process group
	// leader, before exec'ing the command: Kill uses it to kill the group,
	// since sshd refuses signal requests for root logins.
	if err == nil {
		err = sess.Start("echo $$; exec " + launch.Line)
	}
	if err == nil {
		p.pgid, err = readPID(ctx, sess, p.stdout)
	}
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("%s: start %s: %w", c.label, argv0, err)
	}
	t.log.Debug("ssh command started", zap.String("program", argv0))
	t.mu.Lock()
	t.procs[p] = struct{}{}
	t.mu.Unlock()
	p.stopKill = context.AfterFunc(ctx, func() { _ = p.Kill() })
	go p.wait()
	return p, nil
}

// readPID reads the first stdout line, the remote shell's pid.
func readPID(ctx context.Context, sess *ssh.Session, stdout *bufio.Reader) (int, error) {
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	line, err := stdout.ReadString('\n')
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("read remote pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("remote shell printed %q instead of its pid; is the login shell POSIX?", strings.TrimSpace(line))
	}
	return pid, nil
}

// waitLost gives a connection that is going down a moment to say so, and
// returns why it ended (nil if it is alive).
func waitLost(c *conn, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
	}
	return c.lost()
}

// process is a command running in one session channel.
type process struct {
	t       *Target
	c       *conn
	sess    *ssh.Session
	argv0   string
	release func()
	// killLine is the command that kills the process group and, for hops
	// whose client cannot, the command inside the hop.
	killLine func(pgid int) string

	pgid   int // remote process group
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr io.Reader

	stopKill func() bool
	killOnce sync.Once
	killed   atomic.Bool
	done     chan struct{}
	err      error
}

func (p *process) Stdin() io.WriteCloser { return p.stdin }
func (p *process) Stdout() io.Reader     { return p.stdout }
func (p *process) Stderr() io.Reader     { return p.stderr }

// Wait waits for the remote command to exit. A lost connection is reported
// as such, naming the hop and the reason (keepalive timeout, reset).
func (p *process) Wait() error {
	<-p.done
	return p.err
}

func (p *process) wait() {
	err := p.sess.Wait()
	p.sess.Close()
	var exitErr *ssh.ExitError
	switch {
	case err == nil:
	case p.killed.Load():
		err = fmt.Errorf("%s: %s: killed", p.c.label, p.argv0)
	case errors.As(err, &exitErr):
		err = fmt.Errorf("%s: %s: %w", p.c.label, p.argv0, err)
	default:
		// The session ended without an exit status: usually the link.
		if lost := waitLost(p.c, 2*time.Second); lost != nil {
			err = fmt.Errorf("%s: %w", p.argv0, lost)
		} else {
			err = fmt.Errorf("%s: %s: %w", p.c.label, p.argv0, err)
		}
	}
	p.err = err
	p.stopKill()
	p.t.mu.Lock()
	delete(p.t.procs, p)
	p.t.mu.Unlock()
	p.release()
	close(p.done)
}

// killTimeout bounds the extra session Kill opens.
const killTimeout = 10 * time.Second

// Kill kills the remote command's process group and closes the channel.
// sshd refuses SSH signal requests for root logins (it has no privilege
// separation there), so after the signal request a second session runs
// `kill -s KILL -- -PGID`, or what the exec hop needs instead
// (shquote.Launch.KillLine). Closing the channel gives processes the signal
// cannot reach (inside some exec hops) EOF on stdin. Safe to call more than
// once and after Wait.
func (p *process) Kill() error {
	var err error
	p.killOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		p.killed.Store(true)
		_ = p.sess.Signal(ssh.SIGKILL)
		err = p.killGroup()
		_ = p.sess.Close()
	})
	return err
}

func (p *process) killGroup() error {
	if p.c.lost() != nil {
		return nil // the server closes the command's pipes on its own
	}
	sess, err := p.c.client().NewSession()
	if err != nil {
		return fmt.Errorf("%s: kill %s: open session: %w", p.c.label, p.argv0, err)
	}
	defer sess.Close()
	timer := time.AfterFunc(killTimeout, func() { sess.Close() })
	defer timer.Stop()
	// kill fails with "no such process" when the group is already gone.
	out, err := sess.CombinedOutput(p.killLine(p.pgid))
	if err != nil {
		return fmt.Errorf("%s: kill %s (process group %d): %w: %s", p.c.label, p.argv0, p.pgid, err, strings.TrimSpace(string(out)))
	}
	return nil
}
