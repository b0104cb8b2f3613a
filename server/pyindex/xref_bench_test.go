package pyindex

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Benchmarks of the reference, call and symbol queries on a built index:
// torch 2.11's sources with TORCHLSP_TORCH211_SITE, else Debian's torch
// 1.13. The query asks for the references of a function named in a
// handful of files (cudagraph_trees.get_obj in 2.11,
// _tensor_str._tensor_str in 1.13), so each op parses those files.

type xrefBench struct {
	ix       *Index
	def      Symbol // a function's definition
	query    string // a workspace-symbol query
	cacheLen int64  // bytes of the persisted index
}

func openXrefBench(b *testing.B) xrefBench {
	b.Helper()
	site, def, query := debianSite, "torch._tensor_str._tensor_str", "tensor_str"
	if s := os.Getenv("TORCHLSP_TORCH211_SITE"); s != "" {
		real, err := filepath.EvalSymlinks(s)
		if err != nil {
			b.Fatal(err)
		}
		site, def, query = real, "torch._inductor.cudagraph_trees.get_obj", "get_obj"
	} else {
		requireDebianTorch(b)
	}
	cache := filepath.Join(b.TempDir(), "index.bin")
	ix, err := Open(site, cache, WithPackages("torch"))
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Build(context.Background()); err != nil {
		b.Fatal(err)
	}
	res, err := ix.Resolve(def)
	if err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(cache)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	return xrefBench{ix: ix, def: res.Symbol, query: query, cacheLen: info.Size()}
}

func BenchmarkReferences(b *testing.B) {
	x := openXrefBench(b)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		refs, err := x.ix.References(context.Background(), x.def, ReferenceOptions{IncludeDeclaration: true})
		if err != nil || len(refs.Refs) == 0 {
			b.Fatal(err, len(refs.Refs))
		}
		n = refs.Files
	}
	b.ReportMetric(float64(n), "files/op")
	b.ReportMetric(float64(x.cacheLen)/(1<<20), "indexMB")
}

func BenchmarkCallers(b *testing.B) {
	x := openXrefBench(b)
	b.ReportAllocs()
	for b.Loop() {
		calls, _, err := x.ix.Callers(context.Background(), x.def, ReferenceOptions{})
		if err != nil || len(calls) == 0 {
			b.Fatal(err, len(calls))
		}
	}
}

func BenchmarkCallees(b *testing.B) {
	x := openXrefBench(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := x.ix.Callees(context.Background(), x.def, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSymbols(b *testing.B) {
	x := openXrefBench(b)
	for _, q := range []string{x.query, "cuda", "Mod"} {
		b.Run(q, func(b *testing.B) {
			sq := NewSymbolQuery(q)
			b.ReportAllocs()
			for b.Loop() {
				hits, err := x.ix.Symbols(context.Background(), sq, 100)
				if err != nil || len(hits) == 0 {
					b.Fatal(err, len(hits))
				}
			}
		})
	}
}

// BenchmarkColdReferences is the first references query of a cold start:
// a new index with no cache and no Build, as a server answers while its
// build has not yet run (each op opens the index anew; the files stay in
// the page cache, as they do once a mirror has been written).
func BenchmarkColdReferences(b *testing.B) {
	site, def := debianSite, "torch._tensor_str._tensor_str"
	if s := os.Getenv("TORCHLSP_TORCH211_SITE"); s != "" {
		site, def = s, "torch._inductor.cudagraph_trees.get_obj"
	} else {
		requireDebianTorch(b)
	}
	b.ReportAllocs()
	var n, refs int
	for b.Loop() {
		ix, err := Open(site, "", WithPackages("torch"))
		if err != nil {
			b.Fatal(err)
		}
		res, err := ix.Resolve(def)
		if err != nil {
			b.Fatal(err)
		}
		got, err := ix.References(context.Background(), res.Symbol, ReferenceOptions{IncludeDeclaration: true})
		if err != nil || len(got.Refs) == 0 {
			b.Fatal(err, len(got.Refs))
		}
		n, refs = got.Files, len(got.Refs)
		ix.Close()
	}
	b.ReportMetric(float64(n), "files/op")
	b.ReportMetric(float64(refs), "refs/op")
}

// BenchmarkColdSymbols is the first workspace-symbol query of a cold
// start: a new index with no cache and no Build.
func BenchmarkColdSymbols(b *testing.B) {
	site, query := debianSite, "tensor_str"
	if s := os.Getenv("TORCHLSP_TORCH211_SITE"); s != "" {
		site, query = s, "get_obj"
	} else {
		requireDebianTorch(b)
	}
	b.ReportAllocs()
	for b.Loop() {
		ix, err := Open(site, "", WithPackages("torch"))
		if err != nil {
			b.Fatal(err)
		}
		hits, err := ix.Symbols(context.Background(), NewSymbolQuery(query), 100)
		if err != nil || len(hits) == 0 {
			b.Fatal(err, len(hits))
		}
		ix.Close()
	}
}
