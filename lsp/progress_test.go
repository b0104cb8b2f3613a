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

// indexOnInitialized makes the engine report three steps of progress once
// initialized, the way a mirror or index build would.
func indexOnInitialized(eng *testEngine) {
	eng.onInitialized = func(ctx context.Context, n server.Notifier) {
		p := n.StartProgress(ctx, "Indexing torch", false)
		p.Report("1/3 files", 33)
		p.Report("2/3 files", 66)
		p.Report("3/3 files", 100)
		p.End("indexed 3 files")
		p.Report("after end", 50) // ignored
		p.End("again")            // ignored
	}
}

func TestProgress(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	indexOnInitialized(eng)
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{WorkDoneProgress: true})
	p, err := c.AwaitProgressEnd(ctx, "Indexing torch")
	if err != nil {
		t.Fatal(err)
	}
	vals := p.Values
	if len(vals) < 2 || vals[0].Kind != "begin" || vals[len(vals)-1].Kind != "end" || vals[len(vals)-1].Message != "indexed 3 files" {
		t.Fatalf("progress = %+v", vals)
	}
	// Reports may be coalesced, but those sent are in order and rising.
	last := -1
	for _, v := range vals[1 : len(vals)-1] {
		if v.Kind != "report" || v.Percentage == nil || int(*v.Percentage) <= last {
			t.Errorf("report %+v out of order in %+v", v, vals)
		}
		last = int(*v.Percentage)
	}
	// The token was created before use.
	create, err := c.Await(ctx, func(e lsptest.Event) bool { return e.Method == "window/workDoneProgress/create" })
	if err != nil {
		t.Fatal(err)
	}
	var cp struct{ Token json.RawMessage }
	if err := create.Decode(&cp); err != nil || string(cp.Token) != p.Token {
		t.Errorf("created token %s, used %s", cp.Token, p.Token)
	}
}

func TestProgressFallsBackToTheLog(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	indexOnInitialized(eng)
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{WorkDoneProgress: false})
	if _, err := c.AwaitMessage(ctx, true, "Indexing torch…"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AwaitMessage(ctx, true, "Indexing torch: indexed 3 files"); err != nil {
		t.Fatal(err)
	}
	if len(c.Progresses()) != 0 {
		t.Errorf("$/progress sent to a client without support: %+v", c.Progresses())
	}
	for _, e := range c.Events() {
		if e.Method == "window/showMessage" || e.Method == "window/workDoneProgress/create" {
			t.Errorf("%s sent for progress: %s", e.Method, e.Params)
		}
	}
}

// A report that comes too soon after the last line is held, not lost: it
// is logged once the interval has passed, while the work goes on.
func TestProgressFallbackHoldsEarlyReports(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	release := make(chan struct{})
	eng.onInitialized = func(ctx context.Context, n server.Notifier) {
		p := n.StartProgress(ctx, "Mirroring", false)
		p.Report("connecting", -1)
		go func() {
			<-release
			p.End("")
		}()
	}
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	if _, err := c.AwaitMessage(ctx, true, "Mirroring: connecting"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if _, err := c.AwaitMessage(ctx, true, "Mirroring: done"); err != nil {
		t.Fatal(err)
	}
}

// Start-up without work-done progress: each unit is a few lines in the
// log however often it reports, not one line a report.
func TestProgressFallbackDoesNotFlood(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	const units = 4
	eng.onInitialized = func(ctx context.Context, n server.Notifier) {
		for u := range units {
			p := n.StartProgress(ctx, fmt.Sprintf("torchlsp: torch on gpu%d", u), false)
			p.Report("connecting and starting the helper", -1)
			for i := range 96 {
				p.Report("mirroring torch 2.11", i)
				p.Report("mirroring torch 2.11", i) // the same twice
			}
			p.End("torch 2.11 mirrored")
		}
	}
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{WorkDoneProgress: false})
	for u := range units {
		if _, err := c.AwaitMessage(ctx, true, fmt.Sprintf("torchlsp: torch on gpu%d: torch 2.11 mirrored", u)); err != nil {
			t.Fatal(err)
		}
	}
	lines := map[string][]string{}
	for _, e := range c.Events() {
		var m lsptest.Message
		if e.Method == "window/showMessage" {
			_ = e.Decode(&m)
			t.Errorf("progress shown as a message: %q", m.Message)
		}
		if e.Method == "window/logMessage" && e.Decode(&m) == nil {
			unit, _, _ := strings.Cut(m.Message, ":")
			unit += ":" + strings.SplitN(m.Message, ":", 3)[1]
			lines[unit] = append(lines[unit], m.Message)
		}
	}
	for unit, ls := range lines {
		// begin, end, and at most one line for each message and each
		// quarter of the way: 2 + 2 + 4.
		if len(ls) > 8 {
			t.Errorf("%s: %d log lines:\n%s", unit, len(ls), strings.Join(ls, "\n"))
		}
		seen := map[string]bool{}
		for _, l := range ls {
			if seen[l] {
				t.Errorf("%s: %q logged twice", unit, l)
			}
			seen[l] = true
		}
	}
}

func TestProgressCancel(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	cancelled := make(chan struct{})
	eng.onInitialized = func(ctx context.Context, n server.Notifier) {
		p := n.StartProgress(ctx, "Mirroring", true)
		go func() {
			<-p.Cancelled()
			p.End("cancelled")
			close(cancelled)
		}()
	}
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{WorkDoneProgress: true})
	token, err := c.AwaitProgressBegin(ctx, "Mirroring")
	if err != nil {
		t.Fatal(err)
	}
	if begin := c.Progresses()[0].Values[0]; !begin.Cancellable {
		t.Errorf("begin = %+v, want cancellable", begin)
	}
	if err := c.CancelProgress(token); err != nil {
		t.Fatal(err)
	}
	p, err := c.AwaitProgressEnd(ctx, "Mirroring")
	if err != nil {
		t.Fatal(err)
	}
	if end := p.Values[len(p.Values)-1]; end.Message != "cancelled" {
		t.Errorf("end = %+v", end)
	}
	<-cancelled
}

// A progress started during initialize waits for the reply before the
// token is created, as LSP requires.
func TestProgressStartedDuringInitialize(t *testing.T) {
	ctx := testContext(t)
	eng := &initProgressEngine{testEngine: newTestEngine()}
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{WorkDoneProgress: true})
	if _, err := c.AwaitProgressEnd(ctx, "Connecting"); err != nil {
		t.Fatal(err)
	}
}

type initProgressEngine struct{ *testEngine }

func (e *initProgressEngine) Initialize(ctx context.Context, p lsp.InitializeParams) error {
	p.Notifier.StartProgress(ctx, "Connecting", false).End("")
	return e.testEngine.Initialize(ctx, p)
}

func TestConfigurationPull(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{Configuration: true, Settings: json.RawMessage(`{"target":"gpu"}`)})
	if got := <-eng.configured; got != `{"target":"gpu"}` {
		t.Errorf("initial settings = %s", got)
	}
	<-eng.initialized // after the settings
	c.SetSettings(json.RawMessage(`{"target":"local"}`))
	c.DidChangeConfiguration(json.RawMessage("null")) // as VS Code sends it
	if got := <-eng.configured; got != `{"target":"local"}` {
		t.Errorf("settings after change = %s", got)
	}
}

func TestConfigurationPush(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	<-eng.initialized
	c.DidChangeConfiguration(json.RawMessage(`{"torchlsp":{"target":"gpu"},"python":{}}`))
	c.DidChangeConfiguration(json.RawMessage(`null`))
	c.DidChangeConfiguration(json.RawMessage(`{"target":"bare"}`))
	if got := <-eng.configured; got != `{"target":"gpu"}` {
		t.Errorf("settings = %s, want the torchlsp section", got)
	}
	if got := <-eng.configured; got != `` {
		t.Errorf("settings = %s, want none for null (the engine rereads its files)", got)
	}
	if got := <-eng.configured; got != `{"target":"bare"}` {
		t.Errorf("settings = %s, want the settings as sent", got)
	}
	for _, e := range c.Events() {
		if e.Method == "workspace/configuration" {
			t.Errorf("configuration pulled from a client without the capability")
		}
	}
}

func TestDiagnosticsAndShowDocument(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{ShowDocument: true})
	client := eng.notifier.(*lsp.Client)
	const u = "file:///w/d.py"
	c.DidOpen(u, "python", "x = '😀' + y\n")
	if _, err := c.Hover(ctx, u, 0, 0); err != nil { // the open is applied
		t.Fatal(err)
	}
	err := client.PublishDiagnostics(ctx, eng.Snapshot(u), []server.Diagnostic{{
		Range:    server.Range{Start: server.Position{Line: 0, Column: 13}, End: server.Position{Line: 0, Column: 14}},
		Severity: server.SeverityWarning, Source: "torchlsp", Message: "y is undefined",
	}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.AwaitDiagnostics(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Diagnostics) != 1 || d.Diagnostics[0].Range.Start.Character != 11 || d.Diagnostics[0].Severity != 2 || d.Version != 1 {
		t.Errorf("diagnostics = %+v", d)
	}

	target := t.TempDir() + "/cfg.py"
	if err := writeFile(target, "ä = 1\n"); err != nil {
		t.Fatal(err)
	}
	ok, err := client.ShowDocument(ctx, server.Location{Path: target, Range: server.Range{End: server.Position{Column: 2}}}, true)
	if err != nil || !ok {
		t.Fatalf("ShowDocument = %v, %v", ok, err)
	}
	e, err := c.Await(ctx, func(e lsptest.Event) bool { return e.Method == "window/showDocument" })
	if err != nil {
		t.Fatal(err)
	}
	var sp struct {
		URI       string
		TakeFocus bool
		Selection lsptest.Range
	}
	if err := e.Decode(&sp); err != nil || sp.URI != lsptest.FileURI(target) || !sp.TakeFocus || sp.Selection.End.Character != 1 {
		t.Errorf("showDocument params = %+v, %v", sp, err)
	}
}

func TestShowDocumentUnsupported(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	startInitialized(t, ctx, eng, lsptest.Options{})
	if _, err := eng.notifier.(*lsp.Client).ShowDocument(ctx, server.Location{Path: "/x.py"}, false); err == nil {
		t.Error("ShowDocument succeeded on a client without the capability")
	}
}

// Confirm asks with window/showMessageRequest, offering yes and Cancel,
// and hears yes only when the user chose it.
func TestConfirm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		choose string
		want   bool
	}{{"yes", "Send", true}, {"cancel", "Cancel", false}, {"dismissed", "", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			eng := newTestEngine()
			asked := make(chan []string, 1)
			c, _ := startInitialized(t, ctx, eng, lsptest.Options{MessageAction: func(msg string, actions []string) string {
				asked <- append([]string{msg}, actions...)
				return tc.choose
			}})
			client := eng.notifier.(*lsp.Client)
			if !client.Capabilities().Confirm {
				t.Error("the editor cannot be asked")
			}
			yes, err := client.Confirm(ctx, "send ~ to the target?", "Send")
			if err != nil || yes != tc.want {
				t.Errorf("Confirm = %v, %v; want %v", yes, err, tc.want)
			}
			if q := <-asked; strings.Join(q, "|") != "send ~ to the target?|Send|Cancel" {
				t.Errorf("asked %q", q)
			}
			if _, err := c.Await(ctx, func(e lsptest.Event) bool { return e.Method == "window/showMessageRequest" && e.Request }); err != nil {
				t.Fatal(err)
			}
		})
	}
}
