// Package site tests `torchlsp site` with the Python servers users run
// beside torchlsp: pyright's and basedpyright's language servers from npm
// and pylsp with jedi, started with exactly the settings each editor
// package produces, on a machine where torch exists only on the target.
// The target is Debian's torch 1.13 through a local interpreter, and, with
// TORCHLSP_TORCH211_SITE set, the torch 2.11 source tree.
package site

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/torch26"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

const debianPython = "/usr/bin/python3"

// Set by TestMain, read-only afterwards.
var (
	torchlspBin string // the torchlsp binary under test
	scratch     string // a directory for the whole run
	noTorchPath string // an interpreter without torch
	noTorchErr  error  // why there is none
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "torchlsp-site-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scratch = dir
	torchlspBin = filepath.Join(dir, "torchlsp")
	build := exec.Command("go", "build", "-o", torchlspBin, "github.com/torchlsp/torchlsp/cmd/torchlsp")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build torchlsp:", err)
		os.Exit(1)
	}
	noTorchPath, noTorchErr = makeNoTorchVenv(dir)
	code := m.Run()
	removeAll(dir)
	os.Exit(code)
}

// removeAll removes a tree that holds read-only directories (mirrors).
func removeAll(root string) {
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(root)
}

// siteTarget is a target whose torch the site is made from.
type siteTarget struct {
	name   string
	python string
	exec   []string // the exec prefix of a target in a container
	env    map[string]string
	// site is the directory holding torch on the target, as the target's
	// interpreter sees it (symlinks resolved), read from this side (a
	// container's from its image).
	site string
}

func debianTarget(t testing.TB) siteTarget {
	t.Helper()
	const site = "/usr/lib/python3/dist-packages"
	if _, err := os.Stat(filepath.Join(site, "torch", "__init__.py")); err != nil {
		t.Skipf("Debian's python3-torch is not installed (%v): run scripts/setup.sh --test", err)
	}
	return siteTarget{name: "deb", python: debianPython, site: site}
}

// torch26Target is Debian 13's torch 2.6 in an LXC container entered with
// pct exec, started for the test.
func torch26Target(t testing.TB) siteTarget {
	t.Helper()
	ct := torch26.Start(t)
	return siteTarget{name: "ct200", python: torch26.Python, exec: ct.Exec(),
		site: filepath.Join(ct.RootFS, strings.TrimPrefix(torch26.SitePackages, "/"))}
}

func torch211Target(t testing.TB) siteTarget {
	t.Helper()
	dir := os.Getenv("TORCHLSP_TORCH211_SITE")
	if dir == "" {
		t.Skip("TORCHLSP_TORCH211_SITE is unset: set it to a site-packages-like directory holding the torch 2.11 sources")
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatalf("TORCHLSP_TORCH211_SITE: %v", err)
	}
	return siteTarget{name: "t211", python: debianPython, env: map[string]string{"PYTHONPATH": dir}, site: real}
}

// home is one user's XDG directories with a config.toml naming the target.
type home struct {
	env []string // XDG_* and HOME, to append to a clean environment
	dir string
}

func newHome(t testing.TB, tgt siteTarget) home {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { removeAll(dir) }) // mirrors are read-only
	var b strings.Builder
	fmt.Fprintf(&b, "default = %q\n[targets.%s]\npython = %q\n", tgt.name, tgt.name, tgt.python)
	if len(tgt.exec) > 0 {
		words, _ := json.Marshal(tgt.exec) // a TOML array of basic strings
		fmt.Fprintf(&b, "exec = %s\n", words)
	}
	if len(tgt.env) > 0 {
		b.WriteString("env = {")
		first := true
		for k, v := range tgt.env {
			if !first {
				b.WriteString(",")
			}
			first = false
			fmt.Fprintf(&b, " %s = %q", k, v)
		}
		b.WriteString(" }\n")
	}
	conf := filepath.Join(dir, "config", "torchlsp")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "config.toml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return home{dir: dir, env: []string{
		"HOME=" + dir,
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
	}}
}

// cleanEnv is the environment servers run with: no PYTHONPATH, nothing
// that would show them a torch.
func cleanEnv(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}, extra...)
}

// workspace copies the fixture workspace into a fresh directory.
func workspace(t testing.TB) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"train.py", "complete.py"} {
		data, err := os.ReadFile(filepath.Join("testdata", "workspace", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// runSite runs `torchlsp site` in the workspace and returns the directory
// it printed last.
func runSite(t testing.TB, h home, ws string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, torchlspBin, "site")
	cmd.Dir = ws
	cmd.Env = cleanEnv(h.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("torchlsp site: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	site := lines[len(lines)-1]
	if !filepath.IsAbs(site) {
		t.Fatalf("torchlsp site printed %q last, not a directory\n%s", site, stderr.String())
	}
	t.Logf("torchlsp site: %s\n%s", site, stderr.String())
	return site
}

// noTorchPython is an interpreter that has no torch: a venv of Debian's
// python without its system packages, made by TestMain. Servers are
// pointed at it, so the site is the only torch they can see.
func noTorchPython(t testing.TB) string {
	t.Helper()
	if noTorchErr != nil {
		t.Skip(noTorchErr)
	}
	return noTorchPath
}

// makeNoTorchVenv makes that venv under dir.
func makeNoTorchVenv(dir string) (string, error) {
	if _, err := os.Stat(debianPython); err != nil {
		return "", fmt.Errorf("%s is missing: run scripts/setup.sh --test", debianPython)
	}
	venv := filepath.Join(dir, "venv")
	out, err := exec.Command(debianPython, "-m", "venv", "--without-pip", venv).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("make a venv without torch: %v: %s", err, out)
	}
	py := filepath.Join(venv, "bin", "python")
	if out, err := exec.Command(py, "-c", "import torch").CombinedOutput(); err == nil {
		return "", fmt.Errorf("the venv at %s imports torch: %s", venv, out)
	}
	return py, nil
}

// offline runs argv without a network when the system allows it
// (unshare(1) into an empty network namespace), so that no npm server
// can fetch anything while it is tested.
func offline(t testing.TB, argv ...string) []string {
	t.Helper()
	if err := exec.Command("unshare", "--net", "--", "true").Run(); err != nil {
		t.Logf("unshare --net is not available here (%v): the server runs with the machine's network", err)
		return argv
	}
	return append([]string{"unshare", "--net", "--"}, argv...)
}

// editor is one editor package's way of giving a server the site.
type editor struct {
	name     string
	argv     func(t testing.TB) []string
	settings func(site, python string) map[string]any
	// noTensorMethods names the targets on which the server cannot infer
	// that torch.zeros returns a Tensor: jedi does not, from torch 1.13's
	// stubs (it does from 2.11's).
	noTensorMethods map[string]bool
}

func npmServer(pkg string) func(t testing.TB) []string {
	return func(t testing.TB) []string {
		t.Helper()
		argv, err := lsptest.NPMServer(pkg)
		if err != nil {
			t.Skip(err)
		}
		return offline(t, argv...)
	}
}

var editors = []editor{
	{
		// VS Code with Pylance or the pyright extension, Neovim's
		// lspconfig "pyright": python.analysis.extraPaths.
		name: "pyright",
		argv: npmServer("pyright"),
		settings: func(site, python string) map[string]any {
			return map[string]any{"python": map[string]any{
				"pythonPath": python,
				"analysis":   map[string]any{"extraPaths": []string{site}},
			}}
		},
	},
	{
		// basedpyright in VS Code and Neovim: basedpyright.analysis.extraPaths.
		name: "basedpyright",
		argv: npmServer("basedpyright"),
		settings: func(site, python string) map[string]any {
			return map[string]any{
				"python":       map[string]any{"pythonPath": python},
				"basedpyright": map[string]any{"analysis": map[string]any{"extraPaths": []string{site}}},
			}
		},
	},
	{
		// pylsp (Neovim's lspconfig "pylsp"): pylsp.plugins.jedi.extra_paths.
		// jedi's environment is the venv without torch, as a user's
		// project interpreter would be.
		name: "pylsp",
		argv: func(t testing.TB) []string {
			t.Helper()
			p, err := exec.LookPath("pylsp")
			if err != nil {
				t.Skip("pylsp is not installed: run scripts/setup.sh --test")
			}
			return offline(t, p)
		},
		settings: func(site, python string) map[string]any {
			return map[string]any{"pylsp": map[string]any{"plugins": map[string]any{"jedi": map[string]any{
				"extra_paths": []string{site},
				"environment": python,
			}}}}
		},
		noTensorMethods: map[string]bool{"deb": true},
	},
}

// TestEditorsResolveTorchThroughSite is the acceptance test: with
// no torch but the site, each server resolves x.view(...) on a Tensor and
// model.parameters() on an nn.Module subclass into the site, at the target
// file's own line, and completes torch.nn.functional. with the target's
// functions.
func TestEditorsResolveTorchThroughSite(t *testing.T) {
	t.Parallel()
	targets := []struct {
		name string
		get  func(testing.TB) siteTarget
	}{
		{"debian-1.13", debianTarget},
		{"torch-2.6-in-lxc", torch26Target},
		{"torch-2.11", torch211Target},
	}
	for _, tc := range targets {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tgt := tc.get(t)
			ws := workspace(t)
			h := newHome(t, tgt)
			site := runSite(t, h, ws)
			checkSiteLayout(t, site, tgt)
			python := noTorchPython(t)
			for _, ed := range editors {
				t.Run(ed.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
					defer cancel()
					argv := ed.argv(t)
					settings := ed.settings(site, python)
					srv := startServer(t, ctx, serverConfig{argv: argv, env: cleanEnv(h.env...), root: ws, settings: settings, initOptions: settings})
					train := filepath.Join(ws, "train.py")
					srv.open(train, "python")

					if !ed.noTensorMethods[tgt.name] {
						line, col := find(t, train, "flat = x.view(8)", "view")
						locs, err := srv.definition(ctx, train, line, col)
						if err != nil {
							t.Fatalf("definition of x.view: %v\n%s", err, srv.logTail())
						}
						for _, loc := range locs {
							checkInSite(t, site, tgt, loc, "def view(")
						}
					}

					line, col := find(t, train, "model.parameters()", "parameters")
					locs, err := srv.definition(ctx, train, line, col)
					if err != nil {
						t.Fatalf("definition of model.parameters: %v\n%s", err, srv.logTail())
					}
					if len(locs) != 1 {
						t.Errorf("definition of model.parameters: %d locations, want 1: %+v", len(locs), locs)
					}
					for _, loc := range locs {
						checkInSite(t, site, tgt, loc, "def parameters(")
					}

					complete := filepath.Join(ws, "complete.py")
					srv.open(complete, "python")
					want := functionalDefs(t, tgt)
					var labels []string
					for {
						labels, err = srv.completion(ctx, complete, 2, len("torch.nn.functional."))
						if err != nil {
							t.Fatalf("completion: %v\n%s", err, srv.logTail())
						}
						if len(labels) > 0 || ctx.Err() != nil {
							break
						}
						// The other server says nothing when its index is
						// ready: it is asked again.
						time.Sleep(200 * time.Millisecond)
					}
					got := map[string]bool{}
					for _, l := range labels {
						got[l] = true
					}
					var missing []string
					for _, w := range want {
						if !got[w] {
							missing = append(missing, w)
						}
					}
					if len(missing) > 0 {
						t.Errorf("completion on torch.nn.functional. misses %d of the target's %d functions: %v (got %d items)", len(missing), len(want), missing, len(labels))
					}
				})
			}
		})
	}
}

// checkSiteLayout checks what tools other than the servers read: torch's
// py.typed marker and distribution metadata, and that the site is
// read-only.
func checkSiteLayout(t *testing.T, site string, tgt siteTarget) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(site, "torch", "py.typed")); err != nil {
		t.Errorf("the site lacks torch/py.typed: %v", err)
	}
	metas, _ := filepath.Glob(filepath.Join(site, "torch-*.*-info"))
	if len(metas) != 1 {
		t.Errorf("the site has %d torch metadata directories, want 1: %v", len(metas), metas)
	}
	// Root writes through modes, so the modes themselves are checked.
	err := filepath.WalkDir(site+"/", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch perm := info.Mode().Perm(); {
		case d.Type()&os.ModeSymlink != 0:
		case d.IsDir() && perm != 0o555, d.Type().IsRegular() && perm != 0o444:
			t.Errorf("%s has mode %v, want read-only", p, perm)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	// The interpreter that has no torch imports the site's metadata.
	py := noTorchPython(t)
	out, err := exec.Command(py, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import importlib.metadata as m; print(m.version('torch'))", site).CombinedOutput()
	if err != nil {
		t.Errorf("importlib.metadata on the site: %v: %s", err, out)
	}
	t.Logf("torch version from the site's metadata: %s", bytes.TrimSpace(out))
}

// checkInSite checks that a location is a file of the site whose content
// is the target's file, and that its line holds want.
func checkInSite(t *testing.T, site string, tgt siteTarget, loc lspLocation, want string) {
	t.Helper()
	p := uriPath(t, loc.uri())
	rel, err := filepath.Rel(site, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Errorf("definition at %s:%d is not in the site %s", p, loc.line()+1, site)
		return
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	targetFile := filepath.Join(tgt.site, rel)
	orig, err := os.ReadFile(targetFile)
	if err != nil {
		t.Fatalf("the target's %s: %v", targetFile, err)
	}
	if !bytes.Equal(got, orig) {
		t.Errorf("%s differs from the target's %s", p, targetFile)
	}
	lines := strings.Split(string(orig), "\n")
	if loc.line() >= len(lines) || !strings.Contains(lines[loc.line()], want) {
		text := ""
		if loc.line() < len(lines) {
			text = lines[loc.line()]
		}
		t.Errorf("definition at %s:%d reads %q, want a line with %q", rel, loc.line()+1, strings.TrimSpace(text), want)
		return
	}
	t.Logf("%s:%d  %s", rel, loc.line()+1, strings.TrimSpace(lines[loc.line()]))
}

// functionalDefs are the public functions the target's torch.nn.functional
// declares to type checkers, read from the target's own files: its stub
// when it has one (torch 2.x), else its source.
func functionalDefs(t testing.TB, tgt siteTarget) []string {
	t.Helper()
	base := filepath.Join(tgt.site, "torch", "nn", "functional")
	data, err := os.ReadFile(base + ".pyi")
	if err != nil {
		data, err = os.ReadFile(base + ".py")
	}
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^def ([A-Za-z][A-Za-z0-9_]*)\(`)
	seen := map[string]bool{}
	var out []string
	for _, m := range re.FindAllSubmatch(data, -1) {
		if n := string(m[1]); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	if len(out) < 50 {
		t.Fatalf("only %d functions in the target's torch/nn/functional.py", len(out))
	}
	return out
}

// find returns the 0-based line and column of sub within the first line
// of path that contains needle.
func find(t testing.TB, path, needle, sub string) (int, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if j := strings.Index(line, needle); j >= 0 {
			k := strings.Index(line[j:], sub)
			if k < 0 {
				t.Fatalf("%q is not in %q", sub, needle)
			}
			return i, j + k
		}
	}
	t.Fatalf("%s has no line with %q", path, needle)
	return 0, 0
}
