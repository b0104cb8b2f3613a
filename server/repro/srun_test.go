package repro

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote"
)

// TestThroughSrun runs the variants through a Slurm-style exec hop, the
// way a cluster user's target is configured (exec = ["srun", "--gres=gpu:2",
// "-p", "debug", "--"]), with a stand-in srun that takes srun's options and
// exit codes.
func TestThroughSrun(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is missing", debianPython)
	}
	shim, err := filepath.Abs(filepath.Join("testdata", "srun", "srun"))
	if err != nil {
		t.Fatal(err)
	}
	variants, err := Generate(Spec{StandIn: true, Mode: "reduce-overhead", Threads: 2, CallsPerThread: 40,
		Variants: []string{VariantThreads, VariantMainThread, VariantCudagraphsOff}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("allocated", func(t *testing.T) {
		// srun itself runs on this machine and inherits the environment;
		// the target's env is for the interpreter behind it.
		log := filepath.Join(t.TempDir(), "srun.log")
		t.Setenv("SRUN_LOG", log)
		target := remote.NewLocal(remote.Spec{Name: "cluster", Exec: []string{shim, "--gres=gpu:2", "-p", "debug", "--"}})
		defer target.Close()
		rep, err := Run(ctx, target, remote.Interpreter{Python: debianPython}, variants, RunOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]VariantResult{}
		for _, v := range rep.Variants {
			byName[v.Variant] = v
		}
		if v := byName[VariantThreads]; v.OK || len(v.Errors) == 0 || v.Errors[0].Type != "AssertionError" {
			t.Errorf("threads through srun: %+v", v)
		}
		for _, name := range []string{VariantMainThread, VariantCudagraphsOff} {
			if v := byName[name]; !v.OK || v.Right != v.ExpectedCalls {
				t.Errorf("%s through srun: %+v", name, v)
			}
		}
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "partition=debug gres=gpu:2"); n != len(variants) {
			t.Errorf("srun allocated %d times, want one per variant (%d):\n%s", n, len(variants), data)
		}
	})

	t.Run("refused", func(t *testing.T) {
		target := remote.NewLocal(remote.Spec{Name: "cluster", Exec: []string{shim, "-p", "nonexistent", "--"}})
		defer target.Close()
		rep, err := Run(ctx, target, remote.Interpreter{Python: debianPython}, variants[:1], RunOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		v := rep.Variants[0]
		if v.OK || v.ExitCode != 1 || !strings.Contains(v.Failure+strings.Join(v.Notes, " "), "Invalid partition") {
			t.Errorf("refused allocation: ok %v exit %d failure %q notes %q", v.OK, v.ExitCode, v.Failure, v.Notes)
		}
	})
}
