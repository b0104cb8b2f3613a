package pyindex

import (
	"context"
	"os"
	"testing"
)

func BenchmarkTmpSetPrint(b *testing.B) {
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	def := "torch._tensor_str.set_printoptions"
	ix, err := Open(site, b.TempDir()+"/c.bin", WithPackages("torch"))
	if err != nil {
		b.Fatal(err)
	}
	if os.Getenv("WARM") != "" {
		if err := ix.Build(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	res, err := ix.Resolve(def)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		got, err := ix.References(context.Background(), res.Symbol, ReferenceOptions{IncludeDeclaration: true})
		if err != nil || len(got.Refs) == 0 {
			b.Fatal(err, len(got.Refs))
		}
		b.ReportMetric(float64(got.Files), "files/op")
		b.ReportMetric(float64(len(got.Refs)), "refs/op")
	}
}
