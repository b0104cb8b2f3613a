package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote/sshtest"
)

// TestMeasureGrowth prints the growth tables of docs/BENCHMARKS.md: the
// cold first correct definition of nn.Linear through ssh, the jump host
// and the pct hop, against the link's round trip (0, 10, 50 and 150 ms at
// 100 Mbit/s) and against the size of the tree (at 50 ms), each beside a
// bare `ssh -J jump host true` on the same link and, on the first tree,
// beside pyright reading a local copy of it (no link at all). It runs only
// with TORCHLSP_MEASURE=1:
//
//	TORCHLSP_MEASURE=1 TORCHLSP_MEASURE_SITES=/tmp/site211,/tmp/site211x2,/tmp/site211x4 \
//	  go test -count=1 -run TestMeasureGrowth -v ./test/e2e/ | grep MEASURE
//
// TORCHLSP_MEASURE_SITES names site dirs holding a torch source tree,
// comma-separated (default: Debian's torch alone).
func TestMeasureGrowth(t *testing.T) {
	if os.Getenv("TORCHLSP_MEASURE") != "1" {
		t.Skip("set TORCHLSP_MEASURE=1 to measure")
	}
	r := newSSHRig(t)
	var sites []string
	for _, s := range strings.Split(os.Getenv("TORCHLSP_MEASURE_SITES"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			if _, err := os.Stat(filepath.Join(s, "torch", "__init__.py")); err != nil {
				t.Fatalf("TORCHLSP_MEASURE_SITES: %s holds no torch: %v", s, err)
			}
			sites = append(sites, s)
		}
	}
	envOf := func(site string) map[string]string {
		if site == "" {
			return nil
		}
		return map[string]string{"PYTHONPATH": site}
	}
	first := ""
	if len(sites) > 0 {
		first = sites[0]
	}
	bare := func() time.Duration { return bestSSHTrue(t, r) }

	if d, ok := pyrightFirstDefinition(t, first); ok {
		t.Logf("MEASURE pyright, local copy of %s: initialize → first correct definition %v", siteLabel(first), d.Round(time.Millisecond))
	}
	for _, oneWay := range []time.Duration{0, 5 * time.Millisecond, 25 * time.Millisecond, 75 * time.Millisecond} {
		r.proxy.SetLink(sshtest.Link{Delay: oneWay, Rate: sshtest.WAN.Rate})
		b := bare()
		m := measureFirst(t, r, r.settings(envOf(first)), false)
		t.Logf("MEASURE growth RTT %v, %s: ssh -J jump host true %v; torchlsp first correct definition (empty cache) %v (%.2f× ssh true); %.2f MB moved before it",
			2*oneWay, siteLabel(first), b, m.first.Round(time.Millisecond), float64(m.first)/float64(b), float64(m.moved)/1e6)
	}
	r.proxy.SetLink(sshtest.WAN)
	for _, site := range sites[min(1, len(sites)):] {
		b := bare()
		m := measureFirst(t, r, r.settings(envOf(site)), false)
		t.Logf("MEASURE growth tree %s (%d files): ssh -J jump host true %v; torchlsp first correct definition (empty cache) %v (%.2f× ssh true); %.2f MB moved before it",
			siteLabel(site), countPython(site), b, m.first.Round(time.Millisecond), float64(m.first)/float64(b), float64(m.moved)/1e6)
	}
	r.proxy.SetLink(sshtest.Link{})
}

func siteLabel(site string) string {
	if site == "" {
		return "Debian torch 1.13"
	}
	return site
}

// countPython counts the .py and .pyi files under site/torch.
func countPython(site string) int {
	if site == "" {
		site = "/usr/lib/python3/dist-packages"
	}
	n := 0
	_ = filepath.WalkDir(filepath.Join(site, "torch"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".py") || strings.HasSuffix(p, ".pyi")) {
			n++
		}
		return nil
	})
	return n
}

// bestSSHTrue is the best of three `ssh -J jump host true` on the rig's
// current link.
func bestSSHTrue(t *testing.T, r *sshRig) time.Duration {
	t.Helper()
	d, err := bestOverSSH(t, r, "true")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// bestOverSSH runs argv on the rig's host with OpenSSH's client, through
// the jump host and the rig's current link, three times, and returns the
// fastest run.
func bestOverSSH(t *testing.T, r *sshRig, argv ...string) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := sshtest.WriteFile(t, "ssh_config_best", "Host *\n  IdentityFile "+r.keys.Client+"\n  IdentitiesOnly yes\n  UserKnownHostsFile "+r.knownHosts+"\n  StrictHostKeyChecking yes\n  ControlPath none\n")
	hostPort := strings.TrimPrefix(r.host.Addr, "127.0.0.1:")
	base := []string{"-F", cfg, "-T", "-J", r.jumpDest(), "-p", hostPort, r.host.User + "@127.0.0.1"}
	var best time.Duration
	var turns int64
	for i := 0; i < 3; i++ {
		t0, turns0 := time.Now(), r.proxy.Turns()
		if out, err := exec.CommandContext(ctx, "ssh", append(append([]string(nil), base...), argv...)...).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("ssh %v: %w: %s", argv, err, out)
		}
		if d := time.Since(t0); i == 0 || d < best {
			best, turns = d, r.proxy.Turns()-turns0
		}
	}
	t.Logf("MEASURE ssh -J jump host %.40q: best of 3 %v, %d turns through the jump host's relay", strings.Join(argv, " "), best.Round(time.Millisecond), turns)
	return best.Round(time.Millisecond), nil
}

// pyrightFirstDefinition runs pyright's language server (as scripts/setup.sh
// --test installs it) on the e2e workspace with extraPaths at site (a local
// copy of the tree; "" for Debian's torch through the interpreter) and
// returns the time from starting it to its first definition of nn.Linear
// in torch/nn/modules/linear.py. ok is false when pyright is missing.
func pyrightFirstDefinition(t *testing.T, site string) (time.Duration, bool) {
	argv, err := lsptest.NPMServer("pyright")
	if err != nil {
		t.Logf("no pyright column: %v", err)
		return 0, false
	}
	ws := t.TempDir()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "test", "e2e", "testdata", "workspace", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "train.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	analysis := map[string]any{}
	if site != "" {
		analysis["extraPaths"] = []string{site}
	}
	settings := map[string]any{"python": map[string]any{"pythonPath": debianPython, "analysis": analysis}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	p, err := lsptest.StartProcess(cmd, lsptest.Options{
		RootDir: ws, Configuration: true, InitializationOptions: settings,
		Sections: func(name string) any {
			if name == "python" {
				return settings["python"]
			}
			if name == "python.analysis" {
				return analysis
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _, _ = p.Wait() }()
	ed := lsptest.NewEditor(p.Client, ws)
	if _, err := ed.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ed.Initialized(); err != nil {
		t.Fatal(err)
	}
	uri, err := ed.OpenFile("train.py")
	if err != nil {
		t.Fatal(err)
	}
	pos, err := ed.Pos(uri, "nn.Linear(4, 4)", 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		locs, err := ed.Definition(ctx, uri, pos.Line, pos.Character)
		if err == nil && len(locs) > 0 && strings.HasSuffix(locs[0].URI, "/torch/nn/modules/linear.py") {
			return time.Since(t0), true
		}
		// Paces the polls that are the measurement: pyright says
		// nothing when it can answer.
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("pyright gave no definition of nn.Linear: %v", ctx.Err())
	return 0, false
}
