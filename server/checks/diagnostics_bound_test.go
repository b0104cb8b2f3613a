package checks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/api"
)

func TestBoundPublished(t *testing.T) {
	t.Parallel()
	at := func(line int, sev api.Severity, code string) api.Diagnostic {
		return api.Diagnostic{Range: api.Range{Start: api.Position{Line: line}, End: api.Position{Line: line, Column: 1}}, Severity: sev, Code: code}
	}
	many := func(n int, sev api.Severity) []api.Diagnostic {
		var out []api.Diagnostic
		for i := range n {
			out = append(out, at(i, sev, "TL004"))
		}
		return out
	}
	for _, tt := range []struct {
		name      string
		diags     []api.Diagnostic
		limit     int
		wantLen   int
		wantFirst []string // codes and lines of the first kept, in order
		wantNote  string   // in the note's message; "" for no note
	}{
		{name: "under the limit: untouched", diags: many(3, api.SeverityError), limit: 3, wantLen: 3, wantFirst: []string{"TL004@0", "TL004@1", "TL004@2"}},
		{name: "over: the first in document order, then the note", diags: many(5, api.SeverityError), limit: 3, wantLen: 4,
			wantFirst: []string{"TL004@0", "TL004@1", "TL004@2"}, wantNote: "2 more findings in this file are not shown: at most 3 are published"},
		{name: "over: a warning at the end outranks hints before it",
			diags: append(many(4, api.SeverityHint), at(99, api.SeverityWarning, "TL001")), limit: 2, wantLen: 3,
			wantFirst: []string{"TL001@99", "TL004@0"}, wantNote: "3 more findings"},
		{name: "over: errors before warnings, each in document order",
			diags: []api.Diagnostic{at(5, api.SeverityWarning, "TL001"), at(9, api.SeverityError, "TL004"), at(1, api.SeverityError, "TL004"), at(0, api.SeverityInfo, "TL008")},
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
			if last.Code != "" || last.Severity != api.SeverityInfo || !strings.Contains(last.Message, tt.wantNote) ||
				!strings.Contains(last.Message, "torchlsp check big.py") || last.Range != (api.Range{}) {
				t.Errorf("note = %+v, want an info at the top naming %q and torchlsp check big.py", last, tt.wantNote)
			}
		})
	}
}
