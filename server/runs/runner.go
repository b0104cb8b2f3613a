package runs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/repro"
	"github.com/torchlsp/torchlsp/server/session"
)

// MaxRuns bounds the runs (threaded repros, explains) in progress at once:
// each starts interpreters on its targets. One more is refused, naming
// the runs to cancel.
const MaxRuns = 4

// RunResult is what a run command answers: at once, the run's id and what
// runs; with Wait, when the run has ended, its report too.
type RunResult struct {
	Run   string `json:"run"`   // the id torchlsp.cancelRun takes
	Title string `json:"title"` // what runs, rn.g. "threaded repro of train.py:12 on debian"
	// Markdown and Path are the report and the file holding it (the first
	// target's, when several ran); set only for a run that was waited for.
	Markdown string `json:"markdown,omitempty"`
	Path     string `json:"path,omitempty"`
	// Reports are each target's report, and Diagnostics explain's
	// findings by document URI, for a caller that shows the run itself
	// (RunArgs.Caller); the wire carries neither.
	Reports     []repro.Report              `json:"-"`
	Diagnostics map[string][]api.Diagnostic `json:"-"`
}

// CancelResult names the runs a cancel reached.
type CancelResult struct {
	Cancelled []string `json:"cancelled"` // "id: title" of each run cancelled
}

// Job is one run as the runner sees it: repro and explain supply the
// work.
type Job struct {
	name   string // "repro", "explain": in messages
	kind   string // "threaded repro", "explain compile": the progress's title
	title  string // what runs, for the user and the run table
	report string // what the opened report is called
	// status turns a status line into the progress's message.
	status func(repro.Event) string
	// work runs, streaming through sink, and returns the report; a nil
	// result means the run produced nothing, err says why.
	work func(ctx context.Context, sink func(repro.Event)) (*runOutput, error)
}

// runOutput is a finished run's report.
type runOutput struct {
	markdown    string
	reports     []repro.Report
	diagnostics map[string][]api.Diagnostic // explain's findings, by URI
}

// result is what the answer says of a finished run.
func (out *runOutput) result(res *RunResult) *RunResult {
	res.Markdown, res.Reports, res.Diagnostics = out.markdown, out.reports, out.diagnostics
	if files := reportFiles(out.reports...); len(files) > 0 {
		res.Path = files[0]
	}
	return res
}

// runTable holds the runs in progress, for cancellation and the bound.
type runTable struct {
	mu     sync.Mutex // guards next and active
	next   int
	active map[string]*activeRun
}

type activeRun struct {
	title  string
	cancel context.CancelFunc
	// cancelled is set by the first cancel: the run is stopping, and a
	// second cancel names it as such, never as cancelled again.
	cancelled bool
}

// add registers a run, or refuses it when MaxRuns are in progress.
func (t *runTable) add(title string, cancel context.CancelFunc) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.active) >= MaxRuns {
		return "", fmt.Errorf("%d runs are in progress (%s): cancel one with torchlsp.cancelRun, or wait for one to end", len(t.active), strings.Join(t.describeLocked(), "; "))
	}
	if t.active == nil {
		t.active = map[string]*activeRun{}
	}
	t.next++
	id := strconv.Itoa(t.next)
	t.active[id] = &activeRun{title: title, cancel: cancel}
	return id, nil
}

func (t *runTable) remove(id string) {
	t.mu.Lock()
	delete(t.active, id)
	t.mu.Unlock()
}

// cancel cancels the run id, or every run when id is empty, and names
// what it cancelled; a run cancelled before, still stopping, is not
// cancelled again.
func (t *runTable) cancel(id string) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var hit []string
	for rid, r := range t.active {
		if (id == "" || rid == id) && !r.cancelled {
			r.cancel()
			r.cancelled = true
			hit = append(hit, rid+": "+r.title)
		}
	}
	sort.Strings(hit)
	if hit == nil {
		hit = []string{}
	}
	if r := t.active[id]; id != "" && r != nil && len(hit) == 0 {
		return nil, fmt.Errorf("run %s (%s) was cancelled already and is stopping", id, r.title)
	}
	if id != "" && len(hit) == 0 {
		running := t.describeLocked()
		if len(running) == 0 {
			return nil, fmt.Errorf("no run %q: no run is in progress", id)
		}
		return nil, fmt.Errorf("no run %q in progress (running: %s)", id, strings.Join(running, "; "))
	}
	return hit, nil
}

func (t *runTable) describeLocked() []string {
	var out []string
	for id, r := range t.active {
		if r.cancelled {
			out = append(out, id+": "+r.title+" (stopping)")
			continue
		}
		out = append(out, id+": "+r.title)
	}
	sort.Strings(out)
	return out
}

// CancelRun runs torchlsp.cancelRun: it cancels a run by its id, or every run in progress when id is
// empty; a run cancelled stops its processes on the targets and ends its
// progress with what it had.
func (rn *Runs) CancelRun(ctx context.Context, args api.CancelArgs) (*CancelResult, error) {
	hit, err := rn.table.cancel(args.Run)
	if err != nil {
		return nil, fmt.Errorf("cancel run: %w", err)
	}
	return &CancelResult{Cancelled: hit}, nil
}

// Run runs job as args ask: a repro, an own-code repro or an explain
// each come here as a job. For a caller that shows the run itself
// (args.Caller) it runs under ctx, streaming to the caller's sink, and
// answers with its reports and its error. For an editor, with Wait the run goes on
// under ctx (cancelling the request cancels it) and the answer holds the
// report; otherwise it goes on in the background, under the engine's
// lifetime, and the answer, at once, names it. Either way an editor's
// run can be cancelled by its id (CancelRun) or from its progress, its
// output streams to the log and the progress, and its report opens in
// the editor or is named in a message.
func (rn *Runs) Run(ctx context.Context, job Job, args api.RunArgs) (*RunResult, error) {
	if c := args.Caller; c != nil {
		out, err := job.work(ctx, func(ev repro.Event) {
			if c.Sink != nil {
				c.Sink(api.RunEvent(ev))
			}
		})
		if out == nil {
			return nil, err
		}
		return out.result(&RunResult{Title: job.title}), err
	}
	wait := args.Wait
	parent := ctx
	if !wait {
		parent = rn.deps.Work.Context()
	}
	runCtx, cancel := context.WithCancel(parent)
	id, err := rn.table.add(job.title, cancel)
	if err != nil {
		cancel()
		return nil, err
	}
	res := &RunResult{Run: id, Title: job.title}
	finish := func() (*runOutput, error) {
		defer cancel()
		defer rn.table.remove(id)
		return rn.execute(runCtx, id, job, wait)
	}
	if wait {
		out, err := finish()
		if ctx.Err() != nil {
			// The request was cancelled ($/cancelRequest): the run
			// stopped, its progress and report said what it had.
			return nil, fmt.Errorf("%s: %w", job.title, ctx.Err())
		}
		if out == nil {
			return nil, err
		}
		return out.result(res), nil
	}
	if !rn.deps.Work.Go(func() { _, _ = finish() }) {
		cancel()
		rn.table.remove(id)
		return nil, session.ErrShutDown
	}
	return res, nil
}

// showTimeout bounds what the end of a run waits for the editor (opening
// a report), whatever happened to the run.
const showTimeout = 30 * time.Second

// execute runs a job with its progress: the progress's cancel cancels
// ctx, each output line goes to the log in the order it came, status
// lines to the progress. At the end the progress says how it ended and
// where the report is, every report opens (or a message names it), and a
// run that ended with an error says so in a message (a run waited for
// without a result answers with its error instead).
func (rn *Runs) execute(ctx context.Context, id string, job Job, wait bool) (*runOutput, error) {
	prog := rn.deps.Notify.StartProgress(ctx, "torchlsp: "+job.kind, true)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cancelled := prog.Cancelled(); cancelled != nil {
		go func() {
			select {
			case <-cancelled:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	prog.Report(fmt.Sprintf("run %s: %s", id, job.title), -1)
	// The variants report from their own goroutines: one line at a time,
	// so that each variant's lines reach the log in the order printed.
	// Lines still arrive while a cancelled run stops: they are sent.
	logCtx := context.WithoutCancel(ctx)
	var mu sync.Mutex // guards the log's order
	sink := func(ev repro.Event) {
		mu.Lock()
		defer mu.Unlock()
		rn.deps.Notify.LogMessage(logCtx, api.MessageLog, fmt.Sprintf("[%s %s %s] %s", ev.Target, ev.Variant, ev.Stream, ev.Line))
		if ev.Stream == "status" {
			prog.Report(job.status(ev), -1)
		}
	}
	out, err := job.work(ctx, sink)
	show, cancelShow := context.WithTimeout(logCtx, showTimeout)
	defer cancelShow()
	if out == nil {
		prog.End("failed: " + errText(err))
		if !wait {
			rn.deps.Notify.ShowMessage(show, api.MessageError, fmt.Sprintf("torchlsp %s (run %s): %s", job.name, id, errText(err)))
		}
		return nil, err
	}
	end := "done"
	files := reportFiles(out.reports...)
	if len(files) > 0 {
		end += ": " + strings.Join(files, ", ")
	}
	prog.End(end)
	// The report is opened even when the run was cancelled: it holds what
	// ran before.
	for _, p := range files {
		api.OpenResult(show, rn.deps.Notify, job.report, p)
	}
	if err != nil {
		rn.deps.Notify.ShowMessage(show, api.MessageWarning, "torchlsp "+job.name+": "+err.Error())
	}
	return out, err
}

// reportFiles are the report files of runs that kept their files.
func reportFiles(reports ...repro.Report) []string {
	var out []string
	for _, r := range reports {
		if r.Dir != "" {
			out = append(out, filepath.Join(r.Dir, "report.md"))
		}
	}
	return out
}

// runFiles gathers what a run of the user's own code sends: the
// workspace's files (none when workdir names a checkout on the target).
// What was left out is said on the run's stream.
func (rn *Runs) runFiles(ctx context.Context, place runPlace, own ownCode, workdir string, allowHome bool, sink func(repro.Event)) ([]repro.File, error) {
	if workdir != "" {
		return nil, nil
	}
	b, err := rn.ownBundle(ctx, place, own, allowHome)
	if err != nil {
		return nil, err
	}
	if l := b.LeftOut.String(); l != "" {
		sink(repro.Event{Stream: "status", Line: l})
	}
	return b.Files, nil
}

// callerOf is what the caller of a run gave beyond the wire's
// arguments; nothing for an editor.
func callerOf(args api.RunArgs) api.RunCaller {
	if args.Caller == nil {
		return api.RunCaller{}
	}
	return *args.Caller
}

func errText(err error) string {
	if err == nil {
		return "no result"
	}
	return err.Error()
}

// errNoDocument fails a run of a document that is not open.
var errNoDocument = errors.New("the document is not open")
