package remote

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
)

func runLocal(t *testing.T, spec Spec, cmd Command) (string, error) {
	t.Helper()
	target := NewLocal(spec)
	defer target.Close()
	p, err := target.Start(testContext(t), cmd)
	if err != nil {
		return "", err
	}
	p.Stdin().Close()
	out, _ := io.ReadAll(p.Stdout())
	return string(out), p.Wait()
}

func TestLocalStart(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		cmd     Command
		want    string
		wantErr string
	}{
		{"argv without shell", Spec{}, Command{Argv: []string{"echo", "a b", "$HOME"}}, "a b $HOME\n", ""},
		{"env added", Spec{}, Command{Argv: []string{"sh", "-c", "echo $TORCHLSP_X"}, Env: map[string]string{"TORCHLSP_X": "x y"}}, "x y\n", ""},
		{"env inherited", Spec{}, Command{Argv: []string{"sh", "-c", "test -n \"$PATH\" && echo ok"}}, "ok\n", ""},
		{"exec prefix", Spec{Exec: []string{"env", "TORCHLSP_HOP=1"}}, Command{Argv: []string{"sh", "-c", "echo hop=$TORCHLSP_HOP"}}, "hop=1\n", ""},
		{"env through a hop that drops it", Spec{Exec: []string{"env", "-i", "PATH=/usr/bin:/bin"}},
			Command{Argv: []string{"sh", "-c", "echo $TORCHLSP_X:$HOME"}, Env: map[string]string{"TORCHLSP_X": "a=b c"}}, "a=b c:\n", ""},
		{"bash -lc hop", Spec{Exec: []string{"bash", "-lc"}}, Command{Argv: []string{"printf", "%s|", "a b", "$HOME", "'", "; echo pwned"}}, "a b|$HOME|'|; echo pwned|", ""},
		{"env through a bash -lc hop", Spec{Exec: []string{"bash", "-lc"}},
			Command{Argv: []string{"sh", "-c", "echo $TORCHLSP_X"}, Env: map[string]string{"TORCHLSP_X": "x 'y'"}}, "x 'y'\n", ""},
		{"bash -l is no shell hop", Spec{Exec: []string{"bash", "-l"}}, Command{Argv: []string{"true"}}, "", "does not take a command string"},
		{"exit status", Spec{}, Command{Argv: []string{"sh", "-c", "exit 3"}}, "", "exit status 3"},
		{"missing program", Spec{}, Command{Argv: []string{"/nonexistent/prog"}}, "", "no such file"},
		{"empty argv", Spec{}, Command{}, "", "empty command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runLocal(t, tt.spec, tt.cmd)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("output %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// startGroup starts a shell that starts a background child, both deaf to
// SIGTERM, and returns the process and the child's pid.
func startGroup(t *testing.T, ctx context.Context, target Target) (Process, int) {
	t.Helper()
	p, err := target.Start(ctx, Command{Argv: []string{"sh", "-c", "trap '' TERM; sleep 60 & echo $!; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return p, pid
}

// waitGone waits, 10 s at most, until pid has ended (a zombie has: the
// child is reparented and reaped by init).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := await.Gone(ctx, func() []int { return []int{pid} }); err != nil {
		t.Errorf("process %d still alive: %v", pid, err)
	}
}

func TestLocalKillEndsGroup(t *testing.T) {
	target := NewLocal(Spec{})
	defer target.Close()
	p, child := startGroup(t, testContext(t), target)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err == nil {
		t.Error("killed process exited cleanly")
	}
	waitGone(t, child)
	if err := p.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}
}

func TestLocalContextCancelKills(t *testing.T) {
	target := NewLocal(Spec{})
	defer target.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p, child := startGroup(t, ctx, target)
	cancel()
	p.Wait()
	waitGone(t, child)
}

func TestLocalTerminate(t *testing.T) {
	target := NewLocal(Spec{})
	defer target.Close()
	// The shell ignores SIGTERM, so only the SIGKILL after grace ends it.
	p, child := startGroup(t, testContext(t), target)
	if err := p.(Terminator).Terminate(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	waitGone(t, child)
}

func TestLocalCloseKillsProcesses(t *testing.T) {
	target := NewLocal(Spec{})
	p, child := startGroup(t, testContext(t), target)
	target.Close()
	p.Wait()
	waitGone(t, child)
	if _, err := target.Start(testContext(t), Command{Argv: []string{"true"}}); err == nil {
		t.Error("Start after Close succeeded")
	}
}
