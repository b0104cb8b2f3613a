package session

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/gates"
)

// A read-only session answers from the mirrors a target left in the cache
// (pinned or looked up), and for anything else has no answer, reaching
// no target.
func TestReadOnlySession(t *testing.T) {
	t.Parallel()
	site, err := filepath.Abs(filepath.Join("..", "..", "testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	s := testSession(t, site)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		t.Fatal(err)
	}
	m := ps.Mirror()
	place, ok := remote.PlaceInCache(s.opts.CacheDir, m.SiteDir)
	if !ok {
		t.Fatalf("the mirror %s is not in the cache %s", m.Root, s.opts.CacheDir)
	}

	for _, pin := range []bool{false, true} {
		ro := NewReadOnly(quietEnv{}, s.opts, remote.Spec{Name: m.Manifest.Target}, place.TargetDir)
		t.Cleanup(func() { _ = ro.Close() })
		if !ro.ReadOnly() || s.ReadOnly() {
			t.Fatal("ReadOnly is wrong")
		}
		if pin {
			if err := ro.Pin(m); err != nil {
				t.Fatal(err)
			}
		}
		d, err := ro.Resolve(ctx, "torch.nn.Linear", false)
		if err != nil || d == nil || d.Package.Mirror().Root != m.Root || !strings.HasSuffix(d.LocalPath, "torch/nn/modules/linear.py") {
			t.Fatalf("pinned %v: Resolve(torch.nn.Linear) = %+v, %v", pin, d, err)
		}
		// What only the target's interpreter could say has no answer.
		if d, err := ro.Resolve(ctx, "torch.nn.NotAName", false); err != nil || d != nil {
			t.Errorf("pinned %v: Resolve of a name the index lacks = %+v, %v; want none", pin, d, err)
		}
		// A package with no mirror in the cache is not the session's.
		if d, err := ro.Resolve(ctx, "numpy.zeros", false); err != nil || d != nil {
			t.Errorf("pinned %v: Resolve of a package with no mirror = %+v, %v; want none", pin, d, err)
		}
		if _, _, err := ro.FlagValue(ctx, &gates.Flag{Module: "torch._inductor.config", Key: "max_autotune"}, time.Second); err == nil || !strings.Contains(err.Error(), "not configured here") {
			t.Errorf("pinned %v: FlagValue = %v, want a refusal", pin, err)
		}
	}
}
