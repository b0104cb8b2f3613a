package pyindex

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/syntax"
	"github.com/torchlsp/torchlsp/server/syntax/syntaxtest"
)

// A module parsed a chunk of top-level statements at a time gives the
// index exactly what its whole parse gives (bindings, class members,
// docstrings, __all__, postings), for every file of the fixture site, the
// standard library here and torch 2.11 (TORCHLSP_TORCH211_SITE), chunked
// far finer than a build chunks them.
func TestChunkedExtractionIsTheWhole(t *testing.T) {
	t.Parallel()
	files := syntaxtest.Corpus(fixtureSite)
	p, err := syntax.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	scratch := new([]uint32)
	compared := 0
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil || len(src) > 4<<20 {
			continue
		}
		chunked, clean := extractChunks(p, src, 2048, "pkg", nil, MaxNamesPerFile, maxIdentsPerFile, scratch)
		if chunked == nil || !clean {
			continue
		}
		var whole *fileData
		p.Visit(src, func(t *syntax.Tree) {
			whole = extract(t, "pkg", MaxNamesPerFile)
			whole.idents, whole.identsAll = identHashes(t, maxIdentsPerFile, scratch)
		})
		compared++
		if !reflect.DeepEqual(chunked, whole) {
			t.Errorf("%s: chunked, %d bindings and %d postings; whole, %d and %d", path,
				len(chunked.bindings), len(chunked.idents), len(whole.bindings), len(whole.idents))
		}
	}
	if compared < 20 {
		t.Fatalf("only %d files chunked", compared)
	}
	t.Logf("%d files, %d chunked and compared", len(files), compared)
}

// A chunk with an error is told, so that the file is parsed whole, whose
// error recovery then decides what is indexed; its chunks' data stands in
// only where the whole text is over the parse's limits.
func TestChunkedExtractionTellsErrors(t *testing.T) {
	t.Parallel()
	defs := strings.Repeat("def f():\n    return 1\n", 200)
	p, err := syntax.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	scratch := new([]uint32)
	if fd, clean := extractChunks(p, []byte(defs+"def broken(:\n    pass\n"+defs), 1024, "pkg", nil, MaxNamesPerFile, maxIdentsPerFile, scratch); fd == nil || clean {
		t.Errorf("a text with a syntax error: %v, clean %v", fd, clean)
	}
	if fd, clean := extractChunks(p, []byte(defs+defs), 1024, "pkg", nil, MaxNamesPerFile, maxIdentsPerFile, scratch); fd == nil || !clean || len(fd.bindings) != 400 {
		t.Errorf("a clean text: %v, clean %v", fd, clean)
	}
}
