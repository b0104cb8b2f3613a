package faults

import (
	"context"
	"os"
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
	needPython(t)
	bin := buildServer(t)
	site := filepath.Join(repoRoot(t), "testdata", "site")
	for _, how := range []string{"stdin closed", "client process killed"} {
		t.Run(how, func(t *testing.T) {
			mark := marker(t)
			ws, file, text := workspace(t)
			settings := targetSettings(t, debianPython, map[string]string{"PYTHONPATH": site, "FAULT_MARK": mark})
			opts := lsptest.Options{RootDir: ws, InitializationOptions: settings, Settings: settings, Configuration: true}
			var parent *exec.Cmd
			if how == "client process killed" {
				parent = exec.Command("sleep", "600")
				if err := parent.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
				opts.ProcessID = parent.Process.Pid
			}
			tmp := t.TempDir()
			cmd := exec.Command(bin, "serve", "--stdio")
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+tmp+"/config", "XDG_CACHE_HOME="+tmp+"/cache", "XDG_STATE_HOME="+tmp+"/state")
			p, err := lsptest.StartProcess(cmd, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = p.Wait() })
			ctx := testContext(t, 60*time.Second)
			if _, err := p.Handshake(ctx); err != nil {
				t.Fatal(err)
			}
			uri := lsptest.FileURI(file)
			if err := p.DidOpen(uri, "python", text); err != nil {
				t.Fatal(err)
			}
			line, col := at(t, text, "torch.add(", 0, 6) // answered by the helper
			if h, err := p.Hover(ctx, uri, line, col); err != nil || h == nil {
				t.Fatalf("hover: %v %v", h, err)
			}
			awaitProcess(t, mark, "torchlsp_helper", 10*time.Second)

			if parent != nil {
				_ = parent.Process.Kill()
				_ = parent.Wait()
			} else {
				_ = p.Close()
			}
			exited := make(chan int, 1)
			go func() { code, _ := p.Wait(); exited <- code }()
			select {
			case code := <-exited:
				if code != 1 {
					t.Errorf("exit code %d, want 1 (no shutdown was asked)", code)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the server did not exit within 30s of its client vanishing")
			}
			awaitNoProcesses(t, mark, 10*time.Second)
		})
	}
}

// TestTerminateKillsProcessIgnoringSIGTERM starts, on a local target, a
// program that ignores SIGTERM and has a child (as a repro script that
// spawns workers may): Terminate must end both after its grace period.
func TestTerminateKillsProcessIgnoringSIGTERM(t *testing.T) {
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
	// The child may still be starting when the parent prints "ready".
	for deadline := time.Now().Add(10 * time.Second); len(processesWith(t, mark)) != 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes with the marker, want the program and its child", len(processesWith(t, mark)))
		}
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
