package repro

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/torchlsp/torchlsp/remote"
)

// Defaults for RunOptions fields left zero.
const (
	DefaultTimeout  = 120 * time.Second
	DefaultGrace    = 2 * time.Second
	defaultParallel = 2
	stderrTailLines = 20
	maxLineBytes    = 1 << 20
)

// Event is one line a variant printed, or a status line from the runner.
type Event struct {
	Target  string
	Variant string
	Stream  string // "stdout", "stderr" or "status"
	Line    string
}

// RunOptions tunes Run and RunMany.
type RunOptions struct {
	// Parallel is how many variants of one target run at once; by default
	// min(number of variants, GPUs), with GPUs 2 when unknown.
	Parallel int
	GPUs     int
	// Timeout bounds each variant; DefaultTimeout when 0.
	Timeout time.Duration
	// Grace is how long a timed-out variant has between SIGTERM and
	// SIGKILL, where the target can send SIGTERM; DefaultGrace when 0.
	Grace time.Duration
	// Workspace is the workspace root the user chose; each run's files go
	// under <Workspace>/.torchlsp/repros/.
	Workspace string
	// StateDir, used when Workspace is empty, is a directory of
	// torchlsp's own (under its cache) where each run's files go, in
	// <StateDir>/repros/: a file outside any workspace root never gets a
	// .torchlsp beside it. Both empty keep no files.
	StateDir string
	// WorkloadReason says in the report which workload ran and why (the
	// user's code, or the stand-in because the user's could not run).
	WorkloadReason string
	// MapFrame links target paths in the saved report.md; may be nil.
	MapFrame func(targetPath string, line int) (localURL string, ok bool)
}

// TargetRun is one target's share of RunMany.
type TargetRun struct {
	Target      remote.Target
	Interpreter remote.Interpreter
	Variants    []Variant
}

// RunMany runs several targets at once. A target that fails does not stop
// the others; the reports come back in the order of runs, with the
// targets' errors joined.
func RunMany(ctx context.Context, runs []TargetRun, opts RunOptions, sink func(Event)) ([]Report, error) {
	reports := make([]Report, len(runs))
	errs := make([]error, len(runs))
	sink = serialized(sink)
	p := pool.New().WithMaxGoroutines(max(1, len(runs)))
	for i, r := range runs {
		p.Go(func() {
			reports[i], errs[i] = run(ctx, r.Target, r.Interpreter, r.Variants, opts, sink)
			if errs[i] != nil && r.Target != nil {
				errs[i] = fmt.Errorf("target %s: %w", r.Target.Name(), errs[i])
			}
		})
	}
	p.Wait()
	return reports, errors.Join(errs...)
}

// Run runs each variant as its own process on t, with in, and
// collects their results. sink receives every output line as it arrives,
// one call at a time; it may be nil. The error is about the run as a
// whole (bad variants, no repro directory, nothing started, cancelled);
// each variant's own failure is in its result.
func Run(ctx context.Context, t remote.Target, in remote.Interpreter, variants []Variant, opts RunOptions, sink func(Event)) (Report, error) {
	return run(ctx, t, in, variants, opts, serialized(sink))
}

func run(ctx context.Context, t remote.Target, in remote.Interpreter, variants []Variant, opts RunOptions, sink func(Event)) (Report, error) {
	started := time.Now().UTC()
	if t == nil {
		return Report{}, errors.New("repro: no target")
	}
	rep := Report{Target: t.Name(), Started: started, WorkloadReason: opts.WorkloadReason}
	if err := checkVariants(variants); err != nil {
		return rep, err
	}
	opts = opts.withDefaults(len(variants))

	var dir *runDir
	if opts.Workspace != "" || opts.StateDir != "" {
		d, err := newRunDir(opts.Workspace, opts.StateDir, t.Name(), started)
		if err != nil {
			return rep, err
		}
		defer d.close()
		dir = d
		rep.Dir = d.path
	}

	results := make([]VariantResult, len(variants))
	// The first variant that finds the target unable to run any of them
	// (no torch.compile, no GPU for the CUDA graphs asked for) speaks for
	// those not started yet: each would start an interpreter and import
	// torch to say the same.
	var targetWide atomic.Pointer[string]
	p := pool.New().WithMaxGoroutines(opts.Parallel)
	for i, v := range variants {
		p.Go(func() {
			if why := targetWide.Load(); why != nil {
				results[i] = VariantResult{Variant: v.Name, ExitCode: -1, Unsupported: *why, UnsupportedTarget: true}
				sink(Event{Target: t.Name(), Variant: v.Name, Stream: "status", Line: "not run: the target can run no variant (above)"})
				return
			}
			results[i] = runVariant(ctx, t, in, v, opts, dir, sink)
			if r := results[i]; r.UnsupportedTarget && r.Unsupported != "" {
				targetWide.CompareAndSwap(nil, &r.Unsupported)
			}
		})
	}
	p.Wait()
	rep.Variants = results
	rep.fillSummary()

	var errs []error
	if dir != nil {
		if err := dir.write("report.md", []byte(rep.Markdown(opts.MapFrame))); err != nil {
			errs = append(errs, err)
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("repro on %s: %w", t.Name(), err))
	} else if len(results) > 0 && allFailedToStart(results) {
		errs = append(errs, fmt.Errorf("repro on %s: no variant started: %s", t.Name(), results[0].Failure))
	}
	return rep, errors.Join(errs...)
}

func (o RunOptions) withDefaults(variants int) RunOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Parallel <= 0 {
		gpus := o.GPUs
		if gpus <= 0 {
			gpus = defaultParallel
		}
		o.Parallel = max(1, min(variants, gpus))
	}
	return o
}

func checkVariants(variants []Variant) error {
	seen := make(map[string]bool)
	for _, v := range variants {
		if !variantName.MatchString(v.Name) {
			return fmt.Errorf("repro: variant name %q must match %s", v.Name, variantName)
		}
		if seen[v.Name] {
			return fmt.Errorf("repro: variant %q given twice", v.Name)
		}
		seen[v.Name] = true
	}
	return nil
}

const startFailurePrefix = "start: "

func allFailedToStart(results []VariantResult) bool {
	for _, r := range results {
		if !strings.HasPrefix(r.Failure, startFailurePrefix) {
			return false
		}
	}
	return true
}

// serialized makes sink safe to call from many goroutines.
func serialized(sink func(Event)) func(Event) {
	if sink == nil {
		return func(Event) {}
	}
	var mu sync.Mutex
	return func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		sink(e)
	}
}

// runVariant runs one variant to completion, timeout or cancellation.
func runVariant(ctx context.Context, t remote.Target, in remote.Interpreter, v Variant, opts RunOptions, dir *runDir, sink func(Event)) VariantResult {
	status := func(format string, args ...any) {
		sink(Event{Target: t.Name(), Variant: v.Name, Stream: "status", Line: fmt.Sprintf(format, args...)})
	}
	res := VariantResult{Variant: v.Name, ExitCode: -1}
	var saveErrs []error
	var stdoutFile, stderrFile io.Writer = io.Discard, io.Discard
	if dir != nil {
		saveErrs = append(saveErrs, dir.write(v.Name+".py", []byte(v.Script)))
		for _, s := range []struct {
			ext string
			w   *io.Writer
		}{{".stdout", &stdoutFile}, {".stderr", &stderrFile}} {
			f, err := dir.create(v.Name + s.ext)
			if err != nil {
				saveErrs = append(saveErrs, err)
				continue
			}
			defer func() { saveErrs = append(saveErrs, f.Close()) }()
			*s.w = f
		}
	}
	defer func() {
		if dir == nil {
			return
		}
		data, err := json.MarshalIndent(res, "", "  ")
		if err == nil {
			err = dir.write(v.Name+".json", append(data, '\n'))
		}
		if err := errors.Join(append(saveErrs, err)...); err != nil {
			status("saving files: %v", err)
		}
	}()

	begin := time.Now()
	defer func() { res.Wall = time.Since(begin).Seconds() }()
	if err := ctx.Err(); err != nil {
		res.Failure = "cancelled"
		status("cancelled before start")
		return res
	}
	varCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	// The process outlives varCtx by the grace period: the watcher below
	// ends it, SIGTERM first where the target can.
	startCtx, stopStart := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStart()
	proc, err := t.Start(startCtx, remote.ProgramCommand(in, "torchlsp-repro-"+v.Name+".py"))
	if err != nil {
		res.Failure = startFailurePrefix + err.Error()
		status("%s", res.Failure)
		return res
	}
	status("started")

	// The script goes in framed as the bootstrap expects; a process that
	// dies early makes the write fail, which matters only if no result
	// comes back. stdin then stays open until the process ends: the
	// script takes its end as the sign that this runner, or the
	// connection to it, is gone, and stops (repro.py's watch_runner).
	var sendErr error
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		w := proc.Stdin()
		sendErr = remote.SendProgram(w, []byte(v.Script))
		if sendErr == nil && len(v.Input) > 0 {
			if _, err := w.Write(v.Input); err != nil {
				sendErr = fmt.Errorf("send workspace files: %w", err)
			}
		}
	}()

	exited := make(chan struct{})
	killed := make(chan struct{})
	stoppedByRunner := false // written before killed is closed
	go func() {
		defer close(killed)
		select {
		case <-exited:
			return
		case <-varCtx.Done():
		}
		stoppedByRunner = true
		if term, ok := proc.(remote.Terminator); ok {
			term.Terminate(opts.Grace)
		}
		proc.Kill()
	}()

	// out is shared with the reader goroutines; once stopped is set they
	// drop whatever they still read.
	var out struct {
		sync.Mutex
		stopped   bool
		result    VariantResult
		gotResult bool
		resultErr error
		tail      []string
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		readLines(proc.Stdout(), func(line string) {
			out.Lock()
			defer out.Unlock()
			if out.stopped {
				return
			}
			io.WriteString(stdoutFile, line+"\n")
			if r, ok, err := parseResultLine(line); ok {
				out.result, out.gotResult, out.resultErr = r, err == nil, err
			}
			sink(Event{Target: t.Name(), Variant: v.Name, Stream: "stdout", Line: line})
		})
	}()
	go func() {
		defer readers.Done()
		readLines(proc.Stderr(), func(line string) {
			out.Lock()
			defer out.Unlock()
			if out.stopped {
				return
			}
			io.WriteString(stderrFile, line+"\n")
			out.tail = append(out.tail, line)
			if len(out.tail) > stderrTailLines {
				out.tail = out.tail[1:]
			}
			sink(Event{Target: t.Name(), Variant: v.Name, Stream: "stderr", Line: line})
		})
	}()

	waitErr := proc.Wait()
	close(exited)
	proc.Stdin().Close()
	<-killed
	drained := drainReaders(&readers, proc, opts.Grace)
	out.Lock()
	out.stopped = true
	result, gotResult, resultErr, tail := out.result, out.gotResult, out.resultErr, out.tail
	out.Unlock()
	res.ExitCode = exitCode(waitErr)
	if !drained {
		status("output still open after the process ended; stopped reading it")
	}
	select {
	case <-sent:
	case <-time.After(opts.Grace):
		sent = nil // still blocked: the target never read its stdin
	}

	timedOut := stoppedByRunner && ctx.Err() == nil
	cancelled := stoppedByRunner && ctx.Err() != nil
	switch {
	case gotResult:
		result.ExitCode = res.ExitCode
		res = result
		if timedOut || cancelled {
			res.Notes = append(res.Notes, "the process was stopped after it reported")
		}
	case timedOut:
		res.Failure = fmt.Sprintf("timed out after %s s", strconv.FormatFloat(opts.Timeout.Seconds(), 'f', -1, 64))
	case cancelled:
		res.Failure = "cancelled"
	case resultErr != nil:
		res.Failure = resultErr.Error()
	case res.ExitCode == -1 && waitErr != nil:
		// No exit status came back: the connection (or a hop) ended
		// first. The script stops on its own when that happens.
		res.Failure = "the connection to the target ended during the run: " + waitErr.Error()
	default:
		res.Failure = fmt.Sprintf("exited with status %d without a result", res.ExitCode)
		if len(tail) > 0 {
			res.Failure += ": " + strings.Join(tail, "\n")
		} else if sent != nil && sendErr != nil {
			res.Failure += fmt.Sprintf(" (send script: %v)", sendErr)
		}
	}
	res.settle()
	switch {
	case res.Failure != "":
		status("%s", firstLine(res.Failure))
	case res.Unsupported != "":
		status("not run: %s", firstLine(res.Unsupported))
	case res.OK:
		status("ok: %d/%d right", res.Right, res.Calls)
	default:
		status("failed: %d wrong, %d raised, of %d calls", res.Wrong, res.ErrorCount(), res.Calls)
	}
	return res
}

// drainReaders waits for the output readers and reports whether they
// finished. Something the variant started may hold its pipes open after
// it exits: its process group is killed, the pipes are closed where they
// can be, and after that the readers are abandoned.
func drainReaders(readers *sync.WaitGroup, proc remote.Process, grace time.Duration) bool {
	done := make(chan struct{})
	go func() {
		readers.Wait()
		close(done)
	}()
	wait := func() bool {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-done:
			return true
		case <-timer.C:
			return false
		}
	}
	if wait() {
		return true
	}
	proc.Kill()
	if wait() {
		return true
	}
	for _, r := range []io.Reader{proc.Stdout(), proc.Stderr()} {
		if c, ok := r.(io.Closer); ok {
			c.Close()
		}
	}
	return wait()
}

// readLines calls fn for each line of r, without its line ending. Lines
// longer than maxLineBytes are cut.
func readLines(r io.Reader, fn func(string)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long) < maxLineBytes {
				long = append(long, chunk...)
			}
			continue
		}
		if len(chunk) > 0 || len(long) > 0 {
			line := chunk
			if len(long) > 0 {
				line = append(long, chunk...)
				long = nil
			}
			if len(line) > maxLineBytes {
				line = line[:maxLineBytes]
			}
			fn(strings.TrimRight(string(line), "\r\n"))
		}
		if err != nil {
			// Keep draining after an error other than EOF is pointless.
			return
		}
	}
}

// exitCode extracts the exit status from a Wait error: 0 for nil, -1 when
// the process ended without one (a signal, a lost connection).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	var es interface{ ExitStatus() int }
	if errors.As(err, &es) {
		return es.ExitStatus()
	}
	return -1
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
