package repro

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/remote"
)

// TestScriptEndsWhenRunnerGoesAway starts a generated script the way the
// runner does, on the user's code that sleeps for two minutes before its
// compile call, and then closes its stdin as a lost connection does: the
// script stops within seconds, says why, removes its workspace directory
// and takes the user's child process with it. Before, it ran on until its
// own deadline.
func TestScriptEndsWhenRunnerGoesAway(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	ws := t.TempDir()
	entry := `import subprocess, sys, time
child = subprocess.Popen(["sleep", "120"])
try:
    input()
    empty = False
except EOFError:
    empty = True
print("user code up, child %d, stdin at its end: %s" % (child.pid, empty), flush=True)
time.sleep(120)
import torch
f = torch.compile(lambda x: x + 1)
f(torch.ones(2))
`
	if err := os.WriteFile(filepath.Join(ws, "train.py"), []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := CollectWorkspace(ws, BundleLimits{})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := Generate(Spec{
		StandIn: true, Files: b.Files, Entry: "train.py", CaptureFile: "train.py", CaptureLines: [2]int{11, 11},
		CaptureTimeout: 5 * time.Minute, Variants: []string{VariantMainThread},
	})
	if err != nil || len(vs) != 1 {
		t.Fatalf("generate: %d variants, %v", len(vs), err)
	}
	tmp := t.TempDir()
	c := remote.ProgramCommand(remote.Interpreter{Python: python}, "torchlsp-repro-main.py")
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	if err := remote.SendProgram(stdin, []byte(vs[0].Script)); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write(vs[0].Input); err != nil {
		t.Fatal(err)
	}
	up := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "user code up") {
				up <- sc.Text()
			}
		}
		close(up)
	}()
	select {
	case line, ok := <-up:
		if !ok {
			t.Fatalf("the script ended before the user's code ran; stderr:\n%s", stderr.String())
		}
		t.Log(line)
		// The user's code reads an empty stdin, not the runner's pipe.
		if !strings.HasSuffix(line, "stdin at its end: True") {
			t.Errorf("the user's code read something other than an empty stdin: %q", line)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the user's code did not start; stderr:\n%s", stderr.String())
	}
	if entries, _ := filepath.Glob(filepath.Join(tmp, "torchlsp-ws-*")); len(entries) != 1 {
		t.Fatalf("workspace directories while running: %v", entries)
	}
	closed := time.Now()
	stdin.Close() // the runner goes away
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 125 {
			t.Errorf("the script ended with %v, want exit status 125", err)
		}
		t.Logf("ended %v after its stdin closed", time.Since(closed).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("the script still runs 20 s after its runner went away; stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "the runner went away") {
		t.Errorf("stderr does not say why it stopped:\n%s", stderr.String())
	}
	if entries, _ := filepath.Glob(filepath.Join(tmp, "torchlsp-ws-*")); len(entries) != 0 {
		t.Errorf("workspace directories left: %v", entries)
	}
	// The user's child went with the process group (once init reaps it).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := await.Gone(ctx, func() []int { return await.Group(cmd.Process.Pid) }); err != nil {
		t.Errorf("the script's process group still has members 10 s after it ended: %v", err)
	}
}
