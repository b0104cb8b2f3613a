package server

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/internal/torchsites"
	"github.com/torchlsp/torchlsp/server/session"
)

// The on-demand benchmarks start from an empty cache every iteration, on
// a real local target (Debian's python3; torch 1.13, or the torch 2.11
// tree with TORCHLSP_TORCH211_SITE): the link costs nothing here, so they
// measure what torchlsp itself adds to the first answer and to the
// catch-up behind it.

const benchText = "import torch\nfrom torch import nn\nnn.Linear(4, 4)\nnn.functional.relu\n"

// BenchmarkOnDemandFirstAnswer is a cold engine's first definition of
// nn.Linear: helper start, listing, reads of the import path, parses.
func BenchmarkOnDemandFirstAnswer(b *testing.B) {
	for _, tree := range torchsites.Trees(b) {
		b.Run(tree.Name, func(b *testing.B) {
			var fetched int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				eng := torchEngine(b, tree.Site)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				doc := eng.DidOpen(ctx, "file:///work/od.py", "", 1, benchText)
				b.StartTimer()
				locs, err := eng.Definition(ctx, doc, Position{Line: 2, Column: 3})
				b.StopTimer()
				if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].Path, "torch/nn/modules/linear.py") {
					b.Fatalf("definition = %+v, %v", locs, err)
				}
				fetched += partialBytes(eng.opts.Dirs.Cache)
				cancel()
				b.StartTimer()
			}
			b.ReportMetric(float64(fetched)/float64(b.N)/1e3, "kB-fetched/op")
		})
	}
}

// BenchmarkBackgroundCatchUp is the time from the first on-demand answer
// to a complete mirror with its whole index, and the latency of hovers
// asked meanwhile.
func BenchmarkBackgroundCatchUp(b *testing.B) {
	for _, tree := range torchsites.Trees(b) {
		b.Run(tree.Name, func(b *testing.B) {
			var lat []time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				eng := torchEngine(b, tree.Site)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				doc := eng.DidOpen(ctx, "file:///work/od.py", "", 1, benchText)
				if _, err := eng.Definition(ctx, doc, Position{Line: 2, Column: 3}); err != nil {
					b.Fatal(err)
				}
				s, err := eng.session("")
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				// Hovers run while the mirror streams, then while the
				// whole index builds, one a millisecond at most.
				hoverUntil := func(done <-chan struct{}) {
					pace := time.NewTicker(time.Millisecond)
					defer pace.Stop()
					for {
						select {
						case <-done:
							return
						default:
						}
						t0 := time.Now()
						if h, err := eng.Hover(ctx, doc, Position{Line: 2, Column: 3}); err != nil || h == nil {
							b.Fatalf("hover during catch-up: %+v %v", h, err)
						}
						lat = append(lat, time.Since(t0))
						select {
						case <-done:
							return
						case <-pace.C:
						}
					}
				}
				mirrored := make(chan struct{})
				var (
					ps     *session.Package
					mirErr error
				)
				go func() { defer close(mirrored); ps, mirErr = s.Package(ctx, "torch") }()
				hoverUntil(mirrored)
				if mirErr != nil {
					b.Fatal(mirErr)
				}
				built := make(chan struct{})
				var buildErr error
				go func() { defer close(built); buildErr = ps.Index().Build(ctx) }()
				hoverUntil(built)
				if buildErr != nil {
					b.Fatal(buildErr)
				}
				b.StopTimer()
				cancel()
				b.StartTimer()
			}
			if len(lat) > 0 {
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "hover-p99-µs")
				b.ReportMetric(float64(len(lat))/float64(b.N), "hovers/op")
			}
		})
	}
}

func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// partialBytes sums the files of the on-demand trees under a cache: the
// versions' directories without a manifest (whose mirror is not
// complete yet).
func partialBytes(cache string) int64 {
	var n int64
	_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() != "site" {
			return nil
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "manifest.json")); err != nil {
			n += treeBytes(p)
		}
		return filepath.SkipDir
	})
	return n
}
