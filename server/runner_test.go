package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/source"
)

// runEvent is one thing a run showed the user, in the order shown.
type runEvent struct {
	kind  string // "log", "message", "begin", "report", "end", "show"
	title string // the progress's, for begin, report and end
	text  string
}

// runNotes records what runs show, in order, and lets a test press the
// progress's cancel button. showDocument says whether the front end can
// open documents.
type runNotes struct {
	NopNotifier
	showDocument bool

	mu      sync.Mutex // guards events, changed and cancels
	events  []runEvent
	changed chan struct{} // closed at each new event
	cancels []chan struct{}
}

func newRunNotes(showDocument bool) *runNotes {
	return &runNotes{showDocument: showDocument, changed: make(chan struct{})}
}

func (n *runNotes) add(kind, text string) { n.addProgress(kind, "", text) }

func (n *runNotes) addProgress(kind, title, text string) {
	n.mu.Lock()
	n.events = append(n.events, runEvent{kind, title, text})
	close(n.changed)
	n.changed = make(chan struct{})
	n.mu.Unlock()
}

func (n *runNotes) Capabilities() Capabilities { return Capabilities{ShowDocument: n.showDocument} }

func (n *runNotes) LogMessage(_ context.Context, _ MessageType, msg string) { n.add("log", msg) }

func (n *runNotes) ShowMessage(_ context.Context, _ MessageType, msg string) { n.add("message", msg) }

func (n *runNotes) ShowDocument(_ context.Context, loc Location, _ bool) (bool, error) {
	if !n.showDocument {
		return false, errors.New("cannot show documents")
	}
	n.add("show", loc.Path)
	return true, nil
}

func (n *runNotes) StartProgress(_ context.Context, title string, cancellable bool) Progress {
	p := &runProgress{n: n, title: title}
	if cancellable && title == "torchlsp: threaded repro" {
		p.cancel = make(chan struct{})
		n.mu.Lock()
		n.cancels = append(n.cancels, p.cancel)
		n.mu.Unlock()
	}
	n.addProgress("begin", title, "")
	return p
}

// pressCancel presses the cancel button of every repro's progress shown
// so far.
func (n *runNotes) pressCancel() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.cancels {
		close(c)
	}
	n.cancels = nil
}

type runProgress struct {
	n      *runNotes
	title  string
	cancel chan struct{}
}

func (p *runProgress) Report(msg string, _ int)   { p.n.addProgress("report", p.title, msg) }
func (p *runProgress) End(msg string)             { p.n.addProgress("end", p.title, msg) }
func (p *runProgress) Cancelled() <-chan struct{} { return p.cancel }

func (n *runNotes) snapshot() ([]runEvent, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]runEvent(nil), n.events...), n.changed
}

// await waits, up to 4 minutes, for the events to satisfy ok, and returns
// the index of the event that did.
func (n *runNotes) await(t *testing.T, what string, ok func(runEvent) bool) int {
	t.Helper()
	deadline := time.NewTimer(4 * time.Minute)
	defer deadline.Stop()
	for {
		events, changed := n.snapshot()
		for i, e := range events {
			if ok(e) {
				return i
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("waited 4 minutes for %s; events:\n%s", what, formatEvents(events))
		}
	}
}

func formatEvents(events []runEvent) string {
	var b strings.Builder
	for i, e := range events {
		fmt.Fprintf(&b, "%3d %-7s %s %s\n", i, e.kind, e.title, e.text)
	}
	return b.String()
}

func is(kind, substr string) func(runEvent) bool {
	return func(e runEvent) bool { return e.kind == kind && strings.Contains(e.text, substr) }
}

// reproEnd matches the end of a threaded repro's progress.
func reproEnd(e runEvent) bool { return e.kind == "end" && e.title == "torchlsp: threaded repro" }

// runnerEngine starts an engine on a copy of the user code fixture (with
// extra files), on Debian's interpreter as target "debian" and any other
// targets given, reporting to n.
func runnerEngine(t *testing.T, n Notifier, extra map[string]string, targets map[string]any) (*Engine, string) {
	t.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.CopyFS(ws, os.DirFS(filepath.Join("repro", "testdata", "ownws"))); err != nil {
		t.Fatal(err)
	}
	for name, text := range extra {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all := map[string]any{"debian": map[string]any{"python": benchPython}}
	for k, v := range targets {
		all[k] = v
	}
	return initEngine(t, n, root, ws, "debian", all), ws
}

func openIn(t *testing.T, eng *Engine, ws, name string) *Snapshot {
	t.Helper()
	path := filepath.Join(ws, name)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return eng.DidOpen(context.Background(), source.FileURI(path), "", 1, string(text))
}

// progressDone matches a TORCHLSP_PROGRESS line's count of calls done.
var progressDone = regexp.MustCompile(`TORCHLSP_PROGRESS .*"done": (\d+)`)

// TestRunStreamsAndOpensReport: the editor's "Run threaded repro" runs
// the user's own model (captured from the entry point), answers at once
// with the run's id, streams each variant's lines in the order printed
// before the progress ends, and opens the report, which says which
// workload ran and why.
func TestRunStreamsAndOpensReport(t *testing.T) {
	t.Parallel()
	n := newRunNotes(true)
	eng, ws := runnerEngine(t, n, nil, nil)
	doc := openIn(t, eng, ws, "train.py")
	line := lineOf(t, doc.Text(), "torch.compile(model")
	res, err := eng.Repro(context.Background(), RunArgs{URI: doc.URI(), Line: line})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("threaded repro of train.py:%d on debian", line+1); res.Run == "" || res.Title != want || res.Path != "" || res.Markdown != "" {
		t.Errorf("answer %+v; want the run's id and title %q, no report yet", res, want)
	}
	end := n.await(t, "the progress's end", reproEnd)
	show := n.await(t, "the report opened", is("show", "report.md"))
	events, _ := n.snapshot()
	if show < end {
		t.Errorf("the report opened (event %d) before the progress ended (event %d):\n%s", show, end, formatEvents(events))
	}
	report := events[show].text
	if !strings.HasPrefix(report, filepath.Join(ws, ".torchlsp", "repros")) || events[end].text != "done: "+report {
		t.Errorf("progress ended with %q, report %s", events[end].text, report)
	}
	// Every variant: its status "started" first, its own output in the
	// order printed, its verdict last, all before the progress ended.
	type variantLog struct {
		started, verdict bool
		done             int
	}
	logs := map[string]*variantLog{}
	for i, e := range events {
		if e.kind != "log" || !strings.HasPrefix(e.text, "[debian ") {
			continue
		}
		if i > end {
			t.Errorf("log line %d after the progress ended: %s", i, e.text)
		}
		fields := strings.Fields(e.text)
		v := logs[fields[1]]
		if v == nil {
			v = &variantLog{}
			logs[fields[1]] = v
		}
		if v.verdict {
			t.Errorf("%s: line after the verdict: %s", fields[1], e.text)
		}
		switch {
		case strings.HasSuffix(e.text, "status] started"):
			v.started = true
		case !v.started:
			t.Errorf("%s: line before it started: %s", fields[1], e.text)
		case strings.Contains(e.text, "status] ok: ") || strings.Contains(e.text, "status] failed: "):
			v.verdict = true
		}
		if m := progressDone.FindStringSubmatch(e.text); m != nil {
			d, _ := strconv.Atoi(m[1])
			if d <= v.done {
				t.Errorf("%s: progress %d after %d: out of order", fields[1], d, v.done)
			}
			v.done = d
		}
	}
	if len(logs) < 3 {
		t.Fatalf("lines of %d variants; events:\n%s", len(logs), formatEvents(events))
	}
	for name, v := range logs {
		if name == "threads-per-gpu" || name == "executor-per-gpu" {
			continue // not run on one device
		}
		if !v.verdict || v.done == 0 {
			t.Errorf("%s: verdict %v, progress %d: its output did not stream", name, v.verdict, v.done)
		}
	}
	saved, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TinyGPT (tinygpt/model.py)", "Why this workload: your code ran", "captured by running train.py"} {
		if !strings.Contains(string(saved), want) {
			t.Errorf("report lacks %q:\n%s", want, saved)
		}
	}
	if hit, err := eng.CancelRunCommand(context.Background(), CancelArgs{}); err != nil || len(hit.Cancelled) != 0 {
		t.Errorf("runs still in progress after the end: %v %v", hit, err)
	}
}

// TestRunStandInAndFailingTarget: a file that cannot run as the
// workspace's code falls back to the stand-in, and the report says why; a
// target that cannot be reached fails alone, in a message naming it,
// while the other's report is named in a message where the editor cannot
// open documents. Waiting, the answer holds the report.
func TestRunStandInAndFailingTarget(t *testing.T) {
	t.Parallel()
	n := newRunNotes(false)
	train, err := os.ReadFile(filepath.Join("repro", "testdata", "ownws", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-python3")
	eng, ws := runnerEngine(t, n, map[string]string{"serve-model.py": string(train)}, map[string]any{"gone": map[string]any{"python": missing}})
	doc := openIn(t, eng, ws, "serve-model.py")
	line := lineOf(t, doc.Text(), "torch.compile(model")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := eng.Repro(ctx, RunArgs{URI: doc.URI(), Line: line, All: true, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## torch.compile threading repro on `debian`", "Why this workload: the stand-in model ran because your code could not be run",
		"is not an importable module name", "| main-thread | ok"} {
		if !strings.Contains(res.Markdown, want) {
			t.Errorf("report lacks %q:\n%s", want, res.Markdown)
		}
	}
	if !strings.Contains(res.Title, "on debian, gone") && !strings.Contains(res.Title, "on gone, debian") {
		t.Errorf("title %q names not both targets", res.Title)
	}
	if _, err := os.Stat(res.Path); err != nil {
		t.Errorf("report file: %v", err)
	}
	n.await(t, "the report named in a message", is("message", "threaded repro report: "+res.Path))
	n.await(t, "the failing target named in a message", func(e runEvent) bool {
		return e.kind == "message" && strings.HasPrefix(e.text, "torchlsp repro: ") && strings.Contains(e.text, "gone")
	})
	events, _ := n.snapshot()
	for _, e := range events {
		if e.kind == "show" {
			t.Errorf("a document shown to a front end that cannot show one: %s", e.text)
		}
	}
}

// TestRunCancel: a run whose capture would take a minute is cancelled,
// once started, by its id or by its progress's cancel button; it ends at
// once with what it had, its report opened, and the warning says so. The
// command answered while the run went on: else the test could not cancel.
func TestRunCancel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		cancel func(t *testing.T, eng *Engine, n *runNotes, run *RunResult)
	}{
		{"by its id", func(t *testing.T, eng *Engine, _ *runNotes, run *RunResult) {
			hit, err := eng.CancelRunCommand(context.Background(), CancelArgs{Run: run.Run})
			if err != nil || len(hit.Cancelled) != 1 || hit.Cancelled[0] != run.Run+": "+run.Title {
				t.Errorf("cancel %s: %+v, %v", run.Run, hit, err)
			}
		}},
		{"from its progress", func(_ *testing.T, _ *Engine, n *runNotes, _ *RunResult) { n.pressCancel() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := newRunNotes(true)
			eng, ws := runnerEngine(t, n, nil, nil)
			doc := openIn(t, eng, ws, "never.py")
			run, err := eng.Repro(context.Background(), RunArgs{URI: doc.URI(), Line: lineOf(t, doc.Text(), "torch.compile(f)")})
			if err != nil {
				t.Fatal(err)
			}
			n.await(t, "a variant started", is("log", "status] started"))
			tt.cancel(t, eng, n, run)
			end := n.await(t, "the progress's end", reproEnd)
			n.await(t, "the warning that the run was cancelled", is("message", "context canceled"))
			show := n.await(t, "the report opened", is("show", "report.md"))
			events, _ := n.snapshot()
			saved, err := os.ReadFile(events[show].text)
			if err != nil || !strings.Contains(string(saved), "cancelled") {
				t.Errorf("report of the cancelled run: %v\n%s", err, saved)
			}
			if !strings.HasPrefix(events[end].text, "done: ") {
				t.Errorf("progress ended with %q", events[end].text)
			}
			if _, err := eng.CancelRunCommand(context.Background(), CancelArgs{Run: run.Run}); err == nil || !strings.Contains(err.Error(), "no run is in progress") {
				t.Errorf("the run still listed after its end: %v", err)
			}
		})
	}
}
