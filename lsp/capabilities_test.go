package lsp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/server"
)

// What the client announces decides the form of what it gets; each
// capability is tried with a client that announces it and one that does
// not.

// engineHover is shaped like the engine's definition hovers.
const engineHover = "```python\ndef linear(input, weight, bias=None)\n```\n`torch.nn.functional.linear`\n\n---\n" +
	"Defined at `torch/nn/functional.py:1993` on target **t211** ([`functional.py:1993`](file:///cache/torch/nn/functional.py#L1993))  \ntorch 2.11.0\n"

func TestHoverFollowsContentFormat(t *testing.T) {
	t.Parallel()
	plain := "def linear(input, weight, bias=None)\ntorch.nn.functional.linear\n\n" +
		"Defined at torch/nn/functional.py:1993 on target t211 (/cache/torch/nn/functional.py:1993)\ntorch 2.11.0\n"
	tests := []struct {
		name      string
		formats   []string
		wantKind  string
		wantValue string
	}{
		{"plaintext only", []string{"plaintext"}, "plaintext", plain},
		{"plaintext preferred", []string{"plaintext", "markdown"}, "plaintext", plain},
		{"markdown preferred", []string{"markdown", "plaintext"}, "markdown", engineHover},
		{"formats not named", []string{}, "markdown", engineHover},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			eng := newTestEngine()
			eng.hoverFunc = func(context.Context, *server.Snapshot, server.Position) (*server.Hover, error) {
				return &server.Hover{Markdown: engineHover}, nil
			}
			c, _ := startInitialized(t, ctx, eng, lsptest.Options{HoverFormats: tt.formats})
			c.DidOpen("file:///a.py", "python", "F.linear")
			h, err := c.Hover(ctx, "file:///a.py", 0, 3)
			if err != nil {
				t.Fatal(err)
			}
			if h.Contents.Kind != tt.wantKind || h.Contents.Value != tt.wantValue {
				t.Errorf("hover = %s %q, want %s %q", h.Contents.Kind, h.Contents.Value, tt.wantKind, tt.wantValue)
			}
		})
	}
}

func TestRelatedInformationFoldedForClientsWithout(t *testing.T) {
	t.Parallel()
	torchFile := t.TempDir() + "/config.py"
	if err := writeFile(torchFile, "x = 1\ncudagraph_trees = True\n"); err != nil {
		t.Fatal(err)
	}
	related := []server.RelatedInfo{
		{Location: server.Location{Path: torchFile, Range: server.Range{Start: server.Position{Line: 1}, End: server.Position{Line: 1}}},
			Message: "torch/_inductor/config.py:2: cudagraph_trees = True"},
		{Location: server.Location{Path: torchFile}},
	}
	for _, announce := range []bool{true, false} {
		t.Run(fmt.Sprintf("announced=%v", announce), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			eng := newTestEngine()
			c, _ := startInitialized(t, ctx, eng, lsptest.Options{RelatedInformation: announce})
			const u = "file:///w/train.py"
			c.DidOpen(u, "python", "torch.compile(f)\n")
			if _, err := c.Hover(ctx, u, 0, 0); err != nil { // the open is applied
				t.Fatal(err)
			}
			diag := server.Diagnostic{Range: server.Range{End: server.Position{Column: 5}}, Severity: server.SeverityWarning,
				Code: "TL001", Source: "torchlsp", Message: "CUDA graphs in threads", Related: related}
			if err := eng.notifier.PublishDiagnostics(ctx, eng.Snapshot(u), []server.Diagnostic{diag}); err != nil {
				t.Fatal(err)
			}
			p, err := c.AwaitDiagnostics(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Diagnostics[0]
			if announce {
				if got.Message != diag.Message || len(got.RelatedInformation) != 2 || got.RelatedInformation[0].Location.Range.Start.Line != 1 {
					t.Errorf("diagnostic = %+v, want the message as is and two related", got)
				}
				return
			}
			want := "CUDA graphs in threads\ntorch/_inductor/config.py:2: cudagraph_trees = True\n" + torchFile + ":1"
			if got.Message != want || len(got.RelatedInformation) != 0 {
				t.Errorf("diagnostic = %+v, want message %q and no related information", got, want)
			}
		})
	}
}

func TestCustomNotificationsOnlyWhenAnnounced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		announce []string
		want     server.Capabilities
	}{
		{"both", []string{"torchlsp/status", "torchlsp/site"}, server.Capabilities{Status: true, Site: true, Diagnostics: true, Confirm: true}},
		{"status only", []string{"torchlsp/status"}, server.Capabilities{Status: true, Diagnostics: true, Confirm: true}},
		{"none", nil, server.Capabilities{Diagnostics: true, Confirm: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			eng := newTestEngine()
			eng.onInitialized = func(ctx context.Context, n server.Notifier) {
				// An engine that did not look at Capabilities first.
				n.Status(ctx, server.Status{Target: "gpu", State: "ready"})
				n.Site(ctx, server.SiteInfo{Target: "gpu", Path: "/site"})
				n.LogMessage(ctx, server.MessageLog, "sent both")
			}
			c, _ := startInitialized(t, ctx, eng, lsptest.Options{Notifications: tt.announce})
			if _, err := c.AwaitMessage(ctx, true, "sent both"); err != nil {
				t.Fatal(err)
			}
			if got := eng.notifier.Capabilities(); got != tt.want {
				t.Errorf("Capabilities() = %+v, want %+v", got, tt.want)
			}
			// Notifications arrive in order: all sent before the log line are in.
			sent := map[string]bool{}
			for _, e := range c.Events() {
				sent[e.Method] = true
			}
			for _, m := range []string{"torchlsp/status", "torchlsp/site"} {
				if want := contains(tt.announce, m); sent[m] != want {
					t.Errorf("%s sent = %v, want %v", m, sent[m], want)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// An experimental section of another shape, or other servers' entries in
// it, announce nothing and fail nothing.
func TestExperimentalCapabilitiesOfOtherShapes(t *testing.T) {
	t.Parallel()
	for _, exp := range []string{`{"torchlsp":"yes"}`, `{"serverStatusNotification":true}`, `[1,2]`, `{"torchlsp":{"notifications":[1]}}`} {
		t.Run(exp, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			eng := newTestEngine()
			c, _ := start(t, eng, lsp.Options{}, lsptest.Options{})
			params := c.InitializeParams()
			params["capabilities"].(map[string]any)["experimental"] = json.RawMessage(exp)
			if err := c.Call(ctx, "initialize", params, nil); err != nil {
				t.Fatalf("initialize: %v", err)
			}
			if caps := eng.notifier.Capabilities(); caps.Status || caps.Site {
				t.Errorf("Capabilities() = %+v", caps)
			}
		})
	}
}

func TestCodeActionsOfTheKindsAsked(t *testing.T) {
	t.Parallel()
	actions := []server.CodeAction{
		{Title: "fix", Kind: server.KindQuickFix, Edits: map[string][]server.TextEdit{"file:///a.py": {{NewText: "x"}}}, Preferred: true},
		{Title: "repro", Kind: server.KindRepro, Command: &server.Command{Title: "repro", Name: "torchlsp.repro"}},
		{Title: "explain", Kind: server.KindExplain, Command: &server.Command{Title: "explain", Name: "torchlsp.explain"}},
	}
	tests := []struct {
		only []string
		want string
	}{
		{nil, "fix quickfix, repro source.torchlsp.repro, explain source.torchlsp.explain"},
		{[]string{"quickfix"}, "fix quickfix"},
		{[]string{"source"}, "repro source.torchlsp.repro, explain source.torchlsp.explain"},
		{[]string{"source.torchlsp.repro"}, "repro source.torchlsp.repro"},
		{[]string{"source.torchlsp"}, "repro source.torchlsp.repro, explain source.torchlsp.explain"},
		{[]string{"refactor", "source.torchlsp.explain"}, "explain source.torchlsp.explain"},
		{[]string{"source.fixAll"}, ""},
		{[]string{""}, "fix quickfix, repro source.torchlsp.repro, explain source.torchlsp.explain"},
	}
	ctx := testContext(t)
	eng := newTestEngine()
	eng.codeActions = actions
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	c.DidOpen("file:///a.py", "python", "torch.compile(f)\n")
	for _, tt := range tests {
		got, err := c.CodeActionsOnly(ctx, "file:///a.py", lsptest.Range{}, tt.only)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, a := range got {
			parts = append(parts, a.Title+" "+a.Kind)
		}
		if s := strings.Join(parts, ", "); s != tt.want {
			t.Errorf("only %q: %q, want %q", tt.only, s, tt.want)
		}
	}
}
