package syntax

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/syntax/syntaxtest"
)

// chunkStarts is where each chunk of Chunks(src, size) after the first
// begins, as the text of that line.
func chunkStarts(src string, size int) []string {
	var out []string
	for _, r := range Chunks([]byte(src), size)[1:] {
		line, _, _ := strings.Cut(src[r.Start:], "\n")
		out = append(out, line)
	}
	return out
}

func TestChunks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string // first line of every chunk after the first
	}{
		{"statements", "a = 1\nb = 2\ndef f():\n    pass\nclass C:\n    x = 1\n", []string{"b = 2", "def f():", "class C:"}},
		{"not inside brackets", "a = [\nb,\nc]\nd = 1\n", []string{"d = 1"}},
		{"not inside a triple-quoted string", "s = '''\ndef f():\n'''\nx = 1\n", []string{"x = 1"}},
		{"not inside a prefixed string", "s = rb\"\"\"\nx = 1\n\\\"\"\"\"\ny = 2\n", []string{"y = 2"}},
		{"escaped quote", "s = 'a\\'\nb'\nc = 1\n", []string{"b'", "c = 1"}},
		{"not after a continuation", "a = 1 + \\\nb\nc = 1\n", []string{"c = 1"}},
		{"not between a decorator and its definition", "a = 1\n@dec(\n1)\n@other\ndef f(): pass\ng = 1\n", []string{"@dec(", "g = 1"}},
		{"not before a clause", "try:\n    pass\nexcept E:\n    pass\nelse:\n    pass\nfinally:\n    pass\nelsewhere = 1\n", []string{"elsewhere = 1"}},
		{"not at an indented line or a comment", "if x:\n    y = 1\n# c\n  # d\nz = 1\n", []string{"z = 1"}},
		{"f-string field with the same quote", "s = f\"{d[\"}\"]}\"\nx = 1\n", []string{"x = 1"}},
		{"f-string field with a nested format spec", "s = f'{x:{w}}' + '{'\nx = 1\n", []string{"x = 1"}},
		{"doubled braces are text", "s = f'{{'\nx = (\n1)\ny = 2\n", []string{"x = (", "y = 2"}},
		{"a comment's quote and bracket are text", "a = 1 # it's (\nb = 2\n", []string{"b = 2"}},
		{"not at a string statement", "a = 1\n'doc'\nb = 2\n", []string{"b = 2"}},
		{"crlf continuation", "a = 1 + \\\r\nb\r\nc = 1\r\n", []string{"c = 1\r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := chunkStarts(tt.src, 1); !slices.Equal(got, tt.want) {
				t.Errorf("chunks start at %q, want %q", got, tt.want)
			}
		})
	}
	if got := Chunks([]byte("a = 1\nb = 2\n"), 100); got != nil {
		t.Errorf("a text under size is split: %v", got)
	}
	if got := Chunks([]byte("x = [\n1,\n2,\n3]\n"), 1); got != nil {
		t.Errorf("a text with no place to split is split: %v", got)
	}
}

// Chunks cover the text in order, and each is at least size bytes but
// the last; positions agree with the offsets.
func TestChunksCover(t *testing.T) {
	t.Parallel()
	src := strings.Repeat("def f(x):\n    return x\n\nclass C:\n    '''doc\ndef g(): pass\n'''\n", 40)
	rs := Chunks([]byte(src), 200)
	if len(rs) < 2 {
		t.Fatalf("%d chunks", len(rs))
	}
	lines := NewLines([]byte(src))
	at := 0
	for i, r := range rs {
		if r.Start != at {
			t.Fatalf("chunk %d starts at %d, want %d", i, r.Start, at)
		}
		if i < len(rs)-1 && r.End-r.Start < 200 {
			t.Errorf("chunk %d holds %d bytes, under the size", i, r.End-r.Start)
		}
		if want := lines.Range(r.Start, r.End); r != want {
			t.Errorf("chunk %d = %+v, want %+v", i, r, want)
		}
		at = r.End
	}
	if at != len(src) {
		t.Errorf("chunks end at %d of %d", at, len(src))
	}
}

// Parsed chunk by chunk, a real module gives exactly the top-level
// statements of its whole parse, and no chunk holds an error, for every
// file of the interpreter's standard library here (and of torch 2.11
// with TORCHLSP_TORCH211_SITE): the scan's places are statements' starts.
func TestChunksParseAsTheWhole(t *testing.T) {
	t.Parallel()
	files := syntaxtest.Corpus()
	if len(files) < 50 {
		t.Skipf("only %d Python files found", len(files))
	}
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	split := 0
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil || len(src) > 4<<20 {
			continue
		}
		whole := p.Parse(src)
		if whole.HasError() {
			continue
		}
		ranges := Chunks(src, 2048)
		if ranges == nil {
			continue
		}
		split++
		var got []Span
		for _, r := range ranges {
			tr := p.ParseRanges(src, []Range{r})
			if tr.HasError() {
				t.Errorf("%s: the chunk at line %d has a syntax error", path, r.StartRow+1)
				break
			}
			got = append(got, statementSpans(tr)...)
		}
		if want := statementSpans(whole); !slices.Equal(got, want) {
			t.Errorf("%s: chunked, %d top-level statements; whole, %d", path, len(got), len(want))
		}
	}
	t.Logf("%d files, %d split", len(files), split)
}

func statementSpans(t *Tree) []Span {
	var out []Span
	for c := range t.Children(t.Root()) {
		if t.Kind(c) != KindComment {
			out = append(out, t.Span(c))
		}
	}
	return out
}
