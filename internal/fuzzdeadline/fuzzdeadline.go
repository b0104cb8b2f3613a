// Package fuzzdeadline gives every input of a fuzz target a deadline.
//
// Go's fuzzer runs an input for as long as it takes: a slow input shows
// only as an exec count that stands still, and nothing says which input
// it is. Every fuzz target of the repository makes a Deadline before
// f.Fuzz and calls Start first thing in its fuzz function:
//
//	deadline := fuzzdeadline.New(f)
//	f.Fuzz(func(t *testing.T, src []byte, line int) {
//		deadline.Start(t, src, line)
//		...
//	})
//
// While fuzzing (in a fuzz worker process), an input that runs longer
// than its deadline (2 s by default; TORCHLSP_FUZZ_DEADLINE sets it, 0
// turns it off) ends the worker: the watchdog writes the input and where
// it was (every goroutine's stack) and exits with status 124. The fuzzing
// coordinator then records the input being run as a failing input under
// testdata/fuzz/<Target>/, as for a crash ("fuzzing process hung or
// terminated unexpectedly: exit status 124").
//
// The time an input runs leaves out the time the worker's threads waited
// for a CPU (Linux's schedstat), but never counts less than the CPU time it
// used: on a busy machine a starved worker is not a slow input, while an
// input that computes or blocks counts in full. The report gives the time
// on the clock, the time waited and the CPU time beside it.
//
// The coordinator discards a worker's output, so the report goes to the
// directory TORCHLSP_FUZZ_REPORT names (as overrun-<pid>), or to stderr.
// In that directory each worker also keeps its slowest input's times
// (slowest-<pid>), which scripts/fuzz-smoke.sh prints.
//
// Outside a fuzz worker (go test, which runs the seed corpus as tests)
// Start does nothing: tests assert no timings.
package fuzzdeadline

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// EnvLimit names the variable that sets how long one input may run
	// (a Go duration; 0 turns the deadline off).
	EnvLimit = "TORCHLSP_FUZZ_DEADLINE"
	// EnvReport names the variable naming the directory reports go to.
	EnvReport = "TORCHLSP_FUZZ_REPORT"
	// DefaultLimit is how long one input may run.
	DefaultLimit = 2 * time.Second
	// ExitCode is the worker's exit status when an input ran past its
	// deadline, as timeout(1)'s.
	ExitCode = 124
)

// poll is how often the watchdog looks at the running input.
const poll = 20 * time.Millisecond

// Deadline watches the inputs of one fuzz target in one process.
type Deadline struct {
	target string
	limit  time.Duration // zero: not watching (not a fuzz worker, or off)
	report string        // directory for reports; "" for stderr

	watchOnce sync.Once

	mu        sync.Mutex // guards the fields below
	running   bool       // an input is running
	input     []any      // its values
	startWall time.Time
	startCPU  time.Duration
	startWait time.Duration // waited when it started
	// waited is the time the process's threads have waited for a CPU, as
	// the watchdog last read it: reading it costs a file per thread, too
	// much for every input.
	waited  time.Duration
	slowest times
}

// times are how long an input ran (see elapsed), on the clock, the time
// the worker's threads waited for a CPU meanwhile, and the CPU time it
// used.
type times struct{ ran, wall, waited, cpu time.Duration }

func (t times) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("%v (%v on the clock, while the worker's threads waited %v for a CPU) and used %v of CPU time",
		ms(t.ran), ms(t.wall), ms(t.waited), ms(t.cpu))
}

// New returns the Deadline of f's inputs. It fails f when the
// environment sets a limit that is not a duration.
func New(f *testing.F) *Deadline {
	d := &Deadline{target: f.Name()}
	if !inWorker() {
		return d
	}
	limit, err := Limit()
	if err != nil {
		f.Fatal(err)
	}
	d.limit, d.report = limit, os.Getenv(EnvReport)
	return d
}

// Limit is how long one input may run, as the environment sets it.
func Limit() (time.Duration, error) {
	v := os.Getenv(EnvLimit)
	if v == "" {
		return DefaultLimit, nil
	}
	if v == "0" {
		return 0, nil
	}
	limit, err := time.ParseDuration(v)
	if err != nil || limit < 0 {
		return 0, fmt.Errorf("fuzzdeadline: %s=%q: want a duration such as 2s, or 0 for none", EnvLimit, v)
	}
	return limit, nil
}

// inWorker reports whether this process is a fuzz worker, which runs the
// inputs the fuzzing coordinator sends it.
func inWorker() bool {
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// Start starts the clock of the input t runs, whose values are input
// (the fuzz function's arguments after t); it stops when t's test ends.
func (d *Deadline) Start(t *testing.T, input ...any) {
	if d.limit == 0 {
		return
	}
	d.watchOnce.Do(func() {
		d.waited = waited()
		go d.watch()
	})
	cpu := processCPU()
	d.mu.Lock()
	d.running, d.input = true, input
	d.startWall, d.startCPU, d.startWait = time.Now(), cpu, d.waited
	d.mu.Unlock()
	t.Cleanup(d.stop)
}

// elapsed is how long the running input has run; the caller holds mu.
// Waits are summed over all the process's threads, so they may count more
// than the input's own: its CPU time is the least it ran.
func (d *Deadline) elapsed(cpu time.Duration) times {
	wall, waited, used := time.Since(d.startWall), d.waited-d.startWait, cpu-d.startCPU
	return times{ran: max(wall-waited, used, 0), wall: wall, waited: waited, cpu: used}
}

// stop ends the running input's clock and keeps its times when it is the
// slowest so far.
func (d *Deadline) stop() {
	cpu := processCPU()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.running, d.input = false, nil
	t := d.elapsed(cpu)
	if t.ran <= d.slowest.ran {
		return
	}
	d.slowest = t
	// A new slowest input is rare after the first few (about ln n of n
	// inputs whose times do not grow), so each is written.
	if d.report != "" {
		line := fmt.Sprintf("%s %d %d %d\n", d.target, t.ran.Nanoseconds(), t.wall.Nanoseconds(), t.cpu.Nanoseconds())
		_ = os.WriteFile(filepath.Join(d.report, "slowest-"+strconv.Itoa(os.Getpid())), []byte(line), 0o644)
	}
}

// watch ends the process when the running input passes its deadline.
func (d *Deadline) watch() {
	for range time.Tick(poll) {
		w, cpu := waited(), processCPU()
		d.mu.Lock()
		d.waited = max(w, d.waited) // a thread that ended takes its share along
		running, input, t := d.running, d.input, d.elapsed(cpu)
		d.mu.Unlock()
		if running && t.ran > d.limit {
			d.overrun(input, t)
		}
	}
}

// overrun reports an input past its deadline and ends the worker.
func (d *Deadline) overrun(input []any, t times) {
	var values strings.Builder
	for _, v := range input {
		fmt.Fprintf(&values, "\t%s\n", quote(v))
	}
	report := fmt.Sprintf("fuzzdeadline: %s: an input has run %v; an input may run %v. The input:\n%s\nWhere it was:\n\n%s",
		d.target, t, d.limit, values.String(), d.stacks())
	fmt.Fprint(os.Stderr, report)
	if d.report != "" {
		_ = os.WriteFile(filepath.Join(d.report, "overrun-"+strconv.Itoa(os.Getpid())), []byte(report), 0o644)
	}
	os.Exit(ExitCode)
}

// maxQuoted is how much of one value a report quotes.
const maxQuoted = 4096

// quote writes v as Go source, as the corpus files do: []byte("...").
func quote(v any) string {
	var kind, text string
	switch v := v.(type) {
	case []byte:
		kind, text = "[]byte", string(v)
	case string:
		kind, text = "string", v
	default:
		return fmt.Sprintf("%T(%v)", v, v)
	}
	cut := ""
	if len(text) > maxQuoted {
		text, cut = text[:maxQuoted], fmt.Sprintf(" (the first %d of %d bytes)", maxQuoted, len(text))
	}
	return fmt.Sprintf("%s(%q)%s", kind, text, cut)
}

// stacks is every goroutine's stack but the watchdog's, those running the
// target's fuzz function first.
func (d *Deadline) stacks() string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var first, rest []string
	for _, g := range strings.Split(strings.TrimSpace(string(buf)), "\n\n") {
		switch {
		case strings.Contains(g, "fuzzdeadline.(*Deadline).watch("):
		case strings.Contains(g, "."+d.target+".func"):
			first = append(first, g)
		default:
			rest = append(rest, g)
		}
	}
	return strings.Join(append(first, rest...), "\n\n") + "\n"
}
