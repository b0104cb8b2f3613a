package faults

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/server/source"
)

// TestDidSaveOfPipeOrDevice: once the site is built, a didSave makes the
// server read the saved file for its imports. A workspace file that is a
// named pipe or a link to /dev/zero must not stall or exhaust the server:
// the next hover and the shutdown are answered. (The file was read on the
// read loop, unbounded: a pipe froze the server for good, before the
// size was checked.)
func TestDidSaveOfPipeOrDevice(t *testing.T) {
	t.Parallel()
	env := start(t, sessionOptions{settings: targetSettings(t, debianPython, map[string]string{
		"PYTHONPATH": filepath.Join(repoRoot(t), "testdata", "site"),
	})})
	env.Timeout = 2 * time.Minute
	env.Await(lsptest.Notification("torchlsp/site", "the site built and announced", func(s struct {
		Path string `json:"path"`
	}) bool {
		return s.Path != ""
	}))
	pipe, zero := env.Path("pipe.py"), env.Path("zero.py")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	// A server stuck on a save stops reading its input, and the next
	// write to the pipe waits for it: send with a deadline.
	sent := make(chan error, 1)
	go func() {
		for _, p := range []string{pipe, zero, pipe} {
			if err := env.Editor.Client.DidSave(source.FileURI(p)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(env.Timeout):
		t.Fatalf("the server stopped reading its input after a didSave of a pipe (no read in %v)", env.Timeout)
	}
	uri := env.OpenFile("train.py")
	h := env.Hover(uri, env.At(uri, "nn.Linear(4, 4)", 4))
	if h == nil || !strings.Contains(h.Contents.Value, "Linear") {
		t.Fatalf("hover after the saves: %+v", h)
	}
	env.Shutdown()
}
