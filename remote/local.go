package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/torchlsp/torchlsp/remote/shquote"
)

// Terminator is implemented by processes that can be asked to stop before
// being killed.
type Terminator interface {
	// Terminate sends SIGTERM to the process group, then SIGKILL if it is
	// still running after grace.
	Terminate(grace time.Duration) error
}

// NeutralDir is the working directory of every process a local target
// starts: torchlsp's own is often a workspace, and an interpreter reads
// its start directory (a relative or empty PYTHONPATH entry, the empty
// string -c puts on sys.path, relative paths in its code) before
// torchlsp's programs can change directory. No workspace controls "/".
const NeutralDir = "/"

// NewLocal returns a Target that runs commands on this machine with
// os/exec. The Spec's Exec prefix is prepended to every argv and run
// directly, without a shell (e.g. "docker exec -i NAME").
func NewLocal(spec Spec) Target {
	spec.Exec = shquote.PrepareExec(spec.Exec)
	return &localTarget{spec: spec, procs: make(map[*localProcess]struct{})}
}

// hopArgv prepends the exec hop to argv. An exec hop (docker exec, pct
// exec) does not forward this process's environment, so the command's
// variables are passed through "env" inside the hop. A shell hop (sh -c,
// bash -lc) gets the command as one string, quoted for that shell.
func hopArgv(hop []string, c Command) ([]string, error) {
	if len(hop) == 0 {
		return append([]string(nil), c.Argv...), nil
	}
	if err := shquote.CheckHopShell(hop); err != nil {
		return nil, fmt.Errorf("exec %q: %w", hop, err)
	}
	var words []string
	if len(c.Env) > 0 {
		words = append(words, "env")
		for _, k := range sortedKeys(c.Env) {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return nil, fmt.Errorf("bad environment variable name %q", k)
			}
			words = append(words, k+"="+c.Env[k])
		}
	}
	words = append(words, c.Argv...)
	argv := append([]string(nil), hop...)
	if shquote.HopFromExec(hop).Shell {
		return append(argv, shquote.Join(words)), nil
	}
	return append(argv, words...), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

type localTarget struct {
	spec Spec

	mu     sync.Mutex
	closed bool
	procs  map[*localProcess]struct{}
}

func (t *localTarget) Name() string { return t.spec.Name }

func (t *localTarget) Start(ctx context.Context, c Command) (Process, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("local target: empty command")
	}
	argv, err := hopArgv(t.spec.Exec, c)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("start %s: target %q is closed", argv[0], t.spec.Name)
	}

	// A relative program path (a --python flag, editor settings) names a
	// file from torchlsp's working directory, as typed; the process itself
	// starts in NeutralDir.
	if strings.Contains(argv[0], "/") && !filepath.IsAbs(argv[0]) {
		abs, err := filepath.Abs(argv[0])
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", argv[0], err)
		}
		argv[0] = abs
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = NeutralDir
	cmd.Env = os.Environ()
	if len(t.spec.Exec) == 0 {
		for _, k := range sortedKeys(c.Env) {
			cmd.Env = append(cmd.Env, k+"="+c.Env[k])
		}
	}
	// Its own process group, so that Kill reaches whatever it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	p := &localProcess{cmd: cmd, target: t, exited: make(chan struct{})}
	// Plain pipes rather than exec's copying goroutines: Wait then returns
	// when the process exits and the reader sees EOF when every holder of
	// the write end is gone.
	var child []*os.File
	closeAll := func() {
		for _, f := range append(child, p.stdinW, p.stdoutR, p.stderrR) {
			if f != nil {
				f.Close()
			}
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: stdin pipe: %w", argv[0], err)
	}
	p.stdinW, child = inW, append(child, inR)
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("start %s: stdout pipe: %w", argv[0], err)
	}
	p.stdoutR, child = outR, append(child, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("start %s: stderr pipe: %w", argv[0], err)
	}
	p.stderrR, child = errR, append(child, errW)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW

	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	for _, f := range child {
		f.Close()
	}
	p.stdout = &eofCloser{f: outR}
	p.stderr = &eofCloser{f: errR}

	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		p.Kill()
		return nil, fmt.Errorf("start %s: target %q is closed", argv[0], t.spec.Name)
	}
	t.procs[p] = struct{}{}
	t.mu.Unlock()

	go p.reap()
	go func() {
		select {
		case <-ctx.Done():
			p.Kill()
		case <-p.exited:
		}
	}()
	return p, nil
}

func (t *localTarget) Close() error {
	t.mu.Lock()
	t.closed = true
	procs := make([]*localProcess, 0, len(t.procs))
	for p := range t.procs {
		procs = append(procs, p)
	}
	t.mu.Unlock()
	for _, p := range procs {
		p.Kill()
		p.stdout.Close()
		p.stderr.Close()
	}
	return nil
}

type localProcess struct {
	cmd    *exec.Cmd
	target *localTarget

	stdinW         *os.File
	stdoutR        *os.File
	stderrR        *os.File
	stdout, stderr *eofCloser
	exited         chan struct{} // closed once the process is reaped
	waitErr        error
	killMu         sync.Mutex
}

func (p *localProcess) Stdin() io.WriteCloser { return p.stdinW }
func (p *localProcess) Stdout() io.Reader     { return p.stdout }
func (p *localProcess) Stderr() io.Reader     { return p.stderr }

// reap waits for the process so that Kill never signals a reused pid.
func (p *localProcess) reap() {
	err := p.cmd.Wait()
	p.killMu.Lock()
	p.waitErr = err
	close(p.exited)
	p.killMu.Unlock()
	p.stdinW.Close()
	p.target.mu.Lock()
	delete(p.target.procs, p)
	p.target.mu.Unlock()
}

// Wait waits for the process to exit. Its stdout and stderr stay readable
// until EOF.
func (p *localProcess) Wait() error {
	<-p.exited
	return p.waitErr
}

// Kill sends SIGKILL to the process group.
func (p *localProcess) Kill() error {
	return p.signal(syscall.SIGKILL)
}

func (p *localProcess) signal(sig syscall.Signal) error {
	p.killMu.Lock()
	defer p.killMu.Unlock()
	pid := p.cmd.Process.Pid
	// The group may outlive its leader; the leader's pid is not reused
	// while its group exists, so signalling the group stays safe.
	err := syscall.Kill(-pid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", pid, err)
	}
	return nil
}

// Terminate sends SIGTERM to the process group and SIGKILL after grace if
// the process has not exited by then.
func (p *localProcess) Terminate(grace time.Duration) error {
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		// Leftover group members get no second chance.
		return p.signal(syscall.SIGKILL)
	case <-t.C:
		return p.signal(syscall.SIGKILL)
	}
}

// eofCloser closes the read end of a pipe once it reports EOF or an error,
// so that readers that drain a process's output release its descriptors.
type eofCloser struct {
	f    *os.File
	once sync.Once
}

func (r *eofCloser) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if err != nil {
		r.Close()
	}
	return n, err
}

func (r *eofCloser) Close() error {
	r.once.Do(func() { r.f.Close() })
	return nil
}
