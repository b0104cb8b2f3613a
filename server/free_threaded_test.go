package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A target whose Python runs without the GIL gets TL018 on compiled code
// that threads run, in the editor: the helper's hello says so (here a
// sitecustomize on the target's path makes the real interpreter's
// sysconfig and sys say it, the fault injected), and the check reads it
// without ever waiting for it.
func TestFreeThreadedTargetIsChecked(t *testing.T) {
	t.Parallel()
	site := fixtureSite(t)
	patch := t.TempDir()
	if err := os.WriteFile(filepath.Join(patch, "sitecustomize.py"), []byte(`import sys
import sysconfig

_real_get = sysconfig.get_config_var
sysconfig.get_config_var = lambda *n: 1 if n == ("Py_GIL_DISABLED",) else _real_get(*n)
sys._is_gil_enabled = lambda: False
`), 0o644); err != nil {
		t.Fatal(err)
	}
	n := &countNotes{pubs: make(chan []Diagnostic, 64)}
	root := t.TempDir()
	eng := initEngine(t, n, root, root, "ft", map[string]any{
		"ft": map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site + string(os.PathListSeparator) + patch}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	eng.Initialized(ctx)
	eng.DidOpen(ctx, "file://"+filepath.Join(root, "serve.py"), "python", 1, `import threading

import torch

step = torch.compile(lambda x: x + 1)


def work():
    step(torch.ones(2))


threading.Thread(target=work).start()
`)
	for {
		select {
		case diags := <-n.pubs:
			for _, d := range diags {
				if strings.HasPrefix(d.Code, "TL018") {
					if d.Range.Start.Line != 4 {
						t.Errorf("TL018 at line %d, want the compile at line 5", d.Range.Start.Line+1)
					}
					return
				}
			}
		case <-ctx.Done():
			t.Fatal("no TL018 published for a free-threaded target")
		}
	}
}
