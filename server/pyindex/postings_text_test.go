package pyindex

import (
	"context"
	"slices"
	"testing"
)

func TestTextNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src   string
		names []string
		want  bool
	}{
		{"x = get_obj(a)", []string{"get_obj"}, true},
		{"get_obj", []string{"get_obj"}, true},                    // the whole text
		{"x = get_objs(a)", []string{"get_obj"}, false},           // a longer name
		{"x = _get_obj(a)", []string{"get_obj"}, false},           // a longer name on the left
		{"x = my_get_obj + get_obj2", []string{"get_obj"}, false}, // both sides
		{"my_get_obj + get_obj", []string{"get_obj"}, true},       // the second occurrence
		{"x.get_obj", []string{"get_obj"}, true},                  // an attribute
		{"# see get_obj", []string{"get_obj"}, true},              // a comment counts (a superset)
		{"éget_obj", []string{"get_obj"}, true},                   // past ASCII: a boundary, kept
		{"fetch(x)", []string{"get_obj", "fetch"}, true},          // any of the names
		{"", []string{"get_obj"}, false},
	} {
		if got := textNames([]byte(tc.src), tc.names); got != tc.want {
			t.Errorf("textNames(%q, %q) = %v, want %v", tc.src, tc.names, got, tc.want)
		}
	}
}

// The first references query of a cold index (no cache, no Build) gives
// the answer a built index gives, and parses only the files whose text
// names what it looks for and what resolving them reads, not the whole
// package.
func TestColdReferencesParseOnlyWhatTheyNeed(t *testing.T) {
	t.Parallel()
	requireDebianTorch(t)
	const def = "torch._tensor_str._tensor_str"
	refsOf := func(ix *Index) References {
		t.Helper()
		res, err := ix.Resolve(def)
		if err != nil {
			t.Fatal(err)
		}
		refs, err := ix.References(context.Background(), res.Symbol, ReferenceOptions{IncludeDeclaration: true})
		if err != nil {
			t.Fatal(err)
		}
		return refs
	}
	cold, built := coldAndBuilt(t)
	got := refsOf(cold)
	st := cold.Stats()
	want := refsOf(built)
	if len(got.Refs) == 0 || !slices.Equal(got.Refs, want.Refs) {
		t.Errorf("cold references:\n%v\nbuilt index's:\n%v", got.Refs, want.Refs)
	}
	if st.Parsed*10 > st.Files {
		t.Errorf("the cold query parsed %d of %d files: it should read only what names the query", st.Parsed, st.Files)
	}
	t.Logf("cold: %d references, %d of %d files parsed", len(got.Refs), st.Parsed, st.Files)
}

func TestTextMatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src, query string
		want       bool
	}{
		{"def get_obj(x): pass", "get_obj", true},   // exact
		{"class Getter: pass", "get", true},         // a prefix, folded
		{"x = fetch_objects()", "obj", true},        // a substring
		{"def g_e_t(): pass", "get", true},          // a subsequence (fuzzy)
		{"x = a + b", "get_obj", false},             // no word long enough
		{"x = ge + t_obj", "get_obj", false},        // across words: no
		{"x = 1get_obj", "get_obj", false},          // a number, not a name
		{"def naïve(): pass", "naïve", true},        // past ASCII: one word
		{"# get_obj in a comment", "get_obj", true}, // a superset: comments count
		{"", "get", false},
	} {
		if got := textMatches([]byte(tc.src), NewSymbolQuery(tc.query)); got != tc.want {
			t.Errorf("textMatches(%q, %q) = %v, want %v", tc.src, tc.query, got, tc.want)
		}
	}
}

// The first workspace-symbol query of a cold index (no cache, no Build)
// gives the answer a built index gives, and parses only the files whose
// text holds a word the query matches.
func TestColdSymbolsParseOnlyWhatTheyNeed(t *testing.T) {
	t.Parallel()
	requireDebianTorch(t)
	for _, query := range []string{"get_obj", "_tensor_str", "nn.Linear"} {
		symbolsOf := func(ix *Index) []SymbolHit {
			t.Helper()
			hits, err := ix.Symbols(context.Background(), NewSymbolQuery(query), 100)
			if err != nil {
				t.Fatal(err)
			}
			return hits
		}
		cold, built := coldAndBuilt(t)
		got := symbolsOf(cold)
		st := cold.Stats()
		want := symbolsOf(built)
		if len(got) == 0 || !slices.EqualFunc(got, want, func(a, b SymbolHit) bool {
			return a.Rank == b.Rank && a.Symbol.Qualname == b.Symbol.Qualname && a.Symbol.Line == b.Symbol.Line
		}) {
			t.Errorf("%s: cold symbols:\n%v\nbuilt index's:\n%v", query, got, want)
		}
		if st.Parsed*4 > st.Files {
			t.Errorf("%s: the cold query parsed %d of %d files: it should parse only what holds a matching word", query, st.Parsed, st.Files)
		}
		t.Logf("%s: %d symbols, %d of %d files parsed", query, len(got), st.Parsed, st.Files)
	}
}

// coldAndBuilt opens Debian's torch twice: cold (no cache, no Build, as
// on a first start) and built.
func coldAndBuilt(t *testing.T) (cold, built *Index) {
	t.Helper()
	cold, err := Open(debianSite, "", WithPackages("torch"))
	if err != nil {
		t.Fatal(err)
	}
	built, err = Open(debianSite, "", WithPackages("torch"))
	if err != nil {
		t.Fatal(err)
	}
	if err := built.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	return cold, built
}
