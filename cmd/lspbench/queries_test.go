package main

import (
	"os"
	"strings"
	"testing"
)

// TestQueriesLocateInScript checks that every marker is in the training
// script and that the position lands inside the word a user would hover.
func TestQueriesLocateInScript(t *testing.T) {
	data, err := os.ReadFile("testdata/workspace/train.py")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	lines := strings.Split(text, "\n")
	if n := len(lines); n < 120 || n > 200 {
		t.Errorf("train.py has %d lines; the session is meant to be realistic, about 150", n)
	}
	seen := map[string]bool{}
	for _, q := range defaultQueries {
		if seen[q.Symbol] {
			t.Errorf("%s queried twice", q.Symbol)
		}
		seen[q.Symbol] = true
		p, err := locate(text, q)
		if err != nil {
			t.Error(err)
			continue
		}
		line := lines[p.Line]
		start := p.Character - 1
		if start < 0 || !strings.HasPrefix(line[start:], q.Word) {
			t.Errorf("%s: position %+v is not on %q in %q", q.Symbol, p, q.Word, line)
		}
	}
}

func TestLocateErrors(t *testing.T) {
	for _, q := range []query{
		{"a.b", "absent marker", "b"},
		{"a.b", "x = 1", "zz"},
	} {
		if _, err := locate("x = 1\n", q); err == nil {
			t.Errorf("locate(%+v) succeeded, want an error", q)
		}
	}
}

func TestOffsetToPosition(t *testing.T) {
	text := "a\n# héllo 😀 x\nlast"
	tests := []struct {
		offset int
		want   position
	}{
		{0, position{0, 0}},
		{2, position{1, 0}},
		{strings.Index(text, "llo"), position{1, 4}}, // é is one UTF-16 unit
		{strings.Index(text, " x"), position{1, 10}}, // 😀 is two
		{strings.Index(text, "last"), position{2, 0}},
		{len(text), position{2, 4}},
	}
	for _, tt := range tests {
		if got := offsetToPosition(text, tt.offset); got != tt.want {
			t.Errorf("offsetToPosition(%d) = %+v, want %+v", tt.offset, got, tt.want)
		}
	}
}

func BenchmarkLocate(b *testing.B) {
	data, err := os.ReadFile("testdata/workspace/train.py")
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	b.ReportAllocs()
	for b.Loop() {
		for _, q := range defaultQueries {
			if _, err := locate(text, q); err != nil {
				b.Fatal(err)
			}
		}
	}
}
