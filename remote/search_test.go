package remote

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// searchSite writes a package, searchpkg, whose files name words in each
// way search_files must tell apart, and returns its spec.
func searchSite(t *testing.T) Spec {
	t.Helper()
	spec := fixtureSpec(t)
	site := t.TempDir()
	pkg := filepath.Join(site, "searchpkg")
	outside := filepath.Join(t.TempDir(), "outside.py")
	files := map[string]string{
		"__init__.py":       "from .calls import target\n",
		"calls.py":          "def target():\n    return 1\n",
		"uses.py":           "from searchpkg.calls import target as t\nt()\n",
		"longer.py":         "target_two = 1\nmy_target = 2\ntargets = 3\n",
		"comment.py":        "# calls target() in prose\n",
		"unicode.py":        "étarget = 1\n", // a non-ASCII neighbour is a boundary
		"sub/__init__.py":   "",
		"sub/deep.pyi":      "def other() -> None: ...\n",
		"sub/notsource.txt": "target\n",
		"__pycache__/x.py":  "target\n",
	}
	for rel, text := range files {
		p := filepath.Join(pkg, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("target = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link to a file outside the package that names the word: not read.
	if err := os.Symlink(outside, filepath.Join(pkg, "linked.py")); err != nil {
		t.Fatal(err)
	}
	// A file over the helper's read limit is listed as a match, unread.
	big := strings.Repeat("x = 1\n", (2<<20)/6+1)
	if err := os.WriteFile(filepath.Join(pkg, "big.py"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.Env["PYTHONPATH"] = site
	return spec
}

func TestSearchFiles(t *testing.T) {
	t.Parallel()
	c := newTestClientWith(t, searchSite(t))
	tests := []struct {
		words []string
		want  []string
	}{
		{[]string{"target"}, []string{"searchpkg/__init__.py", "searchpkg/big.py", "searchpkg/calls.py", "searchpkg/comment.py", "searchpkg/unicode.py", "searchpkg/uses.py"}},
		{[]string{"other"}, []string{"searchpkg/big.py", "searchpkg/sub/deep.pyi"}},
		{[]string{"target_two", "my_target"}, []string{"searchpkg/big.py", "searchpkg/longer.py"}},
		{[]string{"arget"}, []string{"searchpkg/big.py"}},
		{[]string{"a.b*("}, []string{"searchpkg/big.py"}}, // taken as text, not as a pattern
	}
	for _, tt := range tests {
		got, err := c.SearchFiles(testContext(t), "searchpkg", SearchQuery{Words: tt.words})
		if err != nil {
			t.Fatalf("%v: %v", tt.words, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%v: %v, want %v", tt.words, got, tt.want)
		}
	}
	for _, words := range [][]string{nil, make([]string, MaxSearchWords+1), {""}, {strings.Repeat("a", MaxSearchWord+1)}, {"a\x00b"}} {
		if _, err := c.SearchFiles(testContext(t), "searchpkg", SearchQuery{Words: words}); err == nil {
			t.Errorf("%d words (%.20q…) were sent", len(words), words)
		}
	}
	if _, err := c.SearchFiles(testContext(t), "no_such_package", SearchQuery{Words: []string{"target"}}); err == nil {
		t.Error("a package that is not there was searched")
	}
	if _, err := c.SearchFiles(testContext(t), "searchpkg", SearchQuery{Words: []string{"a"}, Subsequence: "a"}); err == nil {
		t.Error("words and a subsequence were sent together")
	}
	// A subsequence: a word holding its bytes in order, ASCII case folded.
	for _, tt := range []struct {
		lower string
		want  []string
	}{
		{"tgt", []string{"searchpkg/__init__.py", "searchpkg/big.py", "searchpkg/calls.py", "searchpkg/comment.py", "searchpkg/longer.py", "searchpkg/unicode.py", "searchpkg/uses.py"}},
		{"mytarget", []string{"searchpkg/big.py", "searchpkg/longer.py"}}, // my_target
		{"othr", []string{"searchpkg/big.py", "searchpkg/sub/deep.pyi"}},  // other: case and gaps
		{"élt", []string{"searchpkg/big.py"}},                             // none: étarget has no l
		{"étgt", []string{"searchpkg/big.py", "searchpkg/unicode.py"}},
		{"t.g", []string{"searchpkg/big.py"}}, // a dot is no word byte
	} {
		got, err := c.SearchFiles(testContext(t), "searchpkg", SearchQuery{Subsequence: tt.lower})
		if err != nil {
			t.Fatalf("%q: %v", tt.lower, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("subsequence %q: %v, want %v", tt.lower, got, tt.want)
		}
	}
}

// An on-demand tree learns from the target which files name a word, and
// reads them ahead in one request: with the helper gone after, they are
// still read; a search naming a file its listing lacks is refused.
func TestOnDemandTreeSearchAndPrefetch(t *testing.T) {
	t.Parallel()
	spec := searchSite(t)
	target := NewLocal(spec)
	c := NewClient(target, spec)
	t.Cleanup(func() { c.Close(); target.Close() })
	ctx := testContext(t)
	listing, err := c.ListFiles(ctx, "searchpkg")
	if err != nil {
		t.Fatal(err)
	}
	info := PackageInfo{Name: "searchpkg", Version: "1", Site: listing.Site, Member: listing.Member, Location: filepath.Join(listing.Site, listing.Member), IsPackage: true}
	open := func(l FileListing) *OnDemandTree {
		tree, err := OpenOnDemand(t.TempDir(), OnDemandSource{Client: c, Context: ctx, ReadTimeout: time.Minute, Spec: spec, Info: info, Listing: l})
		if err != nil {
			t.Fatal(err)
		}
		return tree
	}
	tree := open(listing)
	got, err := tree.Mentioning(ctx, []string{"target"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"searchpkg/__init__.py", "searchpkg/big.py", "searchpkg/calls.py", "searchpkg/comment.py", "searchpkg/unicode.py", "searchpkg/uses.py"}
	if !slices.Equal(got, want) {
		t.Fatalf("Mentioning = %v, want %v", got, want)
	}
	// More words than one request takes go in several.
	many := append(slices.Repeat([]string{"nothing_here"}, MaxSearchWords), "other")
	if got, err := tree.Mentioning(ctx, many); err != nil || !slices.Contains(got, "searchpkg/sub/deep.pyi") {
		t.Errorf("Mentioning(%d words) = %v, %v", len(many), got, err)
	}
	tree.Prefetch(ctx, got)
	tree.Prefetch(ctx, want)
	c.Close()
	for _, rel := range want {
		if rel == "searchpkg/big.py" {
			continue // over MaxReadBytes: left for Read, which the helper's limit refuses
		}
		if _, err := tree.Read(rel); err != nil {
			t.Errorf("%s was not read ahead: %v", rel, err)
		}
	}

	c2 := newTestClientWith(t, spec)
	short := listing
	short.Files = slices.DeleteFunc(slices.Clone(listing.Files), func(f ListedFile) bool { return f.Path == "searchpkg/calls.py" })
	tree2 := open(short)
	tree2.src.Client = c2
	if _, err := tree2.Mentioning(ctx, []string{"target"}); err == nil || !strings.Contains(err.Error(), "not in the listing") {
		t.Errorf("a search naming an unlisted file: %v", err)
	}
}
