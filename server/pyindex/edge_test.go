package pyindex

import (
	"errors"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/syntax"
)

const edgeSite = "testdata/edge"

func TestResolveEdgeCases(t *testing.T) {
	ix, err := Open(edgeSite, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	tests := []struct {
		qualname  string
		kind      Kind
		canonical string
		file      string
		pattern   string
		nth       int
	}{
		// __all__ built from a list, +=, .extend and .append
		{"edge.star_user.a", KindVariable, "edge.alls.a", "edge/alls.py", `^(a) = b`, 0},
		{"edge.star_user.b", KindVariable, "edge.alls.b", "edge/alls.py", `^a = (b)`, 0},
		{"edge.star_user.d", KindVariable, "edge.alls.d", "edge/alls.py", `\((d),`, 0},
		{"edge.star_user.e", KindVariable, "edge.alls.e", "edge/alls.py", `, (e)\)`, 0},
		{"edge.star_user.f", KindVariable, "edge.star_user.f", "edge/star_user.py", `^(f) =`, 0},
		// a non-literal __all__ falls back to the public names too
		{"edge.star_user.listed", KindVariable, "edge.dynamic_all.listed", "edge/dynamic_all.py", `^(listed) =`, 0},
		{"edge.star_user.unlisted", KindVariable, "edge.dynamic_all.unlisted", "edge/dynamic_all.py", `^(unlisted) =`, 0},
		// half-broken file: definitions on both sides of the error
		{"edge.broken.before", KindFunction, "edge.broken.before", "edge/broken.py", `^def (before)\(`, 0},
		{"edge.broken.AfterBroken", KindClass, "edge.broken.AfterBroken", "edge/broken.py", `^class (AfterBroken)`, 0},
		{"edge.broken.AfterBroken.method", KindFunction, "edge.broken.AfterBroken.method", "edge/broken.py", `def (method)\(`, 0},
		{"edge.broken.after", KindVariable, "edge.broken.after", "edge/broken.py", `^(after) =`, 0},
		// relative imports
		{"edge.sub.deep.top", KindModule, "edge.sub", "edge/sub/__init__.py", "", 0},
		{"edge.sub.deep.alls", KindModule, "edge.alls", "edge/alls.py", "", 0},
		{"edge.sub.deep.alls_a", KindVariable, "edge.alls.a", "edge/alls.py", `^(a) = b`, 0},
		// bindings inside if/else, try/except, with, for; TYPE_CHECKING loses
		{"edge.sub.deep.deep_name", KindVariable, "edge.sub.deep.deep_name", "edge/sub/deep.py", `^    (deep_name) = "runtime"`, 0},
		{"edge.sub.deep.fast_loads", KindVariable, "edge.sub.deep.fast_loads", "edge/sub/deep.py", `^    (fast_loads) = None`, 0},
		{"edge.sub.deep.with_name", KindVariable, "edge.sub.deep.with_name", "edge/sub/deep.py", `^    (with_name) =`, 0},
		{"edge.sub.deep.loop_name", KindVariable, "edge.sub.deep.loop_name", "edge/sub/deep.py", `^    (loop_name) =`, 0},
		{"edge.sub.deep.deep_name_tc_last", KindVariable, "edge.sub.deep.deep_name_tc_last", "edge/sub/deep.py", `^(deep_name_tc_last):`, 0},
		{"edge.sub.deep.later_stub", KindFunction, "edge.sub.deep.later_stub", "edge/sub/deep.py", `^def (later_stub)\(\) -> str`, 0},
		// star import of a module without __all__: public names only
		{"edge.deep_name", KindVariable, "edge.sub.deep.deep_name", "edge/sub/deep.py", `^    (deep_name) = "runtime"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.qualname, func(t *testing.T) {
			r, err := ix.Resolve(tt.qualname)
			if err != nil {
				t.Fatal(err)
			}
			s := r.Symbol
			if s.Kind != tt.kind || s.Qualname != tt.canonical || s.File != tt.file {
				t.Fatalf("got %s %s in %s, want %s %s in %s", s.Kind, s.Qualname, s.File, tt.kind, tt.canonical, tt.file)
			}
			line, col := 0, 0
			if tt.pattern != "" {
				line, col = findDef(t, edgeSite, tt.file, tt.pattern, tt.nth)
			}
			if s.Line != line || s.Col != col {
				t.Errorf("at %d:%d, want %d:%d", s.Line, s.Col, line, col)
			}
		})
	}

	for _, q := range []string{"edge.star_user._private", "edge.sub.deep.too_far", "edge._f", "edge.loop"} {
		if _, err := ix.Resolve(q); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", q, err)
		}
	}
	if _, err := ix.Resolve("edge.loop"); !strings.Contains(fmtErr(err), "import cycle") {
		t.Errorf("edge.loop: %v, want an import cycle", err)
	}
	if r, err := ix.Resolve("edge.sub.deep.coroutine"); err != nil || r.Symbol.Signature != "async (a, b = (1,)) -> None" {
		t.Errorf("coroutine: %q, %v", r.Symbol.Signature, err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		in, want string
		sig      bool
	}{
		{"(a,\n   b: int = 1,  # note\n)", "(a, b: int = 1)", true},
		{"( self )", "(self)", true},
		{"(x=(1,))", "(x=(1,))", true},
		{"(s='a  #  b', t=\"\"\"x\n  y\"\"\")", "(s='a  #  b', t=\"\"\"x\n  y\"\"\")", true},
		{"[\n  1,\n  2,\n]", "[1, 2,]", false},
		{"foo(a) \\\n  + 1", "foo(a) + 1", false},
		{"{'k': 1,  # c\n 'v': 2}", "{'k': 1, # c 'v': 2}", false},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in, tt.sig); got != tt.want {
			t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDocText(t *testing.T) {
	tests := []struct{ lit, doc, summary string }{
		{`"""One line."""`, "One line.", "One line."},
		{"r'''\n    First\n    para.\n\n    Second — ü.\n    '''", "First\npara.\n\nSecond — ü.", "First para."},
		{`"a" "b"`, "ab", "ab"},
		{`"esc \" quote"`, `esc \" quote`, `esc \" quote`},
		{`"""unterminated`, "unterminated", "unterminated"},
	}
	for _, tt := range tests {
		doc := cleandoc(syntax.LiteralContents([]byte(tt.lit)))
		if doc != tt.doc || summarize(doc) != tt.summary {
			t.Errorf("%s: doc %q summary %q, want %q %q", tt.lit, doc, summarize(doc), tt.doc, tt.summary)
		}
	}
	if got := truncateUTF8("ü€", 3); got != "ü" {
		t.Errorf("truncateUTF8 = %q", got)
	}
}
