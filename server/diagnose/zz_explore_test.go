package diagnose

import (
	"strings"
	"testing"
	"time"
	"fmt"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

func chainSrc(stmts, depth int) []byte {
	var b strings.Builder
	b.WriteString("import torch\n")
	for i := 0; i < stmts; i++ {
		b.WriteString("x = torch.a")
		for j := 0; j < depth; j++ {
			fmt.Fprintf(&b, ".m%d()", j%10)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

func TestZZExplore(t *testing.T) {
	s := fixture(t)
	for _, c := range [][2]int{{100, 100}, {200, 100}, {1, 2000}, {1, 4000}, {1, 16000}} {
		src := chainSrc(c[0], c[1])
		t0 := time.Now()
		buf := pybuf.Parse(src)
		t1 := time.Now()
		Check(buf, src, s.cat, Options{SiteDir: s.dir})
		t2 := time.Now()
		FlagRefs(buf, src, s.cat)
		t3 := time.Now()
		for i := 0; i < 20; i++ { buf.RefAt(pybuf.Pos{Line: 1, Col: 5+i*5}) }
		t4 := time.Now()
		t.Logf("%v len=%d parse=%v check=%v refs=%v refat20=%v", c, len(src), t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3))
	}
}
