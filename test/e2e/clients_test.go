package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestPlainClient is a client that announces none of the capabilities an
// editor may lack (plaintext hovers, related information,
// window/showDocument, torchlsp's own notifications), as a third-party
// editor set up in two lines does: what it gets is in the forms it can
// show, nothing is lost, and nothing it did not announce is sent.
func TestPlainClient(t *testing.T) {
	t.Parallel()
	env := start(t, options{settings: fixtureSettings(t), client: lsptest.Options{HoverFormats: []string{"plaintext"}}})
	uri := env.OpenFile("train.py")

	// Related information goes into the message.
	p := env.AwaitDiagnostics(uri, func(d lsptest.Diagnostics) bool { return d.Has("TL001") })
	var tl001 lsptest.Diagnostic
	for _, d := range p.Diagnostics {
		if strings.HasPrefix(string(d.Code), "TL001") {
			tl001 = d
		}
	}
	lines := strings.Split(tl001.Message, "\n")
	if len(tl001.RelatedInformation) != 0 || len(lines) < 3 {
		t.Errorf("TL001 = %+v, want its related information as lines of the message", tl001)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "torch/") {
			t.Errorf("TL001 line %q does not name a place in torch", l)
		}
	}

	// A plain-text hover.
	h := env.Hover(uri, env.At(uri, "torch.compile(model", len("torch.")))
	if h == nil || h.Contents.Kind != "plaintext" {
		t.Fatalf("hover = %+v, want plaintext", h)
	}
	for _, markup := range []string{"```", "**", "](", "file://", "`"} {
		if strings.Contains(h.Contents.Value, markup) {
			t.Errorf("plaintext hover holds %q:\n%s", markup, h.Contents.Value)
		}
	}
	if !strings.Contains(h.Contents.Value, "torch/__init__.py:") || !strings.Contains(h.Contents.Value, env.Sandbox.Cache) {
		t.Errorf("hover does not name the definition and its mirror file:\n%s", h.Contents.Value)
	}

	// Only edits are quick fixes; the runs are kinds of their own.
	kinds := func(only []string) map[string]int {
		actions, err := env.Editor.CodeActionsOnly(env.Ctx(), uri, tl001.Range, only)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, a := range actions {
			got[a.Kind]++
			if (a.Kind == "quickfix") != (a.Edit != nil) {
				t.Errorf("action %q of kind %s, edit %v", a.Title, a.Kind, a.Edit != nil)
			}
		}
		return got
	}
	if got := kinds(nil); got["quickfix"] == 0 || got["source.torchlsp.repro"] == 0 || got["source.torchlsp.explain"] != 1 || len(got) != 3 {
		t.Errorf("every kind: %v", got)
	}
	if got := kinds([]string{"quickfix"}); got["quickfix"] == 0 || len(got) != 1 {
		t.Errorf("only quickfix: %v", got)
	}
	if got := kinds([]string{"source.torchlsp.repro"}); got["source.torchlsp.repro"] == 0 || len(got) != 1 {
		t.Errorf("only the repro: %v", got)
	}

	// A result meant to be opened is named in a message instead.
	if err := env.Editor.ExecuteCommand(env.Ctx(), "torchlsp.openMirror", []any{}, nil); err != nil {
		t.Fatal(err)
	}
	msg := env.AwaitMessage("torch/__init__.py")
	if path := msg.Message[strings.LastIndex(msg.Message, " ")+1:]; !filepath.IsAbs(path) || !strings.HasPrefix(path, env.Sandbox.Cache) {
		t.Errorf("message %q does not end with the mirror file", msg.Message)
	}

	for _, e := range env.Client().Events() {
		switch e.Method {
		case "window/showDocument", "torchlsp/status", "torchlsp/site":
			t.Errorf("%s sent to a client that did not announce it: %s", e.Method, e.Params)
		}
	}
	env.Shutdown()
}

// TestAnnouncingClient is the same session with a client that announces
// every capability: markdown, related information, documents opened, the
// custom notifications.
func TestAnnouncingClient(t *testing.T) {
	t.Parallel()
	env := start(t, options{settings: fixtureSettings(t), client: lsptest.Options{
		ShowDocument: true, RelatedInformation: true, Notifications: []string{"torchlsp/status", "torchlsp/site"},
	}})
	uri := env.OpenFile("train.py")
	env.Await(lsptest.StatusIs("fixture", "ready"))
	h := env.Hover(uri, env.At(uri, "torch.compile(model", len("torch.")))
	if h == nil || h.Contents.Kind != "markdown" || !strings.Contains(h.Contents.Value, "```python") {
		t.Errorf("hover = %+v, want markdown", h)
	}
	if err := env.Editor.ExecuteCommand(env.Ctx(), "torchlsp.openMirror", []any{}, nil); err != nil {
		t.Fatal(err)
	}
	env.Await(lsptest.ServerRequest("window/showDocument", "torch/__init__.py"))
	env.Await(lsptest.Notification("torchlsp/site", "the site announced", func(s struct{ Path string }) bool { return s.Path != "" }))
	for _, e := range env.Client().Events() {
		var m lsptest.Message
		if e.Method == "window/showMessage" && json.Unmarshal(e.Params, &m) == nil && strings.Contains(m.Message, "torch/__init__.py") {
			t.Errorf("the opened file was also named in a message: %q", m.Message)
		}
	}
	env.Shutdown()
}
