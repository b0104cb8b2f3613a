package source

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

func TestSnapshotsAreImmutableVersions(t *testing.T) {
	t.Parallel()
	st := NewStore(0, nil)
	const u = "file:///w/a.py"
	v1, err := st.Open(u, 1, "import torch\n")
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
	st := NewStore(0, func(src []byte) *pybuf.Buffer {
		mu.Lock()
		count++
		mu.Unlock()
		return pybuf.Parse(src)
	})
	doc, _ := st.Open("untitled:1", 1, "import torch\n")
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
	doc, err := st.Open("file:///w/big.py", 1, big)
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
