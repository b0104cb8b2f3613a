package e2e

import (
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestFlagValueReadWhenOpened: a document that names config flags starts
// the target's value read when it is checked, so that a hover on a flag
// never waits for the target to import torch and, once the read has
// ended, the first hover already shows the value on the target.
func TestFlagValueReadWhenOpened(t *testing.T) {
	t.Parallel()
	env := start(t, options{settings: fixtureSettings(t)})
	uri := env.OpenFile("train.py")
	env.AwaitDiagnostics(uri, func(d lsptest.Diagnostics) bool { return d.Has("TL001") })
	// Nothing hovered yet: the read was started by the document alone.
	env.AwaitProgressEnd("torchlsp: importing torch on fixture")
	h := env.Hover(uri, env.At(uri, "cudagraph_trees = False", 3))
	if h == nil || !strings.Contains(h.Contents.Value, "On target **fixture**: `") {
		t.Fatalf("first hover on the flag = %+v, want the value on the target", h)
	}
	env.Shutdown()
}
