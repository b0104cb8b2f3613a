package remote

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/remote/hostiletest"
)

// TestProgramsImportNothingFromStartDirectory starts every program
// torchlsp runs on a target (the helper through each of its calls, the
// mirror script, a program sent to ProgramCommand as repro and explain
// send theirs) where an exec hop starts it: in a directory, like a
// container's checkout, whose modules shadow the whole standard library,
// torch, the fixture package, sitecustomize and usercustomize. None of
// them may be imported. The user's site is also hostile, and is read only
// when the target asks for it.
func TestProgramsImportNothingFromStartDirectory(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("env"); err != nil {
		t.Skip("no env(1)")
	}
	base := fixtureSpec(t)
	tmp := t.TempDir()
	checkout := filepath.Join(tmp, "checkout")
	marker := filepath.Join(tmp, "imported")
	shadowed := hostiletest.ShadowingWorkspace(t, mkdir(t, checkout), systemPython, marker)
	userBase := hostiletest.HostileUserBase(t, mkdir(t, filepath.Join(tmp, "userbase")), systemPython, marker)

	for _, tt := range []struct {
		name     string
		userSite bool
		want     []string // what the marker holds afterwards
	}{
		{"without the user site", false, nil},
		{"with the user site", true, []string{"pth", "usercustomize"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			spec := base
			spec.Name = "isolated"
			spec.UserSite = tt.userSite
			// env -C starts the interpreter in the checkout, as docker exec
			// does in a container's working directory.
			spec.Exec = []string{"env", "-C", checkout}
			spec.Env = map[string]string{"PYTHONPATH": base.Env["PYTHONPATH"], "PYTHONUSERBASE": userBase}
			// Checked however the calls end: a shadowed module may break them.
			defer func() {
				got := hostiletest.Imported(t, marker)
				slices.Sort(got)
				got = slices.Compact(got)
				if !slices.Equal(got, tt.want) {
					t.Errorf("imported %q, want %q (of %d shadowing modules in the start directory)", got, tt.want, len(shadowed))
				}
			}()
			ctx := testContext(t)
			target := NewLocal(spec)
			defer target.Close()

			c := NewClient(target, spec)
			defer c.Close()
			hello, err := c.Hello(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if hello.Cwd != "/" {
				t.Errorf("the helper works in %s, want /", hello.Cwd)
			}
			for _, p := range hello.SysPath {
				if p == "" || p == checkout || !filepath.IsAbs(p) {
					t.Errorf("the helper's sys.path holds %q: %q", p, hello.SysPath)
				}
			}
			info, err := c.PackageInfo(ctx, "fixturepkg")
			if err != nil || info.Version != "0.3.1" {
				t.Fatalf("package info %+v, %v", info, err)
			}
			if _, err := c.Inspect(ctx, "fixturepkg.Widget"); err != nil {
				t.Error(err)
			}
			if _, err := c.EvalConfig(ctx, "fixturepkg.newconfig"); err != nil {
				t.Error(err)
			}
			if _, err := c.ListFiles(ctx, "fixturepkg"); err != nil {
				t.Error(err)
			}
			if _, err := c.SitePackages(ctx, []SiteQuery{{Name: "fixturepkg"}}); err != nil {
				t.Error(err)
			}
			if _, err := c.Import(ctx, "fixturepkg"); err != nil {
				t.Error(err)
			}
			if _, err := mirror(ctx, target, spec, info, cacheDir(t), CompressGzip, nil); err != nil {
				t.Errorf("mirror: %v", err)
			}
			// What a repro's script does first: import what it needs, and
			// say where it runs.
			out := runProgram(t, target, spec, "import json, inspect, threading, re, enum, tempfile, shutil, subprocess\n"+
				"import os, sys\nprint(json.dumps([os.getcwd(), sys.path[0]]))\n")
			if !strings.HasPrefix(out, `["/", "/`) {
				t.Errorf("a program runs in and imports from %s, want / and absolute paths", out)
			}
		})
	}
}

// runProgram runs source through ProgramCommand on target and returns its
// stdout.
func runProgram(t *testing.T, target Target, spec Spec, source string) string {
	t.Helper()
	p, err := target.Start(testContext(t), ProgramCommand(spec.Interpreter(), "isolation-test.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := SendProgram(p.Stdin(), []byte(source)); err != nil {
		t.Fatal(err)
	}
	p.Stdin().Close()
	var stdout, stderr bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&stderr, p.Stderr()); close(done) }()
	io.Copy(&stdout, p.Stdout())
	<-done
	if err := p.Wait(); err != nil {
		t.Fatalf("program: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
