package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// countNotes records how many diagnostics each publication carried and
// its last message.
type countNotes struct {
	NopNotifier
	pubs chan []Diagnostic
}

func (n *countNotes) Capabilities() Capabilities { return Capabilities{Diagnostics: true} }

func (n *countNotes) PublishDiagnostics(_ context.Context, _ *Snapshot, diags []Diagnostic) error {
	n.pubs <- diags
	return nil
}

// A buffer with an unknown flag on each of 1,500 lines publishes the
// bound's 1,000 and one note; torchlsp check would list all 1,500.
func TestPublishedDiagnosticsAreBounded(t *testing.T) {
	t.Parallel()
	site := fixtureSite(t)
	n := &countNotes{pubs: make(chan []Diagnostic, 16)}
	root := t.TempDir()
	eng := initEngine(t, n, root, root, "fx", map[string]any{
		"fx": map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	eng.Initialized(ctx)
	var src strings.Builder
	src.WriteString("import torch._inductor.config as config\n")
	for i := range 1500 {
		fmt.Fprintf(&src, "config.cudagraphz_%d = 1\n", i)
	}
	eng.DidOpen(ctx, "file:///work/generated.py", "", 1, src.String())
	for {
		select {
		case diags := <-n.pubs:
			if len(diags) == 0 {
				continue // published before the target's torch was known
			}
			if len(diags) != MaxPublishedDiagnostics+1 {
				t.Fatalf("published %d diagnostics, want %d and a note", len(diags), MaxPublishedDiagnostics)
			}
			if note := diags[len(diags)-1].Message; !strings.HasPrefix(note, "500 more findings in this file are not shown") {
				t.Errorf("the note says %q", note)
			}
			if d := diags[0]; !strings.HasPrefix(d.Code, "TL004") || d.Range.Start.Line != 1 {
				t.Errorf("first published %s at line %d, want TL004 at line 1", d.Code, d.Range.Start.Line)
			}
			return
		case <-ctx.Done():
			t.Fatal("no diagnostics published")
		}
	}
}
