package pybuf

import (
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// AssignedValue follows a name to the one expression it was assigned,
// and refuses whenever the name could hold something else.
func TestAssignedValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		want      string // the value's text; "" for none
	}{
		{"module constant", "MODE = \"reduce-overhead\"\nf(MODE)\n", `"reduce-overhead"`},
		{"annotated", "MODE: str = \"max-autotune\"\nf(MODE)\n", `"max-autotune"`},
		{"chained", "A = B = {\"mode\": 1}\nf(A)\n", `{"mode": 1}`},
		{"pair", "a, b = 1, \"x\"\nf(b)\n", `"x"`},
		{"alias", "m = cfg.mode\nf(m)\n", "cfg.mode"},
		{"read in a function", "MODE = \"x\"\ndef g():\n    return f(MODE)\n", `"x"`},
		{"local constant", "def g():\n    mode = \"x\"\n    return f(mode)\n", `"x"`},
		{"assigned twice", "MODE = \"x\"\nMODE = \"y\"\nf(MODE)\n", ""},
		{"augmented", "MODE = \"x\"\nMODE += \"y\"\nf(MODE)\n", ""},
		{"global write elsewhere", "MODE = \"x\"\ndef g():\n    global MODE\n    MODE = \"y\"\nf(MODE)\n", ""},
		{"parameter", "def g(mode=\"x\"):\n    return f(mode)\n", ""},
		{"loop target", "for mode in [\"x\"]:\n    f(mode)\n", ""},
		{"import", "from m import MODE\nf(MODE)\n", ""},
		{"unbound", "f(MODE)\n", ""},
		{"shadowed locally", "MODE = \"x\"\ndef g(MODE):\n    return f(MODE)\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := Parse([]byte(tc.src))
			tr := b.Tree()
			// The argument of the last call f(...).
			arg := int32(-1)
			for i := range tr.Len() {
				n := int32(i)
				if tr.Kind(n) == syntax.KindCall && tr.Text(tr.Child(n, syntax.FieldFunction)) == "f" {
					arg = tr.CodeChildren(tr.Child(n, syntax.FieldArguments))[0]
				}
			}
			if arg < 0 {
				t.Fatal("no call of f")
			}
			got := ""
			if v := b.AssignedValue(arg); v >= 0 {
				got = strings.TrimSpace(tr.Text(v))
			}
			if got != tc.want {
				t.Errorf("AssignedValue = %q, want %q", got, tc.want)
			}
		})
	}
}
