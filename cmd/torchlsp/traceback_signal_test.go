package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binaryCommand is the built torchlsp, started with directories of the
// test's own and its stderr kept.
type binaryCommand struct {
	cmd    *exec.Cmd
	mu     sync.Mutex // guards stderr
	stderr bytes.Buffer
	lines  chan string // stderr's lines, as they come
	exited chan error  // the process's end
}

// startBinary starts bin with args; stdin, when set, is its stdin.
func startBinary(t *testing.T, bin string, stdin *os.File, args ...string) *binaryCommand {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "HOME="+tmp, "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"),
		"XDG_CACHE_HOME="+filepath.Join(tmp, "cache"), "XDG_STATE_HOME="+filepath.Join(tmp, "state"))
	if stdin != nil {
		cmd.Stdin = stdin
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &binaryCommand{cmd: cmd, lines: make(chan string, 100), exited: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			b.mu.Lock()
			b.stderr.WriteString(sc.Text() + "\n")
			b.mu.Unlock()
			select {
			case b.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		<-read // Wait closes the pipe: read it to its end first
		b.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-b.exited
	})
	return b
}

func (b *binaryCommand) errText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.String()
}

// awaitLine waits for a line of stderr holding want.
func (b *binaryCommand) awaitLine(t *testing.T, want string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l := <-b.lines:
			if strings.Contains(l, want) {
				return
			}
		case err := <-b.exited:
			b.exited <- err
			t.Fatalf("exited (%v) before saying %q:\n%s", err, want, b.errText())
		case <-deadline:
			t.Fatalf("no %q on stderr after %v:\n%s", want, within, b.errText())
		}
	}
}

// awaitExit waits for the process to end and returns its exit status.
func (b *binaryCommand) awaitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-b.exited:
		b.exited <- err
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee) && ee.Exited():
			return ee.ExitCode()
		}
		t.Fatalf("did not exit by itself: %v\n%s", err, b.errText())
	case <-time.After(within):
		t.Fatalf("still running %v after it was asked to stop:\n%s", within, b.errText())
	}
	return 0
}

// TestTracebackEndsOnSignals runs the built binary on inputs that never
// end: a named pipe nobody writes to, one whose writer sends nothing, an
// endless stream on stdin, and /dev/zero. SIGINT and SIGTERM end it at
// once, with a message naming the signal and a non-zero status; /dev/zero
// ends by itself at the stream bound. (It read forever, and the signals
// did nothing.)
func TestTracebackEndsOnSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "torchlsp")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const prompt = 30 * time.Second // how long "at once" may take on a loaded machine

	t.Run("a named pipe nobody writes to, SIGTERM", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "trace.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		b := startBinary(t, bin, nil, "traceback", fifo)
		b.awaitLine(t, "reading "+fifo+", a named pipe, until its writer closes it", prompt)
		if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := b.awaitExit(t, prompt); code == 0 || !strings.Contains(b.errText(), "stopped (terminated signal received) while reading "+fifo+": nothing was mapped") {
			t.Errorf("exit %d:\n%s", code, b.errText())
		}
	})

	t.Run("a named pipe whose writer sends nothing, SIGINT", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "trace.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		b := startBinary(t, bin, nil, "traceback", "--quiet", fifo)
		// The open for writing returns once the command has the pipe
		// open for reading: it is in its read.
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if err := b.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if code := b.awaitExit(t, prompt); code == 0 || !strings.Contains(b.errText(), "stopped (interrupt signal received) while reading "+fifo) {
			t.Errorf("exit %d:\n%s", code, b.errText())
		}
	})

	t.Run("an endless stream on stdin, SIGTERM", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		b := startBinary(t, bin, r, "traceback", "--quiet", "-")
		r.Close()
		// The writer never stops; the pipe holds 64 KiB, so once 8 MiB
		// are written the command is reading them.
		written := make(chan struct{})
		go func() {
			chunk := bytes.Repeat([]byte("  File \"/x.py\", line 1, in f\n"), 1<<12)
			total, announce := 0, written
			for {
				n, err := w.Write(chunk)
				total += n
				if total >= 8<<20 && announce != nil {
					close(announce)
					announce = nil
				}
				if err != nil {
					return // the command ended
				}
			}
		}()
		defer w.Close()
		select {
		case <-written:
		case <-time.After(prompt):
			t.Fatalf("the command read nothing in %v:\n%s", prompt, b.errText())
		}
		if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := b.awaitExit(t, prompt); code == 0 || !strings.Contains(b.errText(), "stopped (terminated signal received) while reading stdin: nothing was mapped") {
			t.Errorf("exit %d:\n%s", code, b.errText())
		}
	})

	t.Run("/dev/zero ends at the stream bound", func(t *testing.T) {
		b := startBinary(t, bin, nil, "traceback", "/dev/zero")
		b.awaitLine(t, "reading /dev/zero, a character device, until its end (at most 1024 MB)", prompt)
		if code := b.awaitExit(t, 3*time.Minute); code != 1 || !strings.Contains(b.errText(), "/dev/zero did not end within 1024 MB: reading stopped there") {
			t.Errorf("exit %d:\n%s", code, b.errText())
		}
	})

	t.Run("/dev/zero on stdin, SIGTERM", func(t *testing.T) {
		zero, err := os.Open("/dev/zero")
		if err != nil {
			t.Fatal(err)
		}
		defer zero.Close()
		b := startBinary(t, bin, zero, "traceback", "-")
		b.awaitLine(t, "reading stdin, a character device, until its end (at most 1024 MB)", prompt)
		if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := b.awaitExit(t, prompt); code == 0 || !strings.Contains(b.errText(), "stopped (terminated signal received) while reading stdin: nothing was mapped") {
			t.Errorf("exit %d:\n%s", code, b.errText())
		}
	})
}
