package pyindex

import (
	"slices"
	"testing"
)

// TestIdentHashesOwnTheirMemory parses files one after another through
// the scratch buffer they share: each keeps exactly its distinct
// identifiers, sorted, whatever the files parsed after it hold.
func TestIdentHashesOwnTheirMemory(t *testing.T) {
	t.Parallel()
	srcs := map[string]string{
		"a.py": "x = y + y\ndef f(x):\n    return g(x, y)\n# comment_name\ns = 'string_name'\n",
		"b.py": "class C(Base):\n    def m(self):\n        return self.m(other, other)\n",
		"c.py": "",
	}
	want := map[string][]string{
		"a.py": {"x", "y", "f", "g", "s"},
		"b.py": {"C", "Base", "m", "self", "other"},
		"c.py": nil,
	}
	ix, err := Open(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ix.read = func(rel string) ([]byte, error) { return []byte(srcs[rel]), nil }
	got := map[string][]uint32{}
	for _, rel := range []string{"a.py", "b.py", "c.py", "a.py"} {
		fd := ix.parse(&fileState{rel: rel}, nil)
		if fd.identsAll {
			t.Fatalf("%s: identsAll set for %d identifiers", rel, len(want[rel]))
		}
		if prev, ok := got[rel]; ok && !slices.Equal(prev, fd.idents) {
			t.Errorf("%s parsed again: %x, first %x", rel, fd.idents, prev)
		}
		got[rel] = fd.idents
	}
	for rel, names := range want {
		var hs []uint32
		for _, n := range names {
			hs = append(hs, identHash(n))
		}
		slices.Sort(hs)
		if !slices.Equal(got[rel], hs) {
			t.Errorf("%s: postings %x, want the hashes of %q: %x", rel, got[rel], names, hs)
		}
	}
}
