package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/torchlsp/torchlsp/server/config"
)

// A target picked with Select Target that the configuration no longer
// defines (its torchlsp.toml lost trust) gives way to the configured
// default instead of failing every request with "no target".
func TestPickedTargetDroppedWithItsConfig(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dirs := config.Dirs{Config: filepath.Join(root, "c"), Cache: filepath.Join(root, "k"), State: filepath.Join(root, "s")}
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	toml := filepath.Join(ws, config.WorkspaceFile)
	if err := os.WriteFile(toml, []byte("[targets.gpu]\npython = \"/usr/bin/python3\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := config.NewTrustStore(dirs)
	if _, err := store.Trust(toml); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := New(Options{Dirs: dirs})
	t.Cleanup(func() { _ = e.Shutdown(ctx) })
	if err := e.Initialize(ctx, InitializeParams{WorkspaceFolders: []string{ws}}); err != nil {
		t.Fatal(err)
	}
	e.cfg.selectTarget("gpu") // what Select Target records
	if spec, err := e.Spec(""); err != nil || spec.Name != "gpu" {
		t.Fatalf("after Select Target: %+v, %v", spec, err)
	}
	if err := store.Revoke(toml); err != nil {
		t.Fatal(err)
	}
	_ = e.Reconfigure(ctx)
	spec, err := e.Spec("")
	if err != nil || spec.Name == "gpu" {
		t.Fatalf("after the toml lost trust: %+v, %v; want the configured default", spec, err)
	}
}
