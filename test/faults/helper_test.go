package faults

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestHelperKilledMidRequest kills the target's helper while it imports
// torch to answer a hover (a slow import, as on a GPU host): the hover
// must be answered (an error or null, not silence), the user told why,
// and the next hover answered in full by a new helper.
func TestHelperKilledMidRequest(t *testing.T) {
	mark := marker(t)
	site := slowSite(t)
	ws, file, text := workspace(t)
	s := start(t, sessionOptions{ws: ws, settings: targetSettings(t, debianPython, map[string]string{
		"PYTHONPATH": site, "FAULT_IMPORT_DELAY": "3", "FAULT_MARK": mark,
	})})
	uri := lsptest.FileURI(file)
	if err := s.client.DidOpen(uri, "python", text); err != nil {
		t.Fatal(err)
	}
	// torch.add is bound only at run time: the helper must import torch.
	line, col := at(t, text, "torch.add(", 0, 6)

	for round := range 3 {
		p, err := s.client.StartHover(uri, line, col)
		if err != nil {
			t.Fatal(err)
		}
		// The hover starts a helper if none runs; its import of torch
		// sleeps 3s. Kill the helper in the middle of it.
		helper := awaitProcess(t, mark, "torchlsp_helper", 60*time.Second)
		time.Sleep(time.Second)
		if err := syscall.Kill(helper, syscall.SIGKILL); err != nil {
			t.Fatalf("round %d: kill helper %d: %v", round, helper, err)
		}
		r, err := p.Wait(testContext(t, 60*time.Second))
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
			if _, err := s.client.AwaitMessage(testContext(t, 10*time.Second), true, "helper"); err != nil {
				t.Errorf("round %d: null hover and no message about the helper: %v", round, err)
			}
		case strings.Contains(string(r.Result), "answered by the target's interpreter"):
			t.Fatalf("round %d: a dead helper answered: %s", round, r.Result)
		}
		t.Logf("round %d: reply error=%v result=%.80s", round, r.Error, r.Result)
	}

	// A new helper answers in full.
	h, err := s.client.Hover(testContext(t, 90*time.Second), uri, line, col)
	if err != nil || h == nil {
		t.Fatalf("hover after the helper was restarted: %v %v", h, err)
	}
	if !strings.Contains(h.Contents.Value, "add") {
		t.Errorf("hover after restart lacks add:\n%s", h.Contents.Value)
	}
	// And an answer from the index never needed the helper.
	line, col = at(t, text, "torch.compile(model", 0, 8)
	h, err = s.client.Hover(testContext(t, 30*time.Second), uri, line, col)
	if err != nil || h == nil || !strings.Contains(h.Contents.Value, "def compile(") {
		t.Fatalf("index hover: %v %v", h, err)
	}
	s.stop()
	awaitNoProcesses(t, mark, 10*time.Second)
}
