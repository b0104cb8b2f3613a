package pyscope

import (
	"fmt"
	"strings"
	"testing"
)

// outlineString renders an outline one item a line, indented by depth:
// "kind name line:col-line:col name@line:col".
func outlineString(items []OutlineItem, depth int, b *strings.Builder) {
	for _, it := range items {
		fmt.Fprintf(b, "%s%s %s %d-%d @%d:%d\n", strings.Repeat("  ", depth), it.Kind, it.Name,
			it.Span.Start.Line, it.Span.End.Line, it.NameSpan.Start.Line, it.NameSpan.Start.Col)
		outlineString(it.Children, depth+1, b)
	}
}

func TestOutline(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, code, want string }{
		{"module names", "import os\nX = 1\nX = 2\nif os:\n    Y: int = 3\ndef f(a):\n    z = a\n    return z\n",
			"assignment X 1-1 @1:0\nassignment Y 4-4 @4:4\ndef f 5-7 @5:4\n"},
		{"a class and its members", "class C(Base):\n    a = 1\n\n    @property\n    def p(self):\n        self.q = 1\n        return 1\n\n    class Inner:\n        pass\n",
			"class C 0-9 @0:6\n  assignment a 1-1 @1:4\n  def p 3-6 @4:8\n  class Inner 8-9 @8:10\n"},
		{"nested functions, locals left out", "def outer():\n    x = 1\n    def inner():\n        global G\n        G = 2\n    class K:\n        b = 1\n    return inner\n",
			"def outer 0-7 @0:4\n  def inner 2-4 @2:8\n  class K 5-6 @5:10\n    assignment b 6-6 @6:8\n"},
		{"decorated and async", "@dec\nasync def g():\n    pass\n", "def g 0-2 @1:10\n"},
		{"nothing", "import os\nprint(os)\n", ""},
	}
	for _, tt := range tests {
		var b strings.Builder
		outlineString(build(t, tt.code).Outline(), 0, &b)
		if b.String() != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, b.String(), tt.want)
		}
	}
}
