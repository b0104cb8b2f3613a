package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
)

// codesNotes records the diagnostic codes published per document version.
type codesNotes struct {
	NopNotifier
	codes chan string // all codes of one publication, joined
}

func (n *codesNotes) Capabilities() Capabilities { return Capabilities{Diagnostics: true} }

func (n *codesNotes) PublishDiagnostics(_ context.Context, _ *Snapshot, diags []Diagnostic) error {
	var codes []string
	for _, d := range diags {
		codes = append(codes, d.Code)
	}
	n.codes <- strings.Join(codes, ",")
	return nil
}

// Select Target republishes the open documents' diagnostics for the new
// target's torch, with no edit: the fixture torch's TL001 gives way to
// Debian torch 1.13's TL005 (no torch.compile there).
func TestSelectTargetRepublishes(t *testing.T) {
	t.Parallel()
	site := fixtureSite(t)
	src, err := os.ReadFile("../test/e2e/testdata/workspace/train.py")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	n := &codesNotes{codes: make(chan string, 64)}
	eng := New(Options{Notifier: n, Dirs: config.Dirs{Config: filepath.Join(root, "c"), Cache: filepath.Join(root, "k"), State: filepath.Join(root, "s")}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings, _ := json.Marshal(map[string]any{"defaultTarget": "fx", "targets": map[string]any{
		"fx":  map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site}},
		"deb": map[string]any{"python": benchPython},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := eng.Initialize(ctx, InitializeParams{InitializationOptions: settings}); err != nil {
		t.Fatal(err)
	}
	eng.Initialized(ctx)
	eng.DidOpen(ctx, "file:///work/retarget.py", "", 1, string(src))
	await := func(what string, ok func(codes string) bool) {
		t.Helper()
		for {
			select {
			case codes := <-n.codes:
				if ok(codes) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("never published %s", what)
			}
		}
	}
	await("TL001 on the fixture torch", func(c string) bool { return strings.Contains(c, "TL001") })
	if _, err := eng.SelectTargetCommand(ctx, TargetArgs{Target: "deb"}); err != nil {
		t.Fatal(err)
	}
	await("TL005 on Debian's torch after Select Target", func(c string) bool { return strings.Contains(c, "TL005") && !strings.Contains(c, "TL001") })
}
