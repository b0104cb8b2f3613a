package faults

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestHelperKilledMidRequest kills the target's helper while it imports
// torch to answer a hover (a slow import, as on a GPU host): the hover
// must be answered (an error or null, not silence), the user told why,
// and the next hover answered in full by a new helper.
func TestHelperKilledMidRequest(t *testing.T) {
	t.Parallel()
	mark := marker(t)
	site := slowSite(t)
	started := filepath.Join(t.TempDir(), "import-started")
	env := start(t, sessionOptions{settings: targetSettings(t, debianPython, map[string]string{
		"PYTHONPATH": site, "FAULT_IMPORT_DELAY": "3", "FAULT_MARK": mark, "FAULT_IMPORT_STARTED": started,
	})})
	env.Timeout = 90 * time.Second
	uri := env.OpenFile("train.py")
	// torch.add is bound only at run time: the helper must import torch.
	pos := env.At(uri, "torch.add(", 6)

	for round := range 3 {
		_ = os.Remove(started)
		p, err := env.Editor.StartHover(uri, pos.Line, pos.Character)
		if err != nil {
			t.Fatal(err)
		}
		// The hover starts a helper if none runs; its import of torch
		// sleeps 3s. Kill the helper once that import has begun.
		helper := awaitImport(t, started, 60*time.Second)
		if pids := processesWithCmd(t, mark, "torchlsp_helper"); len(pids) != 1 || pids[0] != helper {
			t.Fatalf("round %d: the importing process %d is not the one helper %v", round, helper, pids)
		}
		if err := syscall.Kill(helper, syscall.SIGKILL); err != nil {
			t.Fatalf("round %d: kill helper %d: %v", round, helper, err)
		}
		r, err := p.Wait(env.Ctx())
		if err != nil {
			t.Fatalf("round %d: hover not answered after the helper died: %v", round, err)
		}
		switch {
		case r.Error != nil:
			// The error is the message: the editor logs it.
			if !strings.Contains(r.Error.Message, "helper") || !strings.Contains(r.Error.Message, "exited") {
				t.Errorf("round %d: error %q does not say the helper exited", round, r.Error.Message)
			}
		case string(r.Result) == "null":
			env.Await(lsptest.LoggedMessage("helper"))
		case strings.Contains(string(r.Result), "answered by the target's interpreter"):
			t.Fatalf("round %d: a dead helper answered: %s", round, r.Result)
		}
		t.Logf("round %d: reply error=%v result=%.80s", round, r.Error, r.Result)
	}

	// A new helper answers in full.
	h := env.Hover(uri, pos)
	if h == nil || !strings.Contains(h.Contents.Value, "add") {
		t.Fatalf("hover after the helper was restarted: %+v", h)
	}
	// And an answer from the index never needed the helper.
	if h := env.Hover(uri, env.At(uri, "torch.compile(model", 8)); h == nil || !strings.Contains(h.Contents.Value, "def compile(") {
		t.Fatalf("index hover: %+v", h)
	}
	env.Shutdown()
	awaitNoProcesses(t, mark, 10*time.Second)
}

// awaitImport waits, bounded, for the slow site's import to write its
// process id to path, and returns it.
func awaitImport(t *testing.T, path string, within time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	// The import writes the file aside and renames it: there, it is whole.
	b, err := await.File(ctx, path, func([]byte) bool { return true })
	if err != nil {
		t.Fatalf("the helper's import of torch did not start within %v: %v", within, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s holds %q", path, b)
	}
	return pid
}
