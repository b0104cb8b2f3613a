package main

import (
	"context"
	"path/filepath"
	"testing"
)

// The growth phases run on the fixture torch: the index phase builds,
// saves, reopens from its cache and resolves; the gates phase finds the
// fixture's config flags.
func TestGrowthPhases(t *testing.T) {
	site, err := filepath.Abs("../../testdata/site")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ix, err := growthPhase(ctx, "index", site, "torch.nn.Linear")
	if err != nil {
		t.Fatalf("index phase: %v", err)
	}
	if ix.Files == 0 || ix.CacheMB <= 0 || ix.HeapMB <= 0 || ix.PeakRSSMB <= 0 {
		t.Errorf("index phase measured nothing: %+v", ix)
	}
	if _, err := growthPhase(ctx, "index", site, "torch.no_such_name"); err == nil {
		t.Error("a probe that does not resolve was not reported")
	}
	gt, err := growthPhase(ctx, "gates", site, "")
	if err != nil {
		t.Fatalf("gates phase: %v", err)
	}
	if gt.Flags == 0 || gt.PeakRSSMB <= 0 {
		t.Errorf("gates phase found no flags in the fixture: %+v", gt)
	}
	if _, err := growthPhase(ctx, "nope", site, ""); err == nil {
		t.Error("an unknown phase was accepted")
	}
}
