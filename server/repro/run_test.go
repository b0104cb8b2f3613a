package repro

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/remote"
)

func localTarget(t testing.TB, name string) remote.Target {
	t.Helper()
	tg := remote.NewLocal(remote.Spec{Name: name})
	t.Cleanup(func() { tg.Close() })
	return tg
}

// okLine is the result line of a variant that made one right call.
const okLine = `print("TORCHLSP_RESULT " + json.dumps({"variant": VARIANT, "ok": True, "calls": 1, "expected_calls": 1, "right": 1, "wrong": 0, "errors": []}))`

// script builds a test variant from Python lines; VARIANT is its name.
func script(name string, lines ...string) Variant {
	body := "import json, os, signal, subprocess, sys, time\nVARIANT = " + pyStringLiteral(name) + "\n" + strings.Join(lines, "\n") + "\n"
	return Variant{Name: name, Script: body}
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
	onLine func(Event)
}

func (r *recorder) sink(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	if r.onLine != nil {
		r.onLine(e)
	}
}

func (r *recorder) lines(variant, stream string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Variant == variant && e.Stream == stream {
			out = append(out, e.Line)
		}
	}
	return out
}

// waitGone waits, 10 s at most, until no process has marker in its argv.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := await.Gone(ctx, func() []int { return await.Cmdline(marker) }); err != nil {
		out, _ := exec.Command("pgrep", "-af", marker).Output()
		t.Errorf("processes with %s still running: %v\n%s", marker, err, out)
		exec.Command("pkill", "-KILL", "-f", marker).Run()
	}
}

func TestRunStreamsLinesAsTheyArrive(t *testing.T) {
	python := requirePython(t, debianPython)
	gate := filepath.Join(t.TempDir(), "gate")
	v := script("stream",
		"print('one')",
		"print('err one', file=sys.stderr)",
		"deadline = time.time() + 30",
		"while not os.path.exists("+pyStringLiteral(gate)+") and time.time() < deadline: time.sleep(0.01)",
		"print('two' if os.path.exists("+pyStringLiteral(gate)+") else 'never saw the gate')",
		okLine)
	rec := &recorder{onLine: func(e Event) {
		// The script waits for this file, so "two" proves "one" arrived
		// while the process was still running.
		if e.Line == "one" {
			os.WriteFile(gate, nil, 0o600)
		}
	}}
	rep, err := Run(context.Background(), localTarget(t, "local"), remote.Interpreter{Python: python}, []Variant{v}, RunOptions{}, rec.sink)
	if err != nil {
		t.Fatal(err)
	}
	out := rec.lines("stream", "stdout")
	if len(out) != 3 || out[0] != "one" || out[1] != "two" || !strings.HasPrefix(out[2], resultPrefix) {
		t.Errorf("stdout events %q", out)
	}
	if errs := rec.lines("stream", "stderr"); len(errs) != 1 || errs[0] != "err one" {
		t.Errorf("stderr events %q", errs)
	}
	status := rec.lines("stream", "status")
	if len(status) != 2 || status[0] != "started" || status[1] != "ok: 1/1 right" {
		t.Errorf("status events %q", status)
	}
	if r := rep.Variants[0]; !r.OK || r.ExitCode != 0 {
		t.Errorf("result %+v", r)
	}
}

func TestRunVariantFailures(t *testing.T) {
	python := requirePython(t, debianPython)
	tests := []struct {
		name    string
		lines   []string
		timeout time.Duration
		want    string
		marker  bool
	}{
		{"exit without result", []string{"print('boom', file=sys.stderr)", "sys.exit(3)"}, 0, "exited with status 3 without a result: boom", false},
		{"bad result line", []string{"print('TORCHLSP_RESULT {nope')"}, 0, "decode result line", false},
		{"timeout kills it and its children", []string{
			"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', MARKER])",
			"print('ready')", "time.sleep(300)"}, time.Second, "timed out after 1 s", true},
		{"SIGTERM ignored", []string{
			"signal.signal(signal.SIGTERM, signal.SIG_IGN)",
			"subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)', MARKER])",
			"print('ready')", "time.sleep(300)"}, time.Second, "timed out after 1 s", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := fmt.Sprintf("torchlsp-repro-test-%d-%s", os.Getpid(), strings.ReplaceAll(tt.name, " ", "-"))
			lines := append([]string{"MARKER = " + pyStringLiteral(marker)}, tt.lines...)
			v := script("v", lines...)
			rep, err := Run(context.Background(), localTarget(t, "local"), remote.Interpreter{Python: python}, []Variant{v},
				RunOptions{Timeout: tt.timeout, Grace: 300 * time.Millisecond}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Variants[0]
			if r.OK || !strings.Contains(r.Failure, tt.want) {
				t.Errorf("failure %q, want %q", r.Failure, tt.want)
			}
			if tt.marker {
				waitGone(t, marker)
			}
		})
	}
}

func TestRunCancelStopsEverything(t *testing.T) {
	python := requirePython(t, debianPython)
	marker := fmt.Sprintf("torchlsp-repro-cancel-%d", os.Getpid())
	var vs []Variant
	for i := range 3 {
		vs = append(vs, script(fmt.Sprintf("sleeper%d", i),
			"signal.signal(signal.SIGTERM, signal.SIG_IGN)",
			"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', "+pyStringLiteral(marker)+"])",
			"print('ready')", "time.sleep(300)"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ready sync.WaitGroup
	ready.Add(len(vs))
	rec := &recorder{onLine: func(e Event) {
		if e.Line == "ready" {
			ready.Done()
		}
	}}
	go func() {
		ready.Wait()
		cancel()
	}()
	begin := time.Now()
	rep, err := Run(ctx, localTarget(t, "local"), remote.Interpreter{Python: python}, vs, RunOptions{Parallel: 3, Timeout: 10 * time.Minute, Grace: 500 * time.Millisecond}, rec.sink)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	// A bound far above the grace period: a run that ignored the
	// cancellation would sleep for minutes.
	if d := time.Since(begin); d > time.Minute {
		t.Errorf("Run returned %v after the start", d)
	}
	for _, r := range rep.Variants {
		if r.Failure != "cancelled" {
			t.Errorf("%s: failure %q, want cancelled", r.Variant, r.Failure)
		}
	}
	waitGone(t, marker)
}

func TestRunManyOneTargetFails(t *testing.T) {
	python := requirePython(t, debianPython)
	runs := []TargetRun{
		{Target: localTarget(t, "broken"), Interpreter: remote.Interpreter{Python: "/nonexistent/bin/python3"}, Variants: []Variant{script("a", okLine)}},
		{Target: localTarget(t, "good"), Interpreter: remote.Interpreter{Python: python}, Variants: []Variant{script("a", okLine), script("b", okLine)}},
	}
	reps, err := RunMany(context.Background(), runs, RunOptions{}, nil)
	if err == nil || !strings.Contains(err.Error(), "target broken") || strings.Contains(err.Error(), "target good") {
		t.Errorf("err = %v, want one about the broken target only", err)
	}
	if len(reps) != 2 {
		t.Fatalf("%d reports", len(reps))
	}
	if r := reps[0].Variants[0]; r.OK || !strings.HasPrefix(r.Failure, "start: ") {
		t.Errorf("broken target: %+v", r)
	}
	for _, r := range reps[1].Variants {
		if !r.OK {
			t.Errorf("good target %s: %+v", r.Variant, r)
		}
	}
}

func TestRunKeepsFiles(t *testing.T) {
	python := requirePython(t, debianPython)
	ws := t.TempDir()
	vs := []Variant{
		script("a", "print('out a')", "print('err a', file=sys.stderr)", okLine),
		script("b", "sys.exit(2)"),
	}
	opts := RunOptions{Workspace: ws}
	first, err := Run(context.Background(), localTarget(t, "gpu/box"), remote.Interpreter{Python: python}, vs, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := readTree(t, first.Dir)
	second, err := Run(context.Background(), localTarget(t, "gpu/box"), remote.Interpreter{Python: python}, vs, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.Dir == second.Dir {
		t.Fatalf("both runs wrote to %s", first.Dir)
	}
	// The runs stay out of the user's source control.
	if ignore, err := os.ReadFile(filepath.Join(ws, ".torchlsp", ".gitignore")); err != nil || !strings.Contains(string(ignore), "\n*\n") {
		t.Errorf(".torchlsp/.gitignore = %q, %v; want one that ignores everything", ignore, err)
	}
	for _, dir := range []string{first.Dir, second.Dir} {
		rel, err := filepath.Rel(filepath.Join(ws, ".torchlsp", "repros"), dir)
		if err != nil || strings.Contains(rel, "/") || !strings.HasSuffix(strings.TrimSuffix(rel, "-2"), "-gpu_box") {
			t.Errorf("run dir %s (rel %s)", dir, rel)
		}
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v mode %v", dir, err, fi.Mode())
		}
		files := readTree(t, dir)
		var names []string
		for n := range files {
			names = append(names, n)
			fi, _ := os.Stat(filepath.Join(dir, n))
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v", n, fi.Mode())
			}
		}
		want := []string{"a.json", "a.py", "a.stderr", "a.stdout", "b.json", "b.py", "b.stderr", "b.stdout", "report.md"}
		if len(names) != len(want) {
			t.Errorf("files %v, want %v", names, want)
		}
		for _, n := range want {
			if _, ok := files[n]; !ok {
				t.Errorf("%s missing from %s", n, dir)
			}
		}
		if string(files["a.stdout"][:6]) != "out a\n" || string(files["a.stderr"]) != "err a\n" || files["a.py"] != nil && string(files["a.py"]) != vs[0].Script {
			t.Errorf("a's files: stdout %q stderr %q", files["a.stdout"], files["a.stderr"])
		}
		if !bytes.Contains(files["b.json"], []byte(`"failure": "exited with status 2 without a result"`)) {
			t.Errorf("b.json: %s", files["b.json"])
		}
		if !bytes.Contains(files["report.md"], []byte("| b | **no result** |")) {
			t.Errorf("report.md:\n%s", files["report.md"])
		}
	}
	after := readTree(t, first.Dir)
	for n, data := range snapshot {
		if !bytes.Equal(after[n], data) {
			t.Errorf("%s changed by the second run", n)
		}
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, dir+"/")] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunRefusesSymlinkEscapes(t *testing.T) {
	python := requirePython(t, debianPython)
	tests := []struct {
		name  string
		setup func(ws, outside string) error
	}{
		{".torchlsp is a link", func(ws, outside string) error { return os.Symlink(outside, filepath.Join(ws, ".torchlsp")) }},
		{"repros is a link", func(ws, outside string) error {
			if err := os.Mkdir(filepath.Join(ws, ".torchlsp"), 0o700); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(ws, ".torchlsp", "repros"))
		}},
		{"repros is a file", func(ws, outside string) error {
			if err := os.Mkdir(filepath.Join(ws, ".torchlsp"), 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(ws, ".torchlsp", "repros"), nil, 0o600)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			if err := tt.setup(ws, outside); err != nil {
				t.Fatal(err)
			}
			_, err := Run(context.Background(), localTarget(t, "local"), remote.Interpreter{Python: python}, []Variant{script("a", okLine)}, RunOptions{Workspace: ws}, nil)
			if err == nil {
				t.Error("Run wrote through a link or onto a file")
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("files written outside the workspace: %v", entries)
			}
		})
	}
	if _, err := Run(context.Background(), localTarget(t, "local"), remote.Interpreter{Python: python}, nil, RunOptions{Workspace: "relative/dir"}, nil); err == nil {
		t.Error("relative workspace accepted")
	}
}

func TestRunRejectsBadVariants(t *testing.T) {
	tg := localTarget(t, "local")
	for _, vs := range [][]Variant{
		{{Name: "../escape", Script: "pass"}},
		{{Name: "", Script: "pass"}},
		{{Name: "a", Script: "pass"}, {Name: "a", Script: "pass"}},
	} {
		if _, err := Run(context.Background(), tg, remote.Interpreter{Python: "python3"}, vs, RunOptions{}, nil); err == nil {
			t.Errorf("variants %v accepted", vs)
		}
	}
}

func BenchmarkReadLines(b *testing.B) {
	var buf bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&buf, "TORCHLSP_PROGRESS {\"done\": %d, \"total\": 1000}\n", i)
	}
	data := buf.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		n := 0
		readLines(bytes.NewReader(data), func(string) { n++ })
		if n != 1000 {
			b.Fatal(n)
		}
	}
}
