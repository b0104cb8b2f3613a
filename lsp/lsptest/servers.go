package lsptest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/config"
)

// Sandbox is one test's world: a workspace folder and the XDG config,
// cache and state directories, all its own so that tests run in parallel.
type Sandbox struct {
	Workdir string // the workspace folder the editor opens
	Config  string // $XDG_CONFIG_HOME
	Cache   string // $XDG_CACHE_HOME
	State   string // $XDG_STATE_HOME
}

// NewSandbox makes fresh, empty directories for a test.
func NewSandbox(t testing.TB) Sandbox {
	t.Helper()
	root := t.TempDir()
	sb := Sandbox{
		Workdir: filepath.Join(root, "work"),
		Config:  filepath.Join(root, "config"),
		Cache:   filepath.Join(root, "cache"),
		State:   filepath.Join(root, "state"),
	}
	for _, d := range []string{sb.Workdir, sb.Config, sb.Cache, sb.State} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("sandbox: %v", err)
		}
	}
	return sb
}

// Dirs are the sandbox's directories as the engine names them.
func (sb Sandbox) Dirs() config.Dirs {
	return config.Dirs{Config: sb.Config, Cache: sb.Cache, State: sb.State}
}

// Environ is the environment of a server process in the sandbox: the
// caller's, with the XDG directories replaced.
func (sb Sandbox) Environ() []string {
	env := make([]string, 0, len(os.Environ())+3)
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "XDG_CONFIG_HOME="+sb.Config, "XDG_CACHE_HOME="+sb.Cache, "XDG_STATE_HOME="+sb.State)
}

// Server is a language server an Env can start against a sandbox.
type Server interface {
	launch(sb Sandbox) (*running, error)
}

// running is a started server: the client's end of its connection, and
// how to learn its exit code or stop it.
type running struct {
	conn io.ReadWriteCloser
	exit <-chan exitResult // receives once, when the server ends
	kill func()            // ends the server at once; for cleanup
	log  func() string     // what the server wrote to stderr, if known
}

type exitResult struct {
	code int
	err  error
}

// InProcess is torchlsp's engine and wire running in the test's process,
// behind a net.Pipe: the fast way to drive the whole server.
type InProcess struct {
	// Engine are the engine's options; Dirs default to the sandbox's and
	// Opener to the binary's (local and SSH targets).
	Engine server.Options
	// Wire are the wire's options; Version defaults to "lsptest".
	Wire lsp.Options
}

func (s InProcess) launch(sb Sandbox) (*running, error) {
	opts := s.Engine
	if opts.Dirs == (config.Dirs{}) {
		opts.Dirs = sb.Dirs()
	}
	if opts.Opener == nil {
		opts.Opener = sshtarget.Opener{}
	}
	wire := s.Wire
	if wire.Version == "" {
		wire.Version = "lsptest"
	}
	return Wire{Engine: lsp.NewEngine(server.New(opts)), Options: wire}.launch(sb)
}

// Program is a language server run as a process on its stdio, with the
// sandbox's XDG directories: torchlsp's binary, or any other server.
type Program struct {
	Path string   // the executable
	Args []string // its arguments; torchlsp's "serve --stdio" when nil
	Env  []string // added to the sandbox's environment (later entries win)
}

func (p Program) launch(sb Sandbox) (*running, error) {
	args := p.Args
	if args == nil {
		args = []string{"serve", "--stdio"}
	}
	cmd := exec.Command(p.Path, args...)
	cmd.Env = append(sb.Environ(), p.Env...)
	cmd.Dir = sb.Workdir
	// Its own process group, so that cleanup also ends what it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logPath := filepath.Join(filepath.Dir(sb.Workdir), "server-stderr.log")
	if sb.Workdir == "" {
		logPath = filepath.Join(os.TempDir(), fmt.Sprintf("lsptest-%d.log", time.Now().UnixNano()))
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	cmd.Stderr = logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", p.Path, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", p.Path, err)
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", p.Path, err)
	}
	exit := make(chan exitResult, 1)
	go func() {
		err := cmd.Wait()
		logFile.Close()
		var ee *exec.ExitError
		switch {
		case err == nil:
			exit <- exitResult{0, nil}
		case errors.As(err, &ee):
			exit <- exitResult{ee.ExitCode(), nil}
		default:
			exit <- exitResult{-1, err}
		}
	}()
	pid := cmd.Process.Pid
	return &running{
		// Closing the connection closes the server's stdin only, as an
		// editor closing its pipe does; its stdout is read to the end, so
		// a server writing while it exits gets no SIGPIPE.
		conn: stdinCloser{stdout, stdin},
		exit: exit,
		kill: func() { _ = syscall.Kill(-pid, syscall.SIGKILL) },
		log: func() string {
			data, _ := os.ReadFile(logPath)
			return string(data)
		},
	}, nil
}

// stdinCloser is a server process's stdio; Close closes only stdin.
type stdinCloser struct {
	io.Reader
	io.WriteCloser
}
