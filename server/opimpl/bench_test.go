package opimpl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	// The torchlsp binary links server/gates, whose init points
	// tree-sitter's allocator at libc (instead of Go callbacks per
	// malloc); measure the scan as it runs there.
	_ "github.com/torchlsp/torchlsp/server/gates"
)

// benchSite is TORCHLSP_TORCH211_SITE when set, else Debian's torch 1.13.
func benchSite(b *testing.B) string {
	if s := os.Getenv("TORCHLSP_TORCH211_SITE"); s != "" {
		return s
	}
	return debianSite(b)
}

// BenchmarkScan is a cold scan: list, parse, resolve.
func BenchmarkScan(b *testing.B) {
	site := benchSite(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Scan(context.Background(), site); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenCached is what a restart pays: list and stat the candidate
// files, then decode the cache.
func BenchmarkOpenCached(b *testing.B) {
	site := benchSite(b)
	cache := filepath.Join(b.TempDir(), "opimpl.bin")
	if _, err := Open(context.Background(), site, cache, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Open(context.Background(), site, cache, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForCallable is the per-request lookup: a dozen callables.
func BenchmarkForCallable(b *testing.B) {
	tab, err := Scan(context.Background(), benchSite(b))
	if err != nil {
		b.Fatal(err)
	}
	names := []string{"torch.add", "torch.mul", "torch.randn", "torch.Tensor.view", "torch.nn.functional.softmax",
		"torch.nn.functional.scaled_dot_product_attention", "torch.nn.functional.layer_norm", "torch.matmul", "torch.mm",
		"torch.nn.functional.relu", "torch.nn.functional.gelu", "torch.nn.functional.embedding", "torch.cat"}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range names {
			tab.ForCallable(n)
		}
	}
}
