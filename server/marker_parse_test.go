package server_test

import (
	"reflect"
	"testing"
)

// The marker tests' own parsing: a test harness that misreads its files
// passes tests it should fail.

func TestParseArchive(t *testing.T) {
	t.Parallel()
	in := "comment\n-- a.py --\nx = 1\n-- untitled:b --\n-- @hover/c --\nrange none\n"
	a := parseArchive(in)
	want := []archiveFile{{"a.py", "x = 1\n"}, {"untitled:b", ""}, {"@hover/c", "range none\n"}}
	if a.comment != "comment\n" || !reflect.DeepEqual(a.files, want) {
		t.Fatalf("parseArchive = %q %+v", a.comment, a.files)
	}
	if got := a.format(); got != in {
		t.Errorf("format = %q, want %q", got, in)
	}
}

func TestParseMarkers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line    string
		want    []marker
		wantErr bool
	}{
		{`x = 1`, nil, false},
		{`nn.Linear  #@hover("Li|near", "class Linear"), def("Linear", "a.py:1")`, []marker{
			{line: 0, name: "hover", args: []string{"Li|near", "class Linear"}},
			{line: 0, name: "def", args: []string{"Linear", "a.py:1"}},
		}, false},
		{`f(mode="x")  #@diag("\"x\"", "TL001")`, []marker{{line: 0, name: "diag", args: []string{`"x"`, "TL001"}}}, false},
		{`#@diagnostics("@all")`, []marker{{line: 0, name: "diagnostics", args: []string{"@all"}}}, false},
		{`x  #@hover(Linear)`, nil, true},
		{`x  #@hover`, nil, true},
	}
	for _, tt := range tests {
		d := &doc{name: "a.py", text: tt.line}
		err := d.parseMarkers()
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v", tt.line, err)
			continue
		}
		for i := range d.markers {
			d.markers[i].doc = nil
		}
		if !tt.wantErr && !reflect.DeepEqual(d.markers, tt.want) {
			t.Errorf("%q: markers = %+v, want %+v", tt.line, d.markers, tt.want)
		}
	}
}

func TestApplyEdits(t *testing.T) {
	t.Parallel()
	text := "a = f(mode=\"x\")\nb = 2\n"
	got, err := applyEdits(text, []textEdit{
		{Range: span{pos{1, 4}, pos{1, 5}}, NewText: "3"},
		{Range: span{pos{0, 6}, pos{0, 14}}, NewText: "options={}"},
	})
	if err != nil || got != "a = f(options={})\nb = 3\n" {
		t.Fatalf("applyEdits = %q, %v", got, err)
	}
	if _, err := applyEdits(text, []textEdit{{Range: span{pos{0, 40}, pos{0, 41}}}}); err == nil {
		t.Error("an edit past the end of its line was applied")
	}
	if got := changedLines(text, got); got != "line 1: a = f(options={})\nline 2: b = 3\n" {
		t.Errorf("changedLines = %q", got)
	}
}
