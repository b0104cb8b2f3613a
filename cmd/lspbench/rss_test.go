package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWatchRSSSeesChildren runs a real shell whose child allocates more
// than the shell, and checks the tree's peak includes the child's.
func TestWatchRSSSeesChildren(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The child holds 64 MiB, says so, and keeps them until its stdin
	// closes.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", python+` -c 'import sys; b = bytearray(64 << 20); print("held", flush=True); sys.stdin.read()'; :`)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := watchRSS(ctx, cmd.Process.Pid, 10*time.Millisecond)
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the child did not say it holds its memory: %q, %v", line, err)
	}
	tree := descendants(cmd.Process.Pid)
	if len(tree) < 2 {
		t.Fatalf("child never reached 64 MiB; tree %v", tree)
	}
	if kb, ok := vmHWM(tree[1]); !ok || kb <= 64<<10 {
		t.Fatalf("child never reached 64 MiB (%d kB); tree %v", kb, tree)
	}
	peak := w.stop()
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if peak.Procs < 2 || peak.TreeKB < 64<<10 || peak.MaxKB < 64<<10 || peak.RootKB >= peak.MaxKB {
		t.Fatalf("peak = %+v, want a child above 64 MiB and a small root", peak)
	}
	if !slices.ContainsFunc(peak.Top, func(s string) bool { return strings.HasPrefix(s, "python3=") }) {
		t.Errorf("top = %q, want python3 named", peak.Top)
	}
}

func TestParentPIDAndVmHWM(t *testing.T) {
	ppid, ok := parentPID(os.Getpid())
	if !ok || ppid != os.Getppid() {
		t.Errorf("parentPID(self) = %d, %v; want %d", ppid, ok, os.Getppid())
	}
	if kb, ok := vmHWM(os.Getpid()); !ok || kb <= 0 {
		t.Errorf("vmHWM(self) = %d, %v", kb, ok)
	}
	if _, ok := vmHWM(1 << 30); ok {
		t.Error("vmHWM of a pid that cannot exist succeeded")
	}
}

// TestSettle runs a real process that spins for a while and then sleeps:
// settle returns once the spinning stopped, and gives up (-1) on one that
// never stops.
func TestSettle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(script string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	// The shell spins on builtins for about 2 s, then waits in sleep.
	busy := start(`end=$(($(date +%s) + 2)); while [ "$(date +%s)" -lt $end ]; do :; done; exec sleep 60`)
	if d := settle(ctx, busy.Process.Pid, 20*time.Second); d < time.Second || d > 15*time.Second {
		t.Errorf("settle on a process busy for 2 s = %v", d)
	}
	spin := start(`while :; do :; done`)
	if d := settle(ctx, spin.Process.Pid, 3*time.Second); d != -1 {
		t.Errorf("settle on a process that never idles = %v, want -1", d)
	}
}
