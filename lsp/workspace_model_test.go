package lsp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

const wsLoader = `import torch
import torch.nn as nn


def load_model():
    net = nn.Linear(4, 4).cuda()
    return torch.compile(net, mode="%s")
`

const wsServer = `import threading
from model import load_model

MODEL = load_model()


def handle(x):
    return MODEL(x)


def serve(requests):
    for r in requests:
        threading.Thread(target=handle, args=(r,)).start()
`

// TestWorkspaceModelOverTheWire: the editor opens only server.py, whose
// threads call what the closed model.py compiles; its TL001 comes with
// the path across the two files as related information (the client
// takes it), each step a location in its file.
// Then the user opens model.py and turns CUDA graphs off there: server.py
// is published again without TL001, with no edit of its own.
func TestWorkspaceModelOverTheWire(t *testing.T) {
	t.Parallel()
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s is missing", python)
	}
	site, err := filepath.Abs(filepath.Join("..", "testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	env := lsptest.Start(t, lsptest.Config{
		Files: map[string]string{
			"model.py":  strings.Replace(wsLoader, "%s", "reduce-overhead", 1),
			"server.py": wsServer,
		},
		Settings: []byte(`{"defaultTarget": "fixture", "targets": {"fixture": {"python": "` + python + `", "env": {"PYTHONPATH": "` + site + `"}}}}`),
		Client:   lsptest.Options{RelatedInformation: true},
		Timeout:  2 * time.Minute,
	})
	ws := env.Sandbox.Workdir
	server := env.OpenFile("server.py")
	tl001 := func(d lsptest.Diagnostics) bool {
		for _, x := range d.Diagnostics {
			if strings.HasPrefix(string(x.Code), "TL001") && x.Range.Start.Line == 7 {
				return true
			}
		}
		return false
	}
	got := env.AwaitDiagnostics(server, tl001)
	var path []string
	for _, x := range got.Diagnostics {
		if !strings.HasPrefix(string(x.Code), "TL001") {
			continue
		}
		for _, r := range x.RelatedInformation {
			path = append(path, fmt.Sprintf("%s@%d %s", r.Location.URI, r.Location.Range.Start.Line, r.Message))
		}
		path = append(path, x.Message)
	}
	all := strings.Join(path, "\n")
	for _, want := range []string{
		lsptest.FileURI(filepath.Join(ws, "model.py")) + "@6 model.py:7: compiled here",
		lsptest.FileURI(filepath.Join(ws, "server.py")) + "@12 server.py:13: the thread starts here: threading.Thread",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the path lacks %q:\n%s", want, all)
		}
	}

	model := env.OpenFile("model.py")
	env.EditBuffer(model, strings.Replace(wsLoader, "%s", "default", 1))
	env.AwaitDiagnostics(server, func(d lsptest.Diagnostics) bool { return !tl001(d) })
}
