package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
	"github.com/torchlsp/torchlsp/server/source"
)

// publication is one publishDiagnostics of a document.
type publication struct {
	uri   string
	diags []Diagnostic
}

// pubNotes records every publication.
type pubNotes struct {
	NopNotifier
	pubs chan publication
}

func (n *pubNotes) Capabilities() Capabilities { return Capabilities{Diagnostics: true} }

func (n *pubNotes) PublishDiagnostics(_ context.Context, doc *Snapshot, diags []Diagnostic) error {
	n.pubs <- publication{doc.URI(), diags}
	return nil
}

const loaderPy = `import torch
import torch.nn as nn


def load_model():
    net = nn.Linear(4, 4).cuda()
    return torch.compile(net, mode=%q)
`

const serverPy = `import threading
from model import load_model

MODEL = load_model()


def handle(x):
    return MODEL(x)


def serve(requests):
    for r in requests:
        threading.Thread(target=handle, args=(r,)).start()
`

// An open server.py whose threads call what a closed model.py compiles
// gets TL001 at the call, with the path across the two files; when the
// user then opens model.py and turns CUDA graphs off there, server.py's
// diagnostics are published again without it, with no edit of server.py.
func TestWorkspaceModelAcrossFiles(t *testing.T) {
	t.Parallel()
	site := fixtureSite(t)
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	modelPath, serverPath := filepath.Join(ws, "model.py"), filepath.Join(ws, "server.py")
	for p, text := range map[string]string{modelPath: fmt.Sprintf(loaderPy, "reduce-overhead"), serverPath: serverPy} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := &pubNotes{pubs: make(chan publication, 256)}
	eng := New(Options{Notifier: n, Dirs: config.Dirs{Config: filepath.Join(root, "c"), Cache: filepath.Join(root, "k"), State: filepath.Join(root, "s")}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings, _ := json.Marshal(map[string]any{"defaultTarget": "fx", "targets": map[string]any{
		"fx": map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := eng.Initialize(ctx, InitializeParams{WorkspaceFolders: []string{ws}, InitializationOptions: settings}); err != nil {
		t.Fatal(err)
	}
	eng.Initialized(ctx)
	serverURI, modelURI := source.FileURI(serverPath), source.FileURI(modelPath)
	await := func(uri, what string, ok func([]Diagnostic) bool) []Diagnostic {
		t.Helper()
		for {
			select {
			case p := <-n.pubs:
				if p.uri == uri && ok(p.diags) {
					return p.diags
				}
			case <-ctx.Done():
				t.Fatalf("never published %s", what)
			}
		}
	}
	tl001At := func(line int) func([]Diagnostic) bool {
		return func(ds []Diagnostic) bool {
			for _, d := range ds {
				if strings.HasPrefix(d.Code, "TL001") && d.Range.Start.Line == line {
					return true
				}
			}
			return false
		}
	}
	eng.DidOpen(ctx, serverURI, "python", 1, serverPy)
	ds := await(serverURI, "TL001 at MODEL(x) in server.py", tl001At(7))
	var related []string
	for _, d := range ds {
		for _, r := range d.Related {
			related = append(related, r.Location.Path+": "+r.Message)
		}
	}
	if all := strings.Join(related, "\n"); !strings.Contains(all, modelPath+": model.py:7: compiled here") ||
		!strings.Contains(all, serverPath+": server.py:13: the thread starts here: threading.Thread") {
		t.Errorf("the path is not in the related information:\n%s", all)
	}

	eng.DidOpen(ctx, modelURI, "python", 1, fmt.Sprintf(loaderPy, "reduce-overhead"))
	await(modelURI, "TL001 at the compile in model.py", tl001At(6))
	if _, err := eng.DidChange(ctx, modelURI, 2, []source.Change{{Text: fmt.Sprintf(loaderPy, "default")}}); err != nil {
		t.Fatal(err)
	}
	await(serverURI, "server.py again without TL001", func(ds []Diagnostic) bool { return !tl001At(7)(ds) })
}
