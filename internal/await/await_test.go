//go:build linux

package await

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// A process group's members, one reaped by nobody (a zombie), end when
// killed; Gone returns once they have, and not before.
func TestGoneGroup(t *testing.T) {
	t.Parallel()
	mark := "await-test-" + t.Name()
	cmd := exec.Command("sh", "-c", "sleep 600 & sleep 601; : "+mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL); _ = cmd.Wait() })
	members := func() []int { return Group(pgid) }
	if err := Gone(ctxFor(t, 200*time.Millisecond), members); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Gone on a running group = %v, want the deadline", err)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := Gone(ctxFor(t, 10*time.Second), members); err != nil {
		t.Fatalf("Gone after the kill: %v", err)
	}
	if left := members(); len(left) != 0 {
		t.Errorf("members left: %v", left)
	}
	if got := Cmdline(mark); len(got) != 0 {
		t.Errorf("Cmdline(%q) = %v after the kill", mark, got)
	}
}

func TestCmdline(t *testing.T) {
	t.Parallel()
	mark := "await-cmdline-mark"
	cmd := exec.Command("sh", "-c", "read x; : "+mark)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if got := Cmdline(mark); len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Errorf("Cmdline(%q) = %v, want [%d]", mark, got, cmd.Process.Pid)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := Gone(ctxFor(t, 10*time.Second), func() []int { return Cmdline(mark) }); err != nil {
		t.Error(err)
	}
}

// File sees a file written in a directory made after the wait began, and
// the wait ends with its context otherwise.
func TestFileAndChanged(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "ready")
	done := make(chan error, 1)
	go func() {
		done <- Changed(ctxFor(t, 10*time.Second), root, func() bool {
			b, err := os.ReadFile(path)
			return err == nil && strings.Contains(string(b), "yes")
		})
	}()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not yet"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("yes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Changed: %v", err)
	}
	got, err := File(ctxFor(t, 10*time.Second), path, func(b []byte) bool { return len(b) > 0 })
	if err != nil || string(got) != "yes" {
		t.Errorf("File = %q, %v", got, err)
	}
	if _, err := File(ctxFor(t, 100*time.Millisecond), filepath.Join(root, "never"), func([]byte) bool { return true }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("File of a file never written = %v, want the deadline", err)
	}
}
