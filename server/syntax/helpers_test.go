package syntax

import (
	"strings"
	"testing"
)

// find returns the first node of kind k whose text is text.
func find(t *testing.T, tree *Tree, k Kind, text string) int32 {
	t.Helper()
	for i := range tree.Len() {
		if n := int32(i); tree.Kind(n) == k && tree.Text(n) == text {
			return n
		}
	}
	t.Fatalf("no %s %q in %q", k, text, tree.Src())
	return -1
}

func parse(t *testing.T, src string) *Tree {
	t.Helper()
	tree, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func TestChain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src, expr string
		kind      Kind
		want      string // identifiers joined by spaces; "" for nil
	}{
		{"a\n", "a", KindIdentifier, "a"},
		{"a.b.c\n", "a.b.c", KindAttribute, "a b c"},
		{"a.b().c\n", "a.b().c", KindAttribute, ""},
		{"f().x\n", "f().x", KindAttribute, ""},
		{"a[0].b\n", "a[0].b", KindAttribute, ""},
		{"(a).b\n", "(a).b", KindAttribute, ""},
		{"torch . nn\n", "torch . nn", KindAttribute, "torch nn"},
	} {
		tree := parse(t, tc.src)
		var parts []string
		for _, id := range tree.Chain(find(t, tree, tc.kind, tc.expr)) {
			parts = append(parts, tree.Text(id))
		}
		if got := strings.Join(parts, " "); got != tc.want {
			t.Errorf("Chain(%q) = %q, want %q", tc.expr, got, tc.want)
		}
		// ChainText is the same chain, dotted, without the spaces written.
		if got, want := tree.ChainText(find(t, tree, tc.kind, tc.expr)), strings.ReplaceAll(tc.want, " ", "."); got != want {
			t.Errorf("ChainText(%q) = %q, want %q", tc.expr, got, want)
		}
	}
	if got := parse(t, "a\n").ChainText(-1); got != "" {
		t.Errorf("ChainText(-1) = %q", got)
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src     string
		plain   string
		plainOK bool
		value   string
		content string // ContentSpan
	}{
		{`x = "a.b"`, "a.b", true, "a.b", "0:5-0:8"},
		{`x = 'it\'s'`, `it\'s`, true, "it's", "0:5-0:10"},
		{`x = ("a" "b")`, "ab", true, "ab", "0:5-0:12"},
		{`x = ((("k")))`, "k", true, "k", "0:8-0:9"},
		{`x = f"{y}"`, "", false, "{y}", "0:6-0:9"},
		{`x = b"raw"`, "", false, "raw", "0:6-0:9"},
		{`x = r"\d"`, `\d`, true, `\d`, "0:6-0:8"},
		{`x = "a" f"{b}"`, "", false, "a{b}", "0:4-0:14"},
		{"x = \"\"\"two\nlines\"\"\"", "two\nlines", true, "two\nlines", "0:4-1:8"},
		{`x = 3`, "", false, "", "0:4-0:5"},
	} {
		tree := parse(t, tc.src+"\n")
		asg := find(t, tree, KindAssignment, tc.src)
		rhs := tree.Child(asg, FieldRight)
		v, ok := tree.PlainString(rhs)
		if v != tc.plain || ok != tc.plainOK {
			t.Errorf("PlainString(%s) = %q, %v; want %q, %v", tc.src, v, ok, tc.plain, tc.plainOK)
		}
		if k := tree.Kind(tree.Unwrap(rhs)); k == KindString || k == KindConcatenatedString {
			if got := tree.StringValue(tree.Unwrap(rhs)); got != tc.value {
				t.Errorf("StringValue(%s) = %q, want %q", tc.src, got, tc.value)
			}
		}
		if got := tree.ContentSpan(rhs).String(); got != tc.content {
			t.Errorf("ContentSpan(%s) = %s, want %s", tc.src, got, tc.content)
		}
	}
}

func TestDottedName(t *testing.T) {
	t.Parallel()
	tree := parse(t, "import torch.nn.functional as F\nfrom a . b import (c)\n")
	if got := tree.DottedName(find(t, tree, KindDottedName, "torch.nn.functional")); got != "torch.nn.functional" {
		t.Errorf("got %q", got)
	}
	if got := tree.DottedName(find(t, tree, KindDottedName, "a . b")); got != "a.b" {
		t.Errorf("got %q", got)
	}
}

// Innermost and Innermosts agree with walks from the root and to it.
func TestInnermost(t *testing.T) {
	t.Parallel()
	for name, src := range testSources(t) {
		tree, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off <= len(src); off += 1 + len(src)/3000 {
			want := int32(-1)
			if tree.Len() > 0 && tree.Start(0) <= off && off < tree.End(0) {
				want = 0
				for {
					next := int32(-1)
					for c := range tree.Children(want) {
						if tree.Start(c) <= off && off < tree.End(c) {
							next = c
							break
						}
					}
					if next < 0 {
						break
					}
					want = next
				}
			}
			if got := tree.Innermost(off); got != want {
				t.Fatalf("%s: Innermost(%d) = %d, want %d", name, off, got, want)
			}
		}
		fns := tree.Innermosts(KindFunctionDefinition, KindLambda)
		for i := range tree.Len() {
			want := int32(-1)
			for p := tree.Parent(int32(i)); p >= 0; p = tree.Parent(p) {
				if k := tree.Kind(p); k == KindFunctionDefinition || k == KindLambda {
					want = p
					break
				}
			}
			if fns[i] != want {
				t.Fatalf("%s: Innermosts[%d] = %d, want %d", name, i, fns[i], want)
			}
		}
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	src := []byte("ab\r\ncd\n\nxyz")
	li := NewLines(src)
	for _, tc := range []struct {
		pos  Pos
		off  int
		ok   bool
		line string
	}{
		{Pos{0, 0}, 0, true, "ab"},
		{Pos{0, 2}, 2, true, "ab"},
		{Pos{0, 3}, 0, false, "ab"},
		{Pos{1, 1}, 5, true, "cd"},
		{Pos{2, 0}, 7, true, ""},
		{Pos{3, 3}, 11, true, "xyz"},
		{Pos{4, 0}, 0, false, ""},
	} {
		off, ok := li.Offset(src, tc.pos)
		if off != tc.off || ok != tc.ok {
			t.Errorf("Offset(%v) = %d, %v", tc.pos, off, ok)
		}
		if ok && li.Pos(off) != tc.pos {
			t.Errorf("Pos(%d) = %v, want %v", off, li.Pos(off), tc.pos)
		}
		if got := li.Line(src, tc.pos.Line); got != tc.line {
			t.Errorf("Line(%d) = %q", tc.pos.Line, got)
		}
	}
	if !(Span{Pos{1, 0}, Pos{1, 2}}).Contains(Pos{1, 2}) || (Span{Pos{1, 0}, Pos{1, 2}}).Contains(Pos{2, 0}) {
		t.Error("Span.Contains")
	}
}
