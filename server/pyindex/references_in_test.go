package pyindex

import (
	"fmt"
	"slices"
	"testing"
)

// TestReferencesIn: the places of one source that name a definition of
// the index, through an import alias, a rebinding the package makes
// (named by the cursor) and the module's own name for it; a file of the
// index holds its declaration too; a name that shadows it is none of
// them.
func TestReferencesIn(t *testing.T) {
	t.Parallel()
	ix := openXref(t)
	def := definitionAtPlace(t, ix, place{"xr/core.py", "def get_obj(", "get_obj"}).Symbol
	core, _ := navSource(t, ix, "xr/core.py")
	shadow, _ := navSource(t, ix, "xr/shadow.py")
	tests := []struct {
		name  string
		src   Source
		names []string // the cursor's spelling
		want  []string // LINE:COL, 1-based
	}{
		{"import alias", parseSource(t, "/work/user/train.py", "", "from xr import get_obj as g\nimport xr.core\n\ng(1)\nxr.core.get_obj(2)\n"), nil,
			[]string{"1:16", "1:27", "4:1", "5:9"}},
		{"rebinding named by the cursor", parseSource(t, "/work/user/fetch.py", "", "from xr.core import fetch, get_obj\nfetch(1)\nget_obj(2)\n"), []string{"fetch"},
			[]string{"1:21", "1:28", "2:1", "3:1"}},
		{"rebinding, the definition's name alone", parseSource(t, "/work/user/fetch.py", "", "from xr.core import fetch, get_obj\nfetch(1)\nget_obj(2)\n"), nil,
			[]string{"1:28", "3:1"}},
		{"the index's own file", core, nil, []string{"4:5", "9:12", "14:20", "23:9"}},
		{"a shadowing definition", shadow, []string{"get_obj"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, r := range ix.ReferencesIn(def, tt.src, tt.names...) {
				if r.Path != tt.src.Path {
					t.Errorf("a place in %s, not the source's %s", r.Path, tt.src.Path)
				}
				got = append(got, fmt.Sprintf("%d:%d", r.Span.Start.Line+1, r.Span.Start.Col+1))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("places %q, want %q", got, tt.want)
			}
		})
	}
}
