package faults

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote"
)

// TestClientVanishes runs the torchlsp binary with a target whose helper
// is running, then makes the editor disappear: its pipe closes (stdin
// EOF) or its process dies without closing anything. The server must
// exit, and no process it started (helper, mirror) may outlive it.
func TestClientVanishes(t *testing.T) {
	t.Parallel()
	needPython(t)
	bin := buildServer(t)
	site := filepath.Join(repoRoot(t), "testdata", "site")
	for _, how := range []string{"stdin closed", "client process killed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			mark := marker(t)
			files, _ := workspace(t)
			var opts lsptest.Options
			var parent *exec.Cmd
			if how == "client process killed" {
				parent = exec.Command("sleep", "600")
				if err := parent.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
				opts.ProcessID = parent.Process.Pid
			}
			env := lsptest.Start(t, lsptest.Config{
				Server:   lsptest.Program{Path: bin},
				Files:    files,
				Settings: targetSettings(t, debianPython, map[string]string{"PYTHONPATH": site, "FAULT_MARK": mark}),
				Client:   opts,
			})
			uri := env.OpenFile("train.py")
			if h := env.Hover(uri, env.At(uri, "torch.add(", 6)); h == nil { // answered by the helper
				t.Fatal("hover: nothing")
			}
			awaitProcess(t, mark, "torchlsp_helper", 10*time.Second)

			if parent != nil {
				_ = parent.Process.Kill()
				_ = parent.Wait()
			} else {
				_ = env.Editor.Close()
			}
			if code := env.ExitCode(); code != 1 {
				t.Errorf("exit code %d, want 1 (no shutdown was asked)", code)
			}
			awaitNoProcesses(t, mark, 10*time.Second)
		})
	}
}

// TestTerminateKillsProcessIgnoringSIGTERM starts, on a local target, a
// program that ignores SIGTERM and has a child (as a repro script that
// spawns workers may): Terminate must end both after its grace period.
func TestTerminateKillsProcessIgnoringSIGTERM(t *testing.T) {
	t.Parallel()
	needPython(t)
	mark := marker(t)
	target := remote.NewLocal(remote.Spec{Name: "local", Python: debianPython, Env: map[string]string{"FAULT_MARK": mark}})
	defer target.Close()
	script := `
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
print("ready", flush=True)
time.sleep(600)
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proc, err := target.Start(ctx, remote.Command{Argv: []string{debianPython, "-c", script}, Env: map[string]string{"FAULT_MARK": mark}})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := proc.Stdout().Read(buf); err != nil || !strings.HasPrefix(string(buf), "ready") {
		t.Fatalf("program not ready: %q %v", buf, err)
	}
	// Popen returned once the child had started its interpreter, before
	// "ready".
	if n := len(processesWith(t, mark)); n != 2 {
		t.Fatalf("%d processes with the marker, want the program and its child", n)
	}
	term, ok := proc.(interface{ Terminate(time.Duration) error })
	if !ok {
		t.Fatalf("local process %T has no Terminate", proc)
	}
	// SIGTERM is ignored, so Terminate must wait the grace and then kill.
	start := time.Now()
	if err := term.Terminate(300 * time.Millisecond); err != nil {
		t.Fatalf("Terminate: %v", err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("Terminate returned after %v, before its grace: SIGTERM should have been ignored", waited)
	}
	_ = proc.Wait()
	awaitNoProcesses(t, mark, 10*time.Second)
}
