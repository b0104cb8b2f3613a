package repro

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/remote/sshtest"
)

// sshTarget starts sshd on loopback and returns a Target logged in to it.
func sshTarget(t *testing.T, name string) remote.Target {
	t.Helper()
	srv := sshtest.Start(t, sshtest.Config{})
	cfg := sshtest.WriteFile(t, "ssh_config", strings.Join([]string{
		"Host " + name,
		"  HostName " + srv.Host,
		"  Port " + strconv.Itoa(srv.Port),
		"  User " + srv.User,
		"  IdentityFile " + srv.Keys.Client,
	}, "\n")+"\n")
	tg, err := sshtarget.New(remote.Spec{Name: name, SSH: name}, sshtarget.Options{
		ConfigFile:      cfg,
		KnownHostsFiles: []string{sshtest.WriteFile(t, "known_hosts", srv.KnownHosts(t, ""))},
		AgentSocket:     "none",
		Home:            t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}

func TestRunManyOverSSH(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sshd")
	}
	python := requirePython(t, debianPython)
	vs, err := Generate(Spec{Mode: "reduce-overhead", StandIn: true, Variants: []string{VariantThreads, VariantMainThread}})
	if err != nil {
		t.Fatal(err)
	}
	runs := []TargetRun{
		{Target: sshTarget(t, "loopback"), Interpreter: remote.Interpreter{Python: python}, Variants: vs},
		{Target: localTarget(t, "local"), Interpreter: remote.Interpreter{Python: python}, Variants: vs},
	}
	reps, err := RunMany(context.Background(), runs, RunOptions{Workspace: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range reps {
		byName := map[string]VariantResult{}
		for _, r := range rep.Variants {
			byName[r.Variant] = r
		}
		th := byName[VariantThreads]
		if f, ok := firstTorchFrame(th); th.OK || !ok || f.Func != "get_obj" {
			t.Errorf("%s threads: %+v", rep.Target, th)
		}
		if mt := byName[VariantMainThread]; !mt.OK {
			t.Errorf("%s main thread: %+v", rep.Target, mt)
		}
	}
}

func TestSSHTimeoutKillsRemoteProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sshd")
	}
	python := requirePython(t, debianPython)
	marker := fmt.Sprintf("torchlsp-repro-ssh-%d", os.Getpid())
	sleeper := script("sleeper",
		"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', "+pyStringLiteral(marker)+"])",
		"print('ready')", "time.sleep(300)")
	rep, err := Run(context.Background(), sshTarget(t, "loopback"), remote.Interpreter{Python: python}, []Variant{sleeper}, RunOptions{Timeout: 2 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Variants[0].Failure; f != "timed out after 2 s" {
		t.Errorf("failure %q", f)
	}
	waitGone(t, marker)
}

func firstTorchFrame(r VariantResult) (Frame, bool) {
	if len(r.Errors) == 0 {
		return Frame{}, false
	}
	return r.Errors[0].TorchFrame()
}
