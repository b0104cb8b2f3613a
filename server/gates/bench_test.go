package gates

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/syntax"
	"github.com/torchlsp/torchlsp/server/syntax/syntaxtest"
)

func benchScan(b *testing.B, site string, opts Options) {
	if _, err := os.Stat(filepath.Join(site, "torch")); err != nil {
		b.Skipf("no torch under %s", site)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Scan(context.Background(), site, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanFixture(b *testing.B) { benchScan(b, fixtureSite, Options{}) }

// Debian's torch 1.13 has no config modules: this measures the file walk
// and the install_config_module pre-check over 1,141 files.
func BenchmarkScanDebian(b *testing.B) { benchScan(b, debianSite, Options{}) }

// BenchmarkScanTorch211 needs TORCHLSP_TORCH211_SITE (a copy of torch 2.11's
// site dir, 2,141 files).
func BenchmarkScanTorch211(b *testing.B) {
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	if site == "" {
		b.Skip("TORCHLSP_TORCH211_SITE not set")
	}
	benchScan(b, site, Options{})
}

func BenchmarkScanTorch211NoPrefilter(b *testing.B) {
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	if site == "" {
		b.Skip("TORCHLSP_TORCH211_SITE not set")
	}
	benchScan(b, site, Options{NoPrefilter: true})
}

func BenchmarkOpenCached(b *testing.B) {
	cacheFile := filepath.Join(b.TempDir(), "gates.cache")
	site := fixtureSite
	if s := os.Getenv("TORCHLSP_TORCH211_SITE"); s != "" {
		site = s
	}
	if _, err := Open(context.Background(), site, cacheFile, Options{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Open(context.Background(), site, cacheFile, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTopLevelPieces(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(fixtureSite, "torch", "_inductor", "compile_fx.py"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		topLevelPieces(src)
	}
}

func BenchmarkFlagLookup(b *testing.B) {
	cat := scanFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		cat.Flag("torch._inductor.config.triton.cudagraph_trees")
		cat.Sites("triton.cudagraph_trees")
	}
}

// quadraticConfigSource is a module whose one statement naming config
// holds about size bytes of a text on which tree-sitter is quadratic.
func quadraticConfigSource(shape syntaxtest.Shape, size int) []byte {
	const head = "from torch._inductor import config\nconfig "
	return append([]byte(head), shape.Gen(size-len(head))...)
}

// BenchmarkScanSitesQuadratic scans, piece by piece, sources whose config
// statement holds a text on which tree-sitter is quadratic, at two sizes
// up to maxFuzzSource: the scanner parses it once and the parse stops at
// syntax.CPULimit, so a scan's CPU time (cpu-ms/op) stays near that limit
// (limit-ms) and grows with the size, not its square.
func BenchmarkScanSitesQuadratic(b *testing.B) {
	ix := fuzzIndex()
	p, err := syntax.NewParser()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for _, shape := range syntaxtest.Quadratic {
		for _, size := range []int{maxFuzzSource / 4, maxFuzzSource} {
			src := quadraticConfigSource(shape, size)
			b.Run(fmt.Sprintf("%s/%dKB", strings.ReplaceAll(shape.Name, " ", "_"), size>>10), func(b *testing.B) {
				start := syntaxtest.CPUTime()
				for b.Loop() {
					scanSites(p, ix, "torch/_inductor/quadratic.py", src, true)
				}
				b.ReportMetric(float64((syntaxtest.CPUTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(syntax.CPULimit(len(src)).Microseconds())/1000, "limit-ms")
			})
		}
	}
}
