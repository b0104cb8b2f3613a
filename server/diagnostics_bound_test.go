package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBoundPublished(t *testing.T) {
	t.Parallel()
	at := func(line int, sev Severity, code string) Diagnostic {
		return Diagnostic{Range: Range{Start: Position{Line: line}, End: Position{Line: line, Column: 1}}, Severity: sev, Code: code}
	}
	many := func(n int, sev Severity) []Diagnostic {
		var out []Diagnostic
		for i := range n {
			out = append(out, at(i, sev, "TL004"))
		}
		return out
	}
	for _, tt := range []struct {
		name      string
		diags     []Diagnostic
		limit     int
		wantLen   int
		wantFirst []string // codes and lines of the first kept, in order
		wantNote  string   // in the note's message; "" for no note
	}{
		{name: "under the limit: untouched", diags: many(3, SeverityError), limit: 3, wantLen: 3, wantFirst: []string{"TL004@0", "TL004@1", "TL004@2"}},
		{name: "over: the first in document order, then the note", diags: many(5, SeverityError), limit: 3, wantLen: 4,
			wantFirst: []string{"TL004@0", "TL004@1", "TL004@2"}, wantNote: "2 more findings in this file are not shown: at most 3 are published"},
		{name: "over: a warning at the end outranks hints before it",
			diags: append(many(4, SeverityHint), at(99, SeverityWarning, "TL001")), limit: 2, wantLen: 3,
			wantFirst: []string{"TL001@99", "TL004@0"}, wantNote: "3 more findings"},
		{name: "over: errors before warnings, each in document order",
			diags: []Diagnostic{at(5, SeverityWarning, "TL001"), at(9, SeverityError, "TL004"), at(1, SeverityError, "TL004"), at(0, SeverityInfo, "TL008")},
			limit: 3, wantLen: 4, wantFirst: []string{"TL004@1", "TL004@9", "TL001@5"}, wantNote: "1 more findings"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := fmt.Sprint(tt.diags)
			got := boundPublished(tt.diags, tt.limit, "/ws/big.py")
			if fmt.Sprint(tt.diags) != before {
				t.Errorf("the input was changed")
			}
			if len(got) != tt.wantLen {
				t.Fatalf("%d diagnostics, want %d", len(got), tt.wantLen)
			}
			for i, w := range tt.wantFirst {
				if g := fmt.Sprintf("%s@%d", got[i].Code, got[i].Range.Start.Line); g != w {
					t.Errorf("kept[%d] = %s, want %s", i, g, w)
				}
			}
			last := got[len(got)-1]
			if tt.wantNote == "" {
				return
			}
			if last.Code != "" || last.Severity != SeverityInfo || !strings.Contains(last.Message, tt.wantNote) ||
				!strings.Contains(last.Message, "torchlsp check big.py") || last.Range != (Range{}) {
				t.Errorf("note = %+v, want an info at the top naming %q and torchlsp check big.py", last, tt.wantNote)
			}
		})
	}
}

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
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	site, err := filepath.Abs("../testdata/site")
	if err != nil {
		t.Fatal(err)
	}
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
