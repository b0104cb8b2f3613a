package opimpl

import (
	"os"
	"path/filepath"
	"testing"
)

const debianPython = "/usr/bin/python3"

// debianSite returns the dist-packages dir of Debian's python3-torch
// (1.13), skipping when it is not installed.
func debianSite(t testing.TB) string {
	t.Helper()
	site := "/usr/lib/python3/dist-packages"
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is missing: run scripts/setup.sh --test", debianPython)
	}
	if _, err := os.Stat(filepath.Join(site, "torch", "_meta_registrations.py")); err != nil {
		t.Skipf("no Debian torch in %s (apt-get install python3-torch)", site)
	}
	return site
}

// torch211 returns the copy of torch 2.11's site dir named by
// TORCHLSP_TORCH211_SITE, skipping when it is unset.
func torch211(t testing.TB) string {
	t.Helper()
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	if site == "" {
		t.Skip("TORCHLSP_TORCH211_SITE is unset: no copy of torch 2.11's sources to scan")
	}
	if _, err := os.Stat(filepath.Join(site, "torch", "_inductor", "lowering.py")); err != nil {
		t.Fatalf("TORCHLSP_TORCH211_SITE=%s holds no torch 2.11 tree: %v", site, err)
	}
	return site
}
