package source

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

func TestSnapshotsAreImmutableVersions(t *testing.T) {
	t.Parallel()
	st := NewStore(0, nil)
	const u = "file:///w/a.py"
	v1, err := st.Open(u, "", 1, "import torch\n")
	if err != nil {
		t.Fatal(err)
	}
	buf1 := v1.Buffer()
	v2, err := st.Change(u, 2, []Change{{Range: &UTF16Range{Start: UTF16{Line: 1}, End: UTF16{Line: 1}}, Text: "x = torch.nn\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if v1.Text() != "import torch\n" || v1.Version() != 1 || v1.Buffer() != buf1 {
		t.Errorf("version 1 changed: %q v%d", v1.Text(), v1.Version())
	}
	if v2.Text() != "import torch\nx = torch.nn\n" || v2.Version() != 2 {
		t.Errorf("version 2 = %q v%d", v2.Text(), v2.Version())
	}
	if st.Get(u) != v2 || st.ByPath("/w/a.py") != v2 || st.IsCurrent(v1) || !st.IsCurrent(v2) {
		t.Error("the store does not hold version 2 as the latest")
	}
	if _, err := st.Change(u, 3, []Change{{Range: &UTF16Range{Start: UTF16{Line: 9}, End: UTF16{Line: 9}}, Text: "x"}}); err == nil {
		t.Error("an edit past the end applied")
	}
	if st.Get(u) != v2 {
		t.Error("a failed edit replaced the document")
	}
	if closed := st.Close(u); closed != v2 || st.Get(u) != nil || st.ByPath("/w/a.py") != nil {
		t.Error("close left the document behind")
	}
	if _, err := st.Change(u, 4, nil); err == nil {
		t.Error("a change of a closed document applied")
	}
}

// Every analysis runs once per snapshot, however many requests ask at once.
func TestSnapshotParsesOnce(t *testing.T) {
	t.Parallel()
	var parses sync.Map
	count := 0
	var mu sync.Mutex
	st := NewStore(0, ParseWith(func(src []byte) *pybuf.Buffer {
		mu.Lock()
		count++
		mu.Unlock()
		return pybuf.Parse(src)
	}))
	doc, _ := st.Open("untitled:1", "", 1, "import torch\n")
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parses.Store(doc.Buffer(), true)
			doc.Memo("k", func() any { return doc.Buffer() })
		}()
	}
	wg.Wait()
	n := 0
	parses.Range(func(any, any) bool { n++; return true })
	if count != 1 || n != 1 {
		t.Errorf("parsed %d times into %d buffers, want once", count, n)
	}
}

// A document over the limit is kept, so later edits still apply, but it is
// never parsed: a 50 MB buffer costs nothing beyond its text.
func TestTooLargeIsNotAnalysed(t *testing.T) {
	t.Parallel()
	st := NewStore(1<<20, nil)
	big := strings.Repeat("x = a.b().c().d()\n", (2<<20)/18)
	doc, err := st.Open("file:///w/big.py", "", 1, big)
	if !errors.Is(err, ErrTooLarge) || doc == nil || !doc.TooLarge() {
		t.Fatalf("Open = %v, %v; want a too-large snapshot", doc, err)
	}
	if imps := doc.Buffer().Imports(); len(imps) != 0 {
		t.Errorf("a too-large document was analysed: %d imports", len(imps))
	}
	if refs := doc.FlagRefs(nil); refs != nil {
		t.Errorf("flag refs of a too-large document: %v", refs)
	}
	small, err := st.Change("file:///w/big.py", 2, []Change{{Text: "import torch\n"}})
	if err != nil || small.TooLarge() || len(small.Buffer().Imports()) != 1 {
		t.Errorf("after shrinking: %v, too large %v", err, small.TooLarge())
	}
}

// Only Python is parsed: the client's languageId decides, and where it
// names none (the command line), the file's extension.
func TestIsPython(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		uri, language string
		want          bool
	}{
		{"file:///w/train.py", "python", true},
		{"file:///w/train.py", "", true},
		{"file:///w/train.py", "jinja", true}, // a .py file is Python whatever the client calls it
		{"file:///w/types.pyi", "", true},
		{"file:///w/train", "", true},            // a script, from the command line
		{"file:///w/train", "python", true},      // a script the editor recognised
		{"file:///w/stdout", "plaintext", false}, // a log with no extension
		{"file:///w/train.log", "log", false},
		{"file:///w/train.log", "", false},
		{"file:///w/train.log", "python", true}, // the user set the language by hand
		{"file:///w/notes.txt", "plaintext", false},
		{"untitled:Untitled-1", "python", true},
		{"untitled:Untitled-1", "plaintext", false},
		{"untitled:Untitled-1", "", true},
	} {
		doc, _ := NewStore(0, nil).Open(tt.uri, tt.language, 1, "import torch\n")
		if got := doc.IsPython(); got != tt.want {
			t.Errorf("%s as %q: IsPython %v, want %v", tt.uri, tt.language, got, tt.want)
		}
		if imports := len(doc.Buffer().Imports()); (imports == 1) != tt.want {
			t.Errorf("%s as %q: %d imports parsed", tt.uri, tt.language, imports)
		}
	}
}

// A document that is not Python is never handed to the parser, and a
// change keeps the language the document was opened with.
func TestNotPythonIsNeverParsed(t *testing.T) {
	t.Parallel()
	var parsed atomic.Int64
	st := NewStore(0, ParseWith(func(src []byte) *pybuf.Buffer {
		parsed.Add(int64(len(src)))
		return pybuf.Parse(src)
	}))
	u := "file:///w/run.log"
	doc, _ := st.Open(u, "log", 1, strings.Repeat("  File \"/t/torch/x.py\", line 3, in f\n", 1000))
	doc.Buffer()
	next, err := st.Change(u, 2, []Change{{Text: "import torch\n"}})
	if err != nil {
		t.Fatal(err)
	}
	next.Buffer()
	if next.Language() != "log" || parsed.Load() != 0 {
		t.Errorf("language %q after a change, %d bytes parsed, want none", next.Language(), parsed.Load())
	}
}

// A parse stopped by its context is not kept: the next caller parses the
// version again, to the end.
func TestStoppedParseIsNotKept(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	st := NewStore(0, func(ctx context.Context, src []byte) (*pybuf.Buffer, error) {
		calls.Add(1)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return pybuf.Parse(src), nil
	})
	doc, _ := st.Open("file:///w/a.py", "python", 1, "import torch\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b, err := doc.BufferContext(ctx); b != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled parse: %v, %v", b, err)
	}
	if got := len(doc.Buffer().Imports()); got != 1 || calls.Load() != 2 {
		t.Errorf("after a stopped parse: %d imports, %d parses", got, calls.Load())
	}
	doc.Buffer()
	if calls.Load() != 2 {
		t.Errorf("a finished parse ran again: %d parses", calls.Load())
	}
}
