package lsp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/config"
)

// fuzzMethods are the methods the server handles; a fuzz input picks one
// by index. shutdown and exit are left out: they end the session the fuzz
// worker shares between inputs.
var fuzzMethods = []struct {
	name    string
	request bool
}{
	{"initialize", true},
	{"textDocument/hover", true},
	{"textDocument/definition", true},
	{"textDocument/didOpen", false},
	{"textDocument/didChange", false},
	{"textDocument/didClose", false},
	{"textDocument/didSave", false},
	{"workspace/didChangeConfiguration", false},
	{"initialized", false},
	{"$/cancelRequest", false},
	{"$/setTrace", false},
	{"textDocument/inlayHint", true},
}

const fuzzPython = "/usr/bin/python3"

// FuzzMethodParams sends every handled method arbitrary JSON params through
// the real wire and engine, with the torch-shaped fixture as the target:
// a request must always be answered (a result or an error, never silence
// or a crash) and after a notification the server must still answer a
// hover. One server is shared by all inputs of a fuzz worker, so state
// left by one input (an odd document, odd settings) meets the next.
func FuzzMethodParams(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	if _, err := os.Stat(fuzzPython); err != nil {
		f.Skipf("%s is missing: run scripts/setup.sh --test", fuzzPython)
	}
	wd, err := os.Getwd()
	if err != nil {
		f.Fatal(err)
	}
	site := filepath.Join(wd, "..", "testdata", "site")
	ws := f.TempDir()
	docPath := filepath.Join(ws, "train.py")
	docText := "import torch\nimport torch.nn as nn\nm = nn.Linear(4, 4)\ntorch.compile(m)\nlabel = \"Größe 𝛼\"\n"
	if err := os.WriteFile(docPath, []byte(docText), 0o644); err != nil {
		f.Fatal(err)
	}
	docURI := lsptest.FileURI(docPath)
	settings, _ := json.Marshal(map[string]any{
		"defaultTarget": "fixture",
		"targets": map[string]any{
			"fixture": map[string]any{"python": fuzzPython, "env": map[string]string{"PYTHONPATH": site}},
		},
	})

	c := startFuzzServer(f, ws, settings)
	probe := func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		p, err := c.StartHover(docURI, 3, 8)
		if err != nil {
			t.Fatalf("probe hover not sent: %v", err)
		}
		if _, err := p.Wait(ctx); err != nil {
			t.Fatalf("server no longer answers: %v", err)
		}
	}
	if err := c.DidOpen(docURI, "python", docText); err != nil {
		f.Fatal(err)
	}

	pos := func(line, char int) string {
		return fmt.Sprintf(`{"textDocument":{"uri":%q},"position":{"line":%d,"character":%d}}`, docURI, line, char)
	}
	seeds := []struct {
		method int
		params string
	}{
		{0, `{"processId":null,"rootUri":null,"capabilities":{}}`},
		{0, `{"processId":"x","rootUri":"untitled:1","initializationOptions":{"targets":7}}`},
		{1, pos(3, 8)},
		{1, pos(4, 12)},
		{1, pos(1<<30, 1<<30)},
		{1, `{"textDocument":{"uri":"untitled:Untitled-1"},"position":{"line":0,"character":0}}`},
		{1, `{"textDocument":{"uri":"file:///nonexistent/x.py"},"position":{"line":-1,"character":0}}`},
		{2, pos(2, 8)},
		{2, `{"textDocument":{"uri":"file://host/%zz"},"position":{}}`},
		{2, `[]`},
		{3, fmt.Sprintf(`{"textDocument":{"uri":%q,"languageId":"python","version":1,"text":"import torch\ntorch.\n"}}`, docURI)},
		{4, fmt.Sprintf(`{"textDocument":{"uri":%q,"version":2},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":3}},"text":"x"}]}`, docURI)},
		{4, fmt.Sprintf(`{"textDocument":{"uri":%q,"version":3},"contentChanges":[{"range":{"start":{"line":9,"character":0},"end":{"line":0,"character":99}},"text":"\ud800"}]}`, docURI)},
		{4, fmt.Sprintf(`{"textDocument":{"uri":%q,"version":4},"contentChanges":[{"text":%q}]}`, docURI, docText)},
		{5, `{"textDocument":{"uri":"file:///w/never-opened.py"}}`},
		{6, fmt.Sprintf(`{"textDocument":{"uri":%q},"text":null}`, docURI)},
		{7, `{"settings":{"torchlsp":{"defaultTarget":"nope"}}}`},
		{7, `{"settings":{"torchlsp":{"targets":{"x":{"python":"/usr/bin/python3","ssh":"u@127.0.0.1:1"}}}}}`},
		{7, `{"settings":null}`},
		{8, `{}`},
		{9, `{"id":1.5}`},
		{9, `{"id":"abc"}`},
		{10, `{"value":"verbose"}`},
		{11, `{"textDocument":{"uri":"file:///a.py"},"range":{}}`},
		{1, `null`},
		{1, `"`},
	}
	for _, s := range seeds {
		f.Add(uint8(s.method), []byte(s.params))
	}

	f.Fuzz(func(t *testing.T, method uint8, params []byte) {
		deadline.Start(t, method, params)
		if !json.Valid(params) {
			t.Skip("params must be JSON to be framed; FuzzFrameStream covers the rest")
		}
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		if !m.request {
			if err := c.Notify(m.name, json.RawMessage(params)); err != nil {
				t.Fatalf("%s not sent: %v", m.name, err)
			}
			probe(t)
			return
		}
		p, err := c.Start(m.name, json.RawMessage(params))
		if err != nil {
			t.Fatalf("%s not sent: %v", m.name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatalf("%s %s: no reply: %v", m.name, params, err)
		}
		if r.Error == nil && r.Result == nil {
			t.Fatalf("%s %s: reply with neither result nor error", m.name, params)
		}
		if r.Error != nil && r.Error.Code == lsptest.CodeInternalError && strings.Contains(r.Error.Message, "panic") {
			t.Fatalf("%s %s: handler panicked: %s", m.name, params, r.Error.Message)
		}
	})
}

// startFuzzServer runs the real engine behind the real wire on a pipe and
// completes the handshake. Targets are limited to the local fixture
// interpreter, so fuzzed settings cannot make the server run other
// programs or reach other hosts.
func startFuzzServer(f *testing.F, ws string, settings json.RawMessage) *lsptest.Client {
	dirs := config.Dirs{Config: f.TempDir(), Cache: f.TempDir(), State: f.TempDir()}
	eng := server.New(server.Options{Dirs: dirs, Opener: fixtureOnly{}})
	c, _ := lsptest.Connect(f, lsptest.Wire{Engine: lsp.NewEngine(eng), Options: lsp.Options{Version: "fuzz", Logger: zap.NewNop()}}, lsptest.Options{
		RootDir: ws, InitializationOptions: settings, Settings: settings, Configuration: true, WorkDoneProgress: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Handshake(ctx); err != nil {
		f.Fatalf("handshake: %v", err)
	}
	return c
}

// fixtureOnly opens only the local fixture interpreter.
type fixtureOnly struct{ remote.LocalOpener }

func (o fixtureOnly) Open(spec remote.Spec) (remote.Target, error) {
	if !spec.IsLocal() || len(spec.Exec) > 0 || spec.Python != fuzzPython {
		return nil, errors.New("fuzzing runs only the local fixture interpreter")
	}
	return o.LocalOpener.Open(spec)
}
