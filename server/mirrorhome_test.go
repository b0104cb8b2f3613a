package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
)

// A server with no workspace folder whose first document is a mirror's
// file serves the mirror's target: the configured one that made it, over
// the settings' default, or a read-only session when none is configured.
// Its answers there are the workspace server's.
func TestServerPlacedByItsFirstDocument(t *testing.T) {
	t.Parallel()
	site := fixtureSite(t)
	root := t.TempDir()
	dirs := config.Dirs{Config: filepath.Join(root, "c"), Cache: filepath.Join(root, "k"), State: filepath.Join(root, "s")}
	fx := map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site}}
	other := map[string]any{"python": benchPython} // Debian's torch
	start := func(settings map[string]any, folders ...string) *Engine {
		eng := New(Options{Dirs: dirs})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = eng.Shutdown(ctx)
		})
		raw, _ := json.Marshal(settings)
		if err := eng.Initialize(context.Background(), InitializeParams{WorkspaceFolders: folders, InitializationOptions: raw}); err != nil {
			t.Fatal(err)
		}
		eng.Initialized(context.Background())
		return eng
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ws := t.TempDir()
	first := start(map[string]any{"defaultTarget": "fx", "targets": map[string]any{"fx": fx}}, ws)
	text := "import torch.nn as nn\nnn.Linear(4, 4)\n"
	doc := first.DidOpen(ctx, "file://"+filepath.Join(ws, "train.py"), "", 1, text)
	waitMirror(ctx, t, first, "torch")
	locs, err := first.Definition(ctx, doc, posOf(t, text, "nn.Linear", 0, 3))
	if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].Path, "/site/torch/nn/modules/linear.py") {
		t.Fatalf("definition of nn.Linear = %+v, %v", locs, err)
	}
	linear := locs[0].Path
	data, err := os.ReadFile(linear)
	if err != nil {
		t.Fatal(err)
	}
	mirrorText := string(data)
	at := posOf(t, mirrorText, "class Linear(Module)", 0, len("class Linear("))
	ask := func(eng *Engine) []Location {
		t.Helper()
		d := eng.DidOpen(ctx, "file://"+linear, "", 1, mirrorText)
		locs, err := eng.Definition(ctx, d, at)
		if err != nil {
			t.Fatal(err)
		}
		return locs
	}
	want := ask(first)
	if len(want) != 1 || !strings.HasSuffix(want[0].Path, "/site/torch/nn/modules/module.py") {
		t.Fatalf("definition of Module in the mirror = %+v", want)
	}

	configured := start(map[string]any{"defaultTarget": "other", "targets": map[string]any{"fx": fx, "other": other}})
	if got := ask(configured); !reflect.DeepEqual(got, want) {
		t.Errorf("placed by its first document, with the target configured: %+v, want %+v", got, want)
	}
	if spec, err := configured.Spec(""); err != nil || spec.Name != "fx" {
		t.Errorf("the default target is %q (%v), want the mirror's, fx", spec.Name, err)
	}

	unconfigured := start(map[string]any{"defaultTarget": "other", "targets": map[string]any{"other": other}})
	if got := ask(unconfigured); !reflect.DeepEqual(got, want) {
		t.Errorf("placed by its first document, with the target not configured: %+v, want %+v", got, want)
	}
	if s, err := unconfigured.session(""); err != nil || !s.ReadOnly() {
		t.Errorf("the session of an unconfigured mirror's server: read-only %v (%v)", s != nil && s.ReadOnly(), err)
	}
	if _, err := os.Stat(filepath.Join(dirs.Cache, "other")); !os.IsNotExist(err) {
		t.Errorf("the servers placed in the mirror used the settings' default target: %v", err)
	}
}
