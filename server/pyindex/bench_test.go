package pyindex

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func BenchmarkBuildDebianTorch(b *testing.B) {
	requireDebianTorch(b)
	benchBuild(b, debianSite)
}

// BenchmarkBuildTorch211 builds the index of torch 2.11's sources; it needs
// TORCHLSP_TORCH211_SITE (a site dir holding torch/).
func BenchmarkBuildTorch211(b *testing.B) {
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	if site == "" {
		b.Skip("TORCHLSP_TORCH211_SITE not set")
	}
	// Open walks the directory itself, not a link to it.
	real, err := filepath.EvalSymlinks(site)
	if err != nil {
		b.Skipf("TORCHLSP_TORCH211_SITE: %v", err)
	}
	if _, err := os.Stat(filepath.Join(real, "torch", "__init__.py")); err != nil {
		b.Skipf("no torch under %s: %v", site, err)
	}
	benchBuild(b, real)
}

func benchBuild(b *testing.B, site string) {
	b.ReportAllocs()
	var heap uint64
	for b.Loop() {
		ix, err := Open(site, "", WithPackages("torch"))
		if err != nil {
			b.Fatal(err)
		}
		if err := ix.Build(context.Background()); err != nil {
			b.Fatal(err)
		}
		if ix.Stats().Parsed == 0 {
			b.Fatalf("nothing parsed under %s", site)
		}
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapAlloc
		runtime.KeepAlive(ix)
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(heap)/(1<<20), "heapMB")
}

func BenchmarkOpenFromCache(b *testing.B) {
	requireDebianTorch(b)
	cache := filepath.Join(b.TempDir(), "torch.idx")
	ix, err := Open(debianSite, cache, WithPackages("torch"))
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Build(context.Background()); err != nil {
		b.Fatal(err)
	}
	ix.Close()
	b.ReportAllocs()
	for b.Loop() {
		ix, err := Open(debianSite, cache, WithPackages("torch"))
		if err != nil {
			b.Fatal(err)
		}
		if !ix.Stats().FromCache {
			b.Fatal("cache not used")
		}
		ix.Close()
	}
}

func BenchmarkResolveWarm(b *testing.B) {
	requireDebianTorch(b)
	ix, err := Open(debianSite, "", WithPackages("torch"))
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	names := append([]string{"torch.add", "torch.Tensor.dim", "torch.nn.Linear.to"}, debianNames...)
	for _, q := range names {
		if _, err := ix.Resolve(q); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, q := range names {
			if _, err := ix.Resolve(q); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(names)), "names/op")
}

// BenchmarkParseFile parses and extracts one large real file.
func BenchmarkParseFile(b *testing.B) {
	requireDebianTorch(b)
	rel := "torch/nn/functional.py"
	info, err := os.Stat(filepath.Join(debianSite, rel))
	if err != nil {
		b.Skip(err)
	}
	ix, err := Open(debianSite, "", WithPackages("torch"))
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	f := &fileState{rel: rel, pkg: "torch.nn"}
	b.SetBytes(info.Size())
	b.ReportAllocs()
	for b.Loop() {
		if fd := ix.parse(f, nil); len(fd.bindings) == 0 {
			b.Fatal("nothing extracted")
		}
	}
}
