package hops

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/remote/sshtest"
	"github.com/torchlsp/torchlsp/server/repro"
)

// hangScript is a repro variant that never ends: it starts a child (so
// that killing only the interpreter is not enough), says so on stdout, and
// sleeps.
const hangScript = `import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "600"])
print("hop-repro up pid=%d child=%d" % (os.getpid(), child.pid), flush=True)
time.sleep(600)
`

// TestRepro runs the threaded repro through every chain. From the editor:
// the variants' output streams in while they run, the report comes back
// (the stand-in backend: neither torch has torch.compile), and a cancel
// from the editor stops the runs. Through the runner itself, with a
// variant that hangs: the timeout, and a cancel, kill it and its child
// inside the container or the Slurm step. Nothing is left running.
func TestRepro(t *testing.T) {
	t.Parallel()
	tp := newTopology(t, all)
	// One chain at a time: five variants of each run at once on two cores.
	for _, c := range chains {
		t.Run(c.name, func(t *testing.T) {
			t.Run("editor", func(t *testing.T) {
				tp.reproFromEditor(t, c)
				tp.requireNothingLeft(t)
			})
			t.Run("editor cancel", func(t *testing.T) {
				tp.reproCancelFromEditor(t, c)
				tp.requireNothingLeft(t)
			})
			t.Run("timeout", func(t *testing.T) {
				tp.reproHang(t, c, false)
				tp.requireNothingLeft(t)
			})
			t.Run("cancel", func(t *testing.T) {
				tp.reproHang(t, c, true)
				tp.requireNothingLeft(t)
			})
		})
	}
}

// reproLine is the 0-based line of the compile call in the script.
const reproLine = 19

func (tp *topology) reproFromEditor(t *testing.T, c chain) {
	env := tp.startEditor(t, tp.settings(c, nil), lsptest.Options{ShowDocument: true})
	env.Timeout = 5 * time.Minute
	uri := env.OpenFile("train.py")
	if got := env.At(uri, "torch.compile(model", 0).Line; got != reproLine {
		t.Fatalf("the compile call is on line %d, want %d", got, reproLine)
	}
	pending, err := env.Editor.Start("workspace/executeCommand", map[string]any{
		"command": "torchlsp.repro", "arguments": []any{map[string]any{"uri": uri, "line": reproLine, "standIn": true, "wait": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A variant's own output, relayed while the run goes on.
	env.Await(lsptest.LoggedMessage(" stdout] TORCHLSP_PROGRESS "))
	streamed := time.Now()
	resp, err := pending.Wait(env.Ctx())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil {
		t.Fatalf("repro: %v", resp.Error)
	}
	if !resp.ReadAt.After(streamed) {
		t.Errorf("the report came at %v, before the output streamed at %v", resp.ReadAt, streamed)
	}
	var res struct {
		Markdown string `json:"markdown"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| threads | **FAIL**", "AssertionError", "| main-thread | ok", "| cudagraphs-off | ok", "stand-in", "torch " + c.torchVersion} {
		if !strings.Contains(res.Markdown, want) {
			t.Errorf("report lacks %q:\n%s", want, res.Markdown)
		}
	}
	env.Await(lsptest.DiagnosticsAt(uri, 0, func(d lsptest.Diagnostics) bool { return d.Has("TL100") }))
	env.Shutdown()
}

// reproCancelFromEditor cancels the repro's progress as soon as a variant
// has started on the target.
func (tp *topology) reproCancelFromEditor(t *testing.T, c chain) {
	env := tp.startEditor(t, tp.settings(c, nil), lsptest.Options{ShowDocument: true})
	env.Timeout = 5 * time.Minute
	uri := env.OpenFile("train.py")
	// Mirror first: the cancel must land in the run, not in the load.
	env.Definition(uri, env.At(uri, "nn.Linear(4, 4)", 3))
	pending, err := env.Editor.Start("workspace/executeCommand", map[string]any{
		"command": "torchlsp.repro", "arguments": []any{map[string]any{"uri": uri, "line": reproLine, "standIn": true, "wait": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := env.Ctx()
	token, err := env.Editor.AwaitProgressBegin(ctx, "torchlsp: threaded repro")
	if err != nil {
		t.Fatal(err)
	}
	env.Await(lsptest.LoggedMessage(" status] started"))
	if err := env.Editor.CancelProgress(token); err != nil {
		t.Fatal(err)
	}
	resp, err := pending.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text := string(resp.Result)
	if resp.Error != nil {
		text = resp.Error.Message
	}
	if !strings.Contains(text, "cancelled") {
		t.Errorf("the cancelled repro answered without saying so: %s", text)
	}
	env.Shutdown()
}

// reproHang runs the hanging variant through the chain with the runner's
// timeout, or cancels it once it has said it is up.
func (tp *topology) reproHang(t *testing.T, c chain, cancel bool) {
	tg, err := sshtarget.New(tp.spec(c, nil), tp.options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, stop := context.WithTimeout(context.Background(), 3*time.Minute)
	defer stop()
	var mu sync.Mutex // guards lines
	var lines []string
	up := make(chan struct{})
	var once sync.Once
	sink := func(ev repro.Event) {
		mu.Lock()
		lines = append(lines, ev.Stream+": "+ev.Line)
		mu.Unlock()
		if ev.Stream == "stdout" && strings.HasPrefix(ev.Line, "hop-repro up ") {
			once.Do(func() { close(up) })
		}
	}
	timeout := 5 * time.Minute
	if !cancel {
		timeout = 8 * time.Second
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	done := make(chan struct{})
	var rep repro.Report
	var runErr error
	go func() {
		defer close(done)
		rep, runErr = repro.Run(runCtx, tg, remote.Interpreter{Python: c.python}, []repro.Variant{{Name: "hang", Script: hangScript}},
			repro.RunOptions{Timeout: timeout, Grace: time.Second}, sink)
	}()
	select {
	case <-up:
	case <-done:
		t.Fatalf("the variant ended before it said it was up: %+v, %v, output %q", rep, runErr, lines)
	case <-ctx.Done():
		t.Fatal("the variant never said it was up")
	}
	// Both processes are there, inside the hop.
	tp.awaitProcs(t, "the hanging variant's child", func(p proc) bool { return p.cmdline == "sleep 600" })
	if cancel {
		cancelRun()
	}
	<-done
	if len(rep.Variants) != 1 {
		t.Fatalf("report %+v, %v", rep, runErr)
	}
	want := "timed out after 8 s"
	if cancel {
		want = "cancelled"
	}
	if v := rep.Variants[0]; v.Failure != want {
		t.Errorf("the hanging variant: failure %q, want %q (output %q)", v.Failure, want, lines)
	}
}

// sleepyEntry is the user's own code for TestLinkCutDuringRepro: it
// starts a child and sleeps for two minutes before its compile call.
const sleepyEntry = `import subprocess, time
child = subprocess.Popen(["sleep", "120"])
print("user code up, child %d" % child.pid, flush=True)
time.sleep(120)
import torch
f = torch.compile(lambda x: x + 1)
f(torch.ones(2))
`

// TestLinkCutDuringRepro: the link to the bastion dies while a repro of
// the user's own code runs behind every hop. The variant's stdin ends with
// the connection; the script stops, and its child with it, long before its
// own five-minute deadline: nothing is left running on the hosts.
func TestLinkCutDuringRepro(t *testing.T) {
	t.Parallel()
	tp := newTopology(t, all)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "train.py"), []byte(sleepyEntry), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := repro.CollectWorkspace(ws, repro.BundleLimits{})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := repro.Generate(repro.Spec{
		StandIn: true, Files: b.Files, Entry: "train.py", CaptureFile: "train.py", CaptureLines: [2]int{6, 6},
		CaptureTimeout: 5 * time.Minute, Variants: []string{repro.VariantMainThread},
	})
	if err != nil {
		t.Fatal(err)
	}
	// One chain at a time: each cut drops every connection through the relay.
	for _, c := range chains {
		t.Run(c.name, func(t *testing.T) {
			tg, err := sshtarget.New(tp.spec(c, nil), tp.options(t))
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			ctx, stop := context.WithTimeout(context.Background(), 3*time.Minute)
			defer stop()
			up := make(chan struct{})
			var once sync.Once
			sink := func(ev repro.Event) {
				if ev.Stream == "stdout" && strings.HasPrefix(ev.Line, "user code up") {
					once.Do(func() { close(up) })
				}
			}
			done := make(chan repro.Report, 1)
			go func() {
				rep, _ := repro.Run(ctx, tg, remote.Interpreter{Python: c.python}, vs, repro.RunOptions{Timeout: 5 * time.Minute, Grace: time.Second}, sink)
				done <- rep
			}()
			select {
			case <-up:
			case rep := <-done:
				t.Fatalf("the run ended before the user's code was up: %+v", rep)
			case <-ctx.Done():
				t.Fatal("the user's code never said it was up")
			}
			tp.awaitProcs(t, "the user's child", func(p proc) bool { return p.cmdline == "sleep 120" })
			cut := time.Now()
			tp.relay.Cut()
			tp.relay.SetLink(sshtest.WAN)
			select {
			case rep := <-done:
				if len(rep.Variants) != 1 || !strings.Contains(rep.Variants[0].Failure, "connection to the target ended") {
					t.Errorf("the run after the cut: %+v, want a failure saying the connection ended", rep.Variants)
				} else {
					t.Logf("the run after the cut (%v): %s", time.Since(cut).Round(time.Millisecond), rep.Variants[0].Failure)
				}
			case <-ctx.Done():
				t.Fatal("the run did not end after the link was cut")
			}
			tp.requireNothingLeft(t)
			t.Logf("nothing left running %v after the cut", time.Since(cut).Round(time.Millisecond))
		})
	}
}
