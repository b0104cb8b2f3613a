package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
)

// initEngine starts an engine for a test: its directories under root, the
// workspace folder ws, the targets given (defaultTarget among them); it is
// shut down when the test ends.
func initEngine(t testing.TB, n Notifier, root, ws, defaultTarget string, targets map[string]any) *Engine {
	t.Helper()
	dirs := config.Dirs{Config: filepath.Join(root, "config"), Cache: filepath.Join(root, "cache"), State: filepath.Join(root, "state")}
	eng := New(Options{Dirs: dirs, Notifier: n})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings, err := json.Marshal(map[string]any{"defaultTarget": defaultTarget, "targets": targets})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := eng.Initialize(ctx, InitializeParams{WorkspaceFolders: []string{ws}, InitializationOptions: settings}); err != nil {
		t.Fatal(err)
	}
	return eng
}

// BuildSite builds the default target's site without handing it to an
// editor (torchlsp.site hands it: later definitions then point into it),
// so that definitions stay in the mirror: how the tests outside the
// package find a package's mirrored files through the site's links.
func (e *Engine) BuildSite(ctx context.Context) (*SiteResult, error) {
	return e.site.Build(ctx, "")
}

// fixtureSite is the fixture torch's site dir, absolute, for a target
// that this machine's Python (benchPython) runs; the test is skipped when
// that Python is missing.
func fixtureSite(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	site, err := filepath.Abs("../testdata/site")
	if err != nil {
		t.Fatal(err)
	}
	return site
}
