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
// turns it off), or uses half of it in CPU time, ends the worker: the
// watchdog writes the input and where it was (every goroutine's stack)
// and exits with status 124. The fuzzing coordinator then records the
// input being run as a failing input under testdata/fuzz/<Target>/, as for
// a crash ("fuzzing process hung or terminated unexpectedly: exit status
// 124"). The report gives the CPU time the input used beside the time it
// ran, so that an input slow in the code under test shows apart from a
// worker a busy machine starved.
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
	// CPUShare is the share of its deadline one input may use in CPU
	// time, over all the worker's threads.
	CPUShare = 0.5
	// ExitCode is the worker's exit status when an input ran past a
	// limit, as timeout(1)'s.
	ExitCode = 124
)

// poll is how often the watchdog looks at the running input.
const poll = 20 * time.Millisecond

// Deadline watches the inputs of one fuzz target in one process.
type Deadline struct {
	target    string
	cpu, wall time.Duration // wall zero: not watching (not a fuzz worker, or off)
	report    string        // directory for reports; "" for stderr

	watchOnce sync.Once

	mu          sync.Mutex // guards the fields below
	running     bool       // an input is running
	input       []any      // its values
	startWall   time.Time
	startCPU    time.Duration
	slowestWall time.Duration
	slowestCPU  time.Duration
	written     time.Duration // slowestWall when last written to the report
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
	d.cpu, d.wall = time.Duration(CPUShare*float64(limit)), limit
	d.report = os.Getenv(EnvReport)
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
	if d.wall == 0 {
		return
	}
	d.watchOnce.Do(func() { go d.watch() })
	cpu := processCPU()
	d.mu.Lock()
	d.running, d.input, d.startWall, d.startCPU = true, input, time.Now(), cpu
	d.mu.Unlock()
	t.Cleanup(d.stop)
}

// stop ends the running input's clock and keeps its times when it is the
// slowest so far.
func (d *Deadline) stop() {
	cpu := processCPU()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.running, d.input = false, nil
	wall, used := time.Since(d.startWall), cpu-d.startCPU
	if wall <= d.slowestWall {
		return
	}
	d.slowestWall, d.slowestCPU = wall, used
	// A report only when it changes by a quarter: the slowest input
	// grows often at first, and a write costs more than most inputs.
	if d.report != "" && wall > d.written+d.written/4 {
		d.written = wall
		line := fmt.Sprintf("%s %d %d\n", d.target, wall.Nanoseconds(), used.Nanoseconds())
		_ = os.WriteFile(filepath.Join(d.report, "slowest-"+strconv.Itoa(os.Getpid())), []byte(line), 0o644)
	}
}

// watch ends the process when the running input passes a limit.
func (d *Deadline) watch() {
	for range time.Tick(poll) {
		cpu := processCPU()
		d.mu.Lock()
		running, input, wall, used := d.running, d.input, time.Since(d.startWall), cpu-d.startCPU
		d.mu.Unlock()
		if running && (used > d.cpu || wall > d.wall) {
			d.overrun(input, wall, used)
		}
	}
}

// overrun reports an input past its limit and ends the worker.
func (d *Deadline) overrun(input []any, wall, used time.Duration) {
	var values strings.Builder
	for _, v := range input {
		fmt.Fprintf(&values, "\t%s\n", quote(v))
	}
	report := fmt.Sprintf("fuzzdeadline: %s: an input has run %v and used %v of CPU time; "+
		"one input may use %v of CPU time and run %v. The input:\n%s\nWhere it was:\n\n%s",
		d.target, wall.Round(time.Millisecond), used.Round(time.Millisecond), d.cpu, d.wall, values.String(), d.stacks())
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
