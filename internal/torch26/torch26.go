// Package torch26 gives tests the real torch 2.x they check version-aware
// answers against: Debian 13's python3-torch 2.6 (Python 3.13) in LXC
// container 200, entered with `pct exec 200 --` as the users torchlsp was
// written for enter theirs. The root file system is scripts/hops'
// images.sh trixie (built once by scripts/setup.sh --test, cached under
// /var/cache/torchlsp-hops); each container is lxc.sh's, an overlay on it,
// started for one test and destroyed after it.
package torch26

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// VMID is the container's number, as pct takes it.
const VMID = "200"

// Python is the interpreter inside the container.
const Python = "/usr/bin/python3"

// Container is one started container.
type Container struct {
	// Pct is the pct front end for this container (a script that runs
	// scripts/hops/pct with the container's LXC path).
	Pct string
	// RootFS is the image the container's root is an overlay on: the
	// target's own files, as they are in the container (its torch is
	// never written to), to read from this side.
	RootFS string
}

// SitePackages is where the container's torch lives, inside it.
const SitePackages = "/usr/lib/python3/dist-packages"

// Exec is the target's exec prefix, as a torchlsp.toml writes it, with
// the path of this container's pct.
func (c *Container) Exec() []string { return []string{c.Pct, "exec", VMID, "--"} }

// Run runs a command inside the container and returns its standard
// output; a failure fails the test.
func (c *Container) Run(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Pct, append([]string{"exec", VMID, "--"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pct exec %s -- %s: %v\n%s", VMID, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// Start starts a container for t and destroys it when t ends. Without
// root, LXC or the image it skips t, except under CI (CI=true), where
// scripts/test.sh has installed them and their absence is a failure.
func Start(t testing.TB) *Container {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the torch 2.6 container is left out")
	}
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI runs scripts/setup.sh --test, which provides it)", msg)
		}
		t.Skipf("%s: run scripts/setup.sh --test", msg)
	}
	if os.Geteuid() != 0 {
		unavailable("the torch 2.6 container needs root (LXC)")
	}
	if _, err := exec.LookPath("lxc-start"); err != nil {
		unavailable("LXC is not installed")
	}
	scripts := scriptsDir()
	rootfs, err := script(time.Minute, scripts, "images.sh", "path", "trixie")
	if err != nil {
		unavailable("the trixie image is not built: %v", err)
	}
	prefix := "tlh" + randomSuffix()
	t.Cleanup(func() {
		if _, err := script(2*time.Minute, scripts, "lxc.sh", "down", prefix); err != nil {
			t.Errorf("destroy container of run %s: %v", prefix, err)
		}
	})
	out, err := script(3*time.Minute, scripts, "lxc.sh", "up", prefix, "trixie")
	if err != nil {
		t.Fatalf("start the torch 2.6 container: %v", err)
	}
	for _, line := range strings.Split(out, "\n") {
		if dir, ok := strings.CutPrefix(line, "PCT_BIN="); ok {
			return &Container{Pct: filepath.Join(dir, "pct"), RootFS: strings.TrimSpace(rootfs)}
		}
	}
	t.Fatalf("lxc.sh up printed no PCT_BIN:\n%s", out)
	return nil
}

// scriptsDir is scripts/hops of this checkout.
func scriptsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "hops")
}

// script runs scripts/hops/NAME ARGS... within limit.
func script(limit time.Duration, dir, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, name), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// LXC's monitor outlives lxc-start; it must not hold the test's pipes.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("scripts/hops/%s %s: %w\n%s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// randomSuffix is 8 lowercase hex digits: run prefixes are "tlh" and at
// most 8 of [a-z0-9] (lxc.sh's rule).
func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
