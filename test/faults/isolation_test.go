package faults

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote/hostiletest"
)

// isolationText is the untrusted workspace's script: a hover and a
// definition on nn.Linear, a torch.compile call to repro.
const isolationText = "import torch\nfrom torch import nn\nlayer = nn.Linear(4, 2)\nf = torch.compile(layer)\n"

// untrustedWorkspace is a workspace, without torchlsp.toml, whose modules
// shadow the whole standard library, torch, the fixture package,
// sitecustomize and usercustomize, each appending its name to a marker
// file when imported; with a user base whose .pth file and usercustomize
// do the same. It returns the workspace, its script, the marker and the
// environment (fresh XDG directories, PYTHONUSERBASE, no PYTHONPATH).
func untrustedWorkspace(t *testing.T) (ws, script, marker string, env []string) {
	t.Helper()
	needPython(t)
	tmp := t.TempDir()
	ws = filepath.Join(tmp, "ws")
	marker = filepath.Join(tmp, "imported")
	for _, d := range []string{ws, filepath.Join(tmp, "userbase")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hostiletest.ShadowingWorkspace(t, ws, debianPython, marker)
	userBase := hostiletest.HostileUserBase(t, filepath.Join(tmp, "userbase"), debianPython, marker)
	script = filepath.Join(ws, "t.py")
	if err := os.WriteFile(script, []byte(isolationText), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := xdgEnv(t)
	for _, kv := range base {
		if !strings.HasPrefix(kv, "PYTHONPATH=") && !strings.HasPrefix(kv, "PYTHONUSERBASE=") && !strings.HasPrefix(kv, "PYTHONSAFEPATH=") {
			env = append(env, kv)
		}
	}
	return ws, script, marker, append(env, "PYTHONUSERBASE="+userBase)
}

// assertNothingImported fails with what the workspace's modules recorded,
// and clears the record for the next check.
func assertNothingImported(t *testing.T, marker, after string) {
	t.Helper()
	if got := hostiletest.Imported(t, marker); len(got) > 0 {
		t.Errorf("after %s, the interpreters torchlsp started imported the untrusted workspace's or the user site's %q", after, got)
	}
	if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// TestUntrustedWorkspaceRunsNothingFromTheCommandLine runs every command
// that starts an interpreter from inside an untrusted workspace, as a user
// would after cloning it: none of the workspace's files may be imported.
// explain sends its own workspace to the target, where it runs on
// purpose, so it runs here on a clean workspace from inside the hostile
// one.
func TestUntrustedWorkspaceRunsNothingFromTheCommandLine(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	ws, script, marker, env := untrustedWorkspace(t)
	fixture := "PYTHONPATH=" + filepath.Join(repoRoot(t), "testdata", "site")
	clean := t.TempDir()
	if err := os.CopyFS(clean, os.DirFS(filepath.Join(repoRoot(t), "server", "repro", "testdata", "ownws"))); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		args    []string
		fixture bool // the torch-shaped fixture rather than Debian's torch
		ok      func(cliResult) bool
	}{
		{[]string{"hover", "t.py:3:12"}, true, func(r cliResult) bool { return r.code == 0 && strings.Contains(r.stdout, "class Linear") }},
		{[]string{"definition", "t.py:3:12"}, true, func(r cliResult) bool { return r.code == 0 && strings.Contains(r.stdout, "linear.py:") }},
		{[]string{"check", "t.py"}, true, func(r cliResult) bool { return r.code <= 1 }},
		{[]string{"gates", "triton.cudagraph_trees"}, true, func(r cliResult) bool { return r.code == 0 }},
		{[]string{"site"}, true, func(r cliResult) bool { return r.code == 0 && filepath.IsAbs(strings.TrimSpace(r.stdout)) }},
		{[]string{"doctor", "--import"}, true, func(r cliResult) bool { return r.code == 0 }},
		{[]string{"repro", "--gpus", "1", "t.py:4"}, false, func(r cliResult) bool { return strings.Contains(r.stdout, "| threads |") }},
		{[]string{"explain", filepath.Join(clean, "breaks.py") + ":17"}, false, func(r cliResult) bool { return r.code == 0 && strings.Contains(r.stdout, "graph break") }},
	} {
		cenv := env
		if c.fixture {
			cenv = append(env[:len(env):len(env)], fixture)
		}
		args := append([]string{c.args[0], "--python", debianPython}, c.args[1:]...)
		r := runCLIIn(t, bin, ws, cenv, 5*time.Minute, args...)
		if !c.ok(r) {
			t.Errorf("torchlsp %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, tail(r.stdout, 2000), tail(r.stderr, 2000))
		}
		assertNothingImported(t, marker, "torchlsp "+strings.Join(c.args, " "))
	}
	if _, err := os.Stat(script); err != nil {
		t.Fatal(err)
	}
}

// TestUntrustedWorkspaceRunsNothingInServe starts serve in an untrusted
// workspace as an editor does, opens its script and asks a hover: the
// helper, the mirror and the site built in the background import nothing
// of the workspace.
func TestUntrustedWorkspaceRunsNothingInServe(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	ws, script, marker, env := untrustedWorkspace(t)
	settings := targetSettings(t, debianPython, map[string]string{"PYTHONPATH": filepath.Join(repoRoot(t), "testdata", "site")})
	p := serveProcess(t, bin, ws, settings, env)
	ctx := testContext(t, 3*time.Minute)

	uri := lsptest.FileURI(script)
	if err := p.DidOpen(uri, "python", isolationText); err != nil {
		t.Fatal(err)
	}
	line, col := at(t, isolationText, "Linear", 0, 1)
	h, err := p.Hover(ctx, uri, line, col)
	if err != nil {
		t.Fatal(err)
	}
	if h == nil || !strings.Contains(h.Contents.Value, "Linear") {
		t.Errorf("hover on nn.Linear: %+v", h)
	}
	// The site is built in the background after initialize; it is there
	// once announced.
	if _, err := p.Await(ctx, func(e lsptest.Event) bool {
		var site struct{ Path string }
		return e.Method == "torchlsp/site" && json.Unmarshal(e.Params, &site) == nil && site.Path != ""
	}); err != nil {
		t.Fatalf("no site announced: %v", err)
	}
	assertNothingImported(t, marker, "serve's initialize, didOpen, hover and site")
}
