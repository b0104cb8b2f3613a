package navigation

import (
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// TestHighlightKinds: what a highlighted place does with the name, from
// its role in the file: a binding or the declaration writes, a name read
// or an attribute read reads, an assigned attribute writes, and an
// import's name is only named.
func TestHighlightKinds(t *testing.T) {
	t.Parallel()
	const text = "from m import f as g\nimport m\ng(1)\nm.f = g\nm.f += 1\na, m.f = 1, 2\nprint(m.f)\nm.f.x = 3\ng = 2\ndef f():\n    pass\n"
	tree, err := syntax.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	tab := pyscope.New(tree)
	lines := strings.Split(text, "\n")
	tests := []struct {
		line int    // 0-based
		word string // its first occurrence on the line
		decl bool
		want HighlightKind
	}{
		{0, "f", false, HighlightText},  // the name an import takes
		{0, "g", false, HighlightWrite}, // the name it binds
		{2, "g", false, HighlightRead},  // a call
		{3, "f", false, HighlightWrite}, // m.f = …
		{3, "g", false, HighlightRead},  // … = g
		{4, "f", false, HighlightWrite}, // m.f += …
		{5, "f", false, HighlightWrite}, // a, m.f = …
		{6, "f", false, HighlightRead},  // print(m.f)
		{7, "f", false, HighlightRead},  // m.f.x = …: x is assigned, f read
		{8, "g", false, HighlightWrite}, // g = …
		{9, "f", true, HighlightWrite},  // the definition's own name
		{1, "m", false, HighlightText},  // import m: the module's path
		{3, "m", false, HighlightRead},  // m of m.f
		{0, "m", false, HighlightText},  // from m
		{6, "print", false, HighlightRead},
	}
	for _, tt := range tests {
		col := strings.Index(lines[tt.line], tt.word)
		for col >= 0 && !isWord(lines[tt.line], col, len(tt.word)) {
			next := strings.Index(lines[tt.line][col+1:], tt.word)
			if next < 0 {
				col = -1
				break
			}
			col += 1 + next
		}
		if col < 0 {
			t.Fatalf("line %d holds no word %q", tt.line, tt.word)
		}
		span := syntax.Span{Start: syntax.Pos{Line: tt.line, Col: col}, End: syntax.Pos{Line: tt.line, Col: col + len(tt.word)}}
		hs := highlights(tab, []pyindex.Reference{{Span: span, Declaration: tt.decl}})
		if len(hs) != 1 || hs[0].Kind != tt.want {
			t.Errorf("%q on line %d: %+v, want %s", tt.word, tt.line+1, hs, tt.want)
		}
	}
}

// isWord reports whether text[i:i+n] is a whole identifier.
func isWord(text string, i, n int) bool {
	ident := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	return (i == 0 || !ident(text[i-1])) && (i+n == len(text) || !ident(text[i+n]))
}
