package wsmodel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/pybuf"
)

// genWorkspace writes a workspace of n modules in packages of 20: each
// imports two modules before it, defines a class and three functions
// that call into them, and every tenth compiles a model with CUDA graphs
// that a thread in the last module of its package reaches through a
// loader in another module.
func genWorkspace(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	for i := 0; i < n; i++ {
		pkg := fmt.Sprintf("pkg%d", i/20)
		if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
			tb.Fatal(err)
		}
		if i%20 == 0 {
			os.WriteFile(filepath.Join(dir, pkg, "__init__.py"), nil, 0o644)
		}
		src := "import threading\nimport torch\nfrom torch import nn\n"
		if i > 1 {
			src += fmt.Sprintf("from pkg%d import m%d\nfrom pkg%d.m%d import helper%d\n", (i-1)/20, i-1, (i-2)/20, i-2, i-2)
		}
		src += fmt.Sprintf(`

class Model%[1]d(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x)


def helper%[1]d(x):
    y = x + %[1]d
    return y * 2


def build%[1]d():
    return Model%[1]d()


def step%[1]d(x):
    m = build%[1]d()
    return helper%[1]d(m(x))
`, i)
		if i%10 == 0 {
			src += fmt.Sprintf("\n\ndef load%[1]d():\n    return torch.compile(Model%[1]d(), mode=\"reduce-overhead\")\n", i)
		}
		if i%10 == 9 {
			src += fmt.Sprintf("\n\nfrom pkg%[1]d.m%[2]d import load%[2]d\n\nFAST = load%[2]d()\n\n\ndef serve(x):\n    return FAST(x)\n\n\ndef start(x):\n    threading.Thread(target=serve, args=(x,)).start()\n", (i-9)/20, i-9)
		}
		if err := os.WriteFile(filepath.Join(dir, pkg, fmt.Sprintf("m%d.py", i)), []byte(src), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// peakHeap samples the heap in use while f runs.
func peakHeap(f func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}

// A cold build of a generated 1,000-module workspace: walk, read, parse,
// facts, and the verdicts of every path (100 of them cross files).
//
//	go test -run '^$' -bench BenchmarkColdBuild -benchtime 3x ./server/wsmodel/
func BenchmarkColdBuild(b *testing.B) {
	cat := fixtureCatalog(b)
	dir := genWorkspace(b, 1000)
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
		var m *Model
		var st Stats
		peak := peakHeap(func() {
			var err error
			m, st, err = testIndexer(dir, cat).Build(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			m.Verdicts()
		})
		if st.Files != 1050 {
			b.Fatalf("%d files indexed", st.Files)
		}
		if n := len(m.Verdicts().Findings); n != 100 {
			b.Fatalf("%d files with calls flagged, want 100", n)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}
}

// An edit of one module re-analysed: its parse and facts, the model's new
// version, the verdicts, and the checks of the edited file and of the
// file whose diagnostic the edit changes (the loader's mode flips, so the
// serving module's TL001 comes and goes). Reports p50 and p95.
//
//	go test -run '^$' -bench BenchmarkEdit -benchtime 200x ./server/wsmodel/
func BenchmarkEdit(b *testing.B) {
	cat := fixtureCatalog(b)
	dir := genWorkspace(b, 1000)
	ix := testIndexer(dir, cat)
	m, _, err := ix.Build(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	m.Verdicts()
	loader := filepath.Join(dir, "pkg20", "m400.py")
	server := filepath.Join(dir, "pkg20", "m409.py")
	orig, err := os.ReadFile(loader)
	if err != nil {
		b.Fatal(err)
	}
	serverSrc, err := os.ReadFile(server)
	if err != nil {
		b.Fatal(err)
	}
	off := []byte(replaceOnce(string(orig), `mode="reduce-overhead"`, `mode="default"`))
	var times []time.Duration
	b.ResetTimer()
	i := 0
	for b.Loop() {
		src := orig
		if i%2 == 0 {
			src = off
		}
		i++
		start := time.Now()
		buf := pybuf.Parse(src)
		m = m.With(ix.FileOf(loader, buf))
		v := m.Verdicts()
		diagnose.Check(buf, cat, diagnose.Options{SiteDir: fixtureSite, External: v.External[loader]})
		diagnose.Check(pybuf.Parse(serverSrc), cat, diagnose.Options{SiteDir: fixtureSite, External: v.External[server]})
		got := len(v.Findings[server]) > 0
		times = append(times, time.Since(start))
		if want := i%2 == 0; got != want {
			b.Fatalf("edit %d: server flagged %v, want %v", i, got, want)
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

// A build of the same 1,000-module workspace with every file's facts in
// the cache: what a restart of the editor costs.
//
//	go test -run '^$' -bench BenchmarkWarmBuild -benchtime 3x ./server/wsmodel/
func BenchmarkWarmBuild(b *testing.B) {
	cat := fixtureCatalog(b)
	dir := genWorkspace(b, 1000)
	ix := testIndexer(dir, cat)
	ix.CacheFile, ix.CacheKey = filepath.Join(b.TempDir(), "ws.gob"), "bench"
	if _, _, err := ix.Build(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
		var st Stats
		peak := peakHeap(func() {
			m, s, err := ix.Build(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			m.Verdicts()
			st = s
		})
		if st.Cached != 1050 {
			b.Fatalf("%d of %d files from the cache", st.Cached, st.Files)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}
}
