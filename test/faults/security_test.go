package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/remote/sshtest"
)

// TestVSCodeSettingsTrust reads the extension's manifest: the settings that
// name a program to run (the server binary, the targets) must be
// machine-scoped, so a workspace's .vscode/settings.json cannot set them,
// and listed as restricted in untrusted workspaces.
func TestVSCodeSettingsTrust(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "editors", "vscode", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Capabilities struct {
			UntrustedWorkspaces struct {
				Supported                any      `json:"supported"`
				RestrictedConfigurations []string `json:"restrictedConfigurations"`
			} `json:"untrustedWorkspaces"`
		} `json:"capabilities"`
		Contributes struct {
			Configuration struct {
				Properties map[string]struct {
					Scope string `json:"scope"`
				} `json:"properties"`
			} `json:"configuration"`
		} `json:"contributes"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	ut := manifest.Capabilities.UntrustedWorkspaces
	if ut.Supported != "limited" {
		t.Errorf("untrustedWorkspaces.supported = %v, want \"limited\"", ut.Supported)
	}
	for _, key := range []string{"torchlsp.path", "torchlsp.targets"} {
		prop, ok := manifest.Contributes.Configuration.Properties[key]
		if !ok {
			t.Errorf("setting %s is not declared", key)
			continue
		}
		if prop.Scope != "machine" {
			t.Errorf("%s has scope %q, want \"machine\": a workspace could name a program to run", key, prop.Scope)
		}
		found := false
		for _, r := range ut.RestrictedConfigurations {
			found = found || r == key
		}
		if !found {
			t.Errorf("%s is not in untrustedWorkspaces.restrictedConfigurations %v", key, ut.RestrictedConfigurations)
		}
	}
}

// TestNoAgentForwarding connects to a loopback sshd with an ssh-agent
// that holds the login key (so agent forwarding would work if asked for)
// and checks that the session on the host has no agent socket and that
// sshd never saw an agent-forwarding request.
func TestNoAgentForwarding(t *testing.T) {
	t.Parallel()
	needPython(t)
	sshtest.RequireOpenSSH(t)
	keys := sshtest.NewKeys(t)
	srv := sshtest.Start(t, sshtest.Config{Keys: keys})
	opts := sshtarget.Options{
		ConfigFile:      "none",
		KnownHostsFiles: []string{sshtest.WriteFile(t, "known_hosts", srv.KnownHosts(t, ""))},
		AgentSocket:     sshtest.StartAgent(t, keys.Passphrase, keys.Client),
		Home:            t.TempDir(),
	}
	tg, err := sshtarget.New(remote.Spec{Name: "gpu", SSH: srv.User + "@" + srv.Addr, Python: debianPython}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := tg.Start(ctx, remote.Command{Argv: []string{debianPython, "-c", `import os; print(repr(os.environ.get("SSH_AUTH_SOCK")))`}})
	if err != nil {
		t.Fatal(err)
	}
	p.Stdin().Close()
	go io.Copy(io.Discard, p.Stderr())
	out, _ := io.ReadAll(p.Stdout())
	if err := p.Wait(); err != nil {
		t.Fatalf("remote command: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "None" {
		t.Errorf("SSH_AUTH_SOCK on the host = %s: the agent was forwarded", got)
	}
	tg.Close()
	log := srv.Log()
	if !strings.Contains(log, "Accepted publickey") {
		t.Fatalf("sshd log does not show the login; the check below would prove nothing:\n%s", log)
	}
	if strings.Contains(log, "auth-agent-req") || strings.Contains(strings.ToLower(log), "agent forwarding") {
		t.Errorf("sshd saw an agent-forwarding request:\n%s", log)
	}
}

// TestSecretsStayOutOfLogs runs the torchlsp binary at debug log level
// with targets whose environment holds a token, one of them reached over
// SSH with a passphrase-protected key and no agent (so it fails), asks
// hovers, definitions and doctor on both, and checks that the token's
// value appears nowhere: not on stderr, not in any window/logMessage or
// showMessage, not in any reply.
func TestSecretsStayOutOfLogs(t *testing.T) {
	t.Parallel()
	needPython(t)
	sshtest.RequireOpenSSH(t)
	const secret = "sekrit-XYZ-7f3a"
	keys := sshtest.NewKeys(t)
	srv := sshtest.Start(t, sshtest.Config{Keys: keys})
	bin := buildServer(t)

	home := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".ssh/config", "Host *\n  IdentityFile "+keys.Encrypted+"\n")
	write(".ssh/known_hosts", srv.KnownHosts(t, ""))
	site := filepath.Join(repoRoot(t), "testdata", "site")
	targets := map[string]any{
		"fixture": map[string]any{"python": debianPython, "env": map[string]string{"PYTHONPATH": site, "HF_TOKEN": secret}},
		"gpu":     map[string]any{"python": debianPython, "ssh": srv.User + "@" + srv.Addr, "env": map[string]string{"HF_TOKEN": secret}},
	}
	settings := func(def string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"defaultTarget": def, "targets": targets})
		return b
	}

	files, _ := workspace(t)
	env := lsptest.Start(t, lsptest.Config{
		Server: lsptest.Program{Path: bin, Args: []string{"serve", "--stdio", "--log-level", "debug"},
			Env: []string{"HOME=" + home, "SSH_AUTH_SOCK="}},
		Files:    files,
		Settings: settings("fixture"),
		Timeout:  120 * time.Second,
	})
	p := env.Editor
	ctx := env.Ctx()
	uri := env.OpenFile("train.py")
	var replies []string
	asked := 0
	ask := func(method string, params any) {
		asked++
		pend, err := p.Start(method, params)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pend.Wait(ctx)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		replies = append(replies, string(r.Result))
		if r.Error != nil {
			replies = append(replies, r.Error.Message)
		}
	}
	pos := func(needle string, off int) map[string]any {
		return map[string]any{"textDocument": map[string]string{"uri": uri}, "position": env.At(uri, needle, off)}
	}
	for _, target := range []string{"fixture", "gpu"} {
		if target == "gpu" {
			p.SetSettings(settings("gpu"))
			if err := p.DidChangeConfiguration(json.RawMessage(`{"settings":{"torchlsp":` + string(settings("gpu")) + `}}`)); err != nil {
				t.Fatal(err)
			}
			// Without this message the check below would prove little.
			env.AwaitMessage("is encrypted")
		}
		ask("textDocument/hover", pos("torch.add(", 6))
		ask("textDocument/hover", pos("torch.compile(model", 8))
		ask("textDocument/definition", pos("nn.Linear(4, 4)", 3))
		ask("workspace/executeCommand", map[string]any{"command": "torchlsp.doctor", "arguments": []any{map[string]string{"target": target}}})
	}
	env.Shutdown()
	stderr := env.ServerLog()

	check := func(where, text string) {
		if strings.Contains(text, secret) {
			i := strings.Index(text, secret)
			t.Errorf("the secret appears in %s: …%s…", where, text[max(0, i-120):min(len(text), i+40)])
		}
	}
	check("stderr", stderr)
	for _, e := range p.Events() {
		check(fmt.Sprintf("%s notification", e.Method), string(e.Params))
	}
	for _, r := range replies {
		check("a reply", r)
	}
	if len(p.Events()) == 0 || asked != 8 {
		t.Fatalf("%d events, %d requests: the session did not run as planned", len(p.Events()), asked)
	}
	t.Logf("checked %d bytes of stderr, %d notifications, %d replies", len(stderr), len(p.Events()), len(replies))
}
