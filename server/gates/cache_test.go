package gates

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// copyTree copies the fixture site so a test may touch its files.
func copyTree(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

func TestOpenCache(t *testing.T) {
	ctx := context.Background()
	site := copyTree(t, fixtureSite)
	cacheFile := filepath.Join(t.TempDir(), "sub", "gates.cache")

	first, err := Open(ctx, site, cacheFile, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat(cacheFile)
	if err != nil {
		t.Fatalf("cache not written: %v", err)
	}

	// Same tree: served from the cache, which is left alone.
	second, err := Open(ctx, site, cacheFile, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(cacheFile)
	if !st2.ModTime().Equal(st1.ModTime()) {
		t.Error("cache rewritten for an unchanged tree")
	}
	if !reflect.DeepEqual(siteLines(first), siteLines(second)) || !reflect.DeepEqual(first.Modes, second.Modes) {
		t.Error("cached catalog differs from the scanned one")
	}
	if f, ok := second.Flag("triton.cudagraph_trees"); !ok || f.Doc == "" {
		t.Errorf("cached catalog lost flag details: %+v", f)
	}
	if envs := second.FlagForEnv("TORCHINDUCTOR_CUDAGRAPHS"); len(envs) != 1 {
		t.Errorf("cached catalog lost the env index: %v", envs)
	}

	// A changed file changes the fingerprint: the cache is rebuilt.
	target := filepath.Join(site, "torch", "_inductor", "output_code.py")
	if err := os.WriteFile(target, []byte("from torch._inductor import config\n\n\ndef f():\n    return config.debug\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(target, later, later); err != nil {
		t.Fatal(err)
	}
	third, err := Open(ctx, site, cacheFile, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if third.Fingerprint == first.Fingerprint {
		t.Error("fingerprint unchanged after editing a file")
	}
	var found bool
	for _, s := range third.Sites("debug") {
		found = found || (s.File == "torch/_inductor/output_code.py" && s.Line == 4)
	}
	if !found {
		t.Error("rebuilt catalog misses the new site in output_code.py")
	}

	// A corrupt cache is rebuilt, not trusted.
	if err := os.WriteFile(cacheFile, []byte("not a gob stream"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cacheFile); err == nil {
		t.Error("Load accepted a corrupt cache")
	}
	fourth, err := Open(ctx, site, cacheFile, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(siteLines(fourth), siteLines(third)) {
		t.Error("catalog rebuilt from a corrupt cache differs")
	}
	if _, err := Load(cacheFile); err != nil {
		t.Errorf("cache not rewritten after corruption: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(cacheFile), "*.tmp*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestScanErrors(t *testing.T) {
	if _, err := Scan(context.Background(), t.TempDir(), Options{}); err == nil {
		t.Error("Scan of a dir without torch/ succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Scan(ctx, fixtureSite, Options{}); err == nil {
		t.Error("Scan with a cancelled context succeeded")
	}
}
