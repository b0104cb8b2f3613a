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
