package repro

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote"
)

// An entry script is made of three parts, each with several shapes: how
// the function is compiled, where its first call happens, and how the
// code around that call handles what it raises.
var (
	// compileForms bind `compiled`; the torch.compile call is on the
	// form's first line, the one captured.
	compileForms = []struct{ name, code string }{
		{"call", "def step(x):\n    return x * 2 + 1\n\n\ncompiled = torch.compile(step, mode=\"reduce-overhead\")\n"},
		{"decorator", "@torch.compile\ndef compiled(x):\n    return x * 2 + 1\n"},
		{"decorator with arguments", "@torch.compile(mode=\"reduce-overhead\", fullgraph=False)\ndef compiled(x):\n    return x * 2 + 1\n"},
		{"module", "class Step(torch.nn.Module):\n    def forward(self, x):\n        return x * 2 + 1\n\n\ncompiled = torch.compile(Step())\n"},
		// Compiles again inside its first call: the replay runs that compile
		// too, after the capture is over.
		{"lazy", "class Lazy:\n    inner = None\n\n    def __call__(self, x):\n        if self.inner is None:\n            self.inner = torch.compile(lambda t: t * 2 + 1)\n        return self.inner(x)\n\n\ncompiled = torch.compile(Lazy())\n"},
	}
	// handlers wrap the first call in the function that makes it.
	handlers = []struct{ name, code string }{
		{"bare", "    return compiled(torch.ones(4))\n"},
		{"except Exception", "    try:\n        return compiled(torch.ones(4))\n    except Exception as e:\n        print('failed:', e)\n"},
		{"except BaseException", "    try:\n        return compiled(torch.ones(4))\n    except BaseException:\n        print('swallowed')\n"},
		{"bare except and finally", "    try:\n        return compiled(torch.ones(4))\n    except:  # noqa: E722\n        pass\n    finally:\n        print('cleanup')\n"},
	}
	// callers are main()'s body: where call_once first runs.
	callers = []struct{ name, code string }{
		{"main thread", "    call_once()\n"},
		{"thread joined", "    t = threading.Thread(target=call_once)\n    t.start()\n    t.join()\n"},
		{"thread left running", "    threading.Thread(target=call_once, name='server').start()\n"},
		{"daemon thread and an event", "    done = threading.Event()\n    threading.Thread(target=lambda: (call_once(), done.set()), daemon=True).start()\n    done.wait(30)\n"},
		{"Thread subclass", "    class Worker(threading.Thread):\n        def run(self):\n            call_once()\n    w = Worker()\n    w.start()\n    w.join()\n"},
		{"pool submit", "    with ThreadPoolExecutor(max_workers=4) as ex:\n        futures = [ex.submit(call_once) for _ in range(8)]\n        for f in futures:\n            f.result()\n"},
		{"pool map", "    with ThreadPoolExecutor(max_workers=2) as ex:\n        list(ex.map(lambda i: call_once(), range(4)))\n"},
		{"pool result caught", "    ex = ThreadPoolExecutor(max_workers=2)\n    try:\n        ex.submit(call_once).result()\n    except Exception as e:\n        print('worker failed:', e)\n    ex.shutdown()\n"},
		{"asyncio", "    async def go():\n        return call_once()\n    asyncio.run(go())\n"},
		{"asyncio tasks", "    async def one():\n        await asyncio.sleep(0)\n        return call_once()\n    async def go():\n        await asyncio.gather(*(one() for _ in range(3)))\n    asyncio.run(go())\n"},
		{"asyncio.to_thread", "    async def go():\n        return await asyncio.to_thread(call_once)\n    asyncio.run(go())\n"},
		{"run_in_executor", "    async def go():\n        loop = asyncio.get_running_loop()\n        with ThreadPoolExecutor(max_workers=2) as pool:\n            return await loop.run_in_executor(pool, call_once)\n    asyncio.run(go())\n"},
		{"printer thread", "    def chatter():\n        while True:\n            print('serving', flush=True)\n            time.sleep(0.01)\n    threading.Thread(target=chatter, daemon=True).start()\n    threading.Thread(target=call_once).start()\n"},
	}
)

const entryHead = "import asyncio\nimport threading\nimport time\nfrom concurrent.futures import ThreadPoolExecutor\n\nimport torch\n\n\n"

// entryScript writes an entry point of the given shapes; it returns the
// script and the line of its torch.compile call.
func entryScript(form, handler, caller int, guarded bool) (string, int) {
	var b strings.Builder
	b.WriteString(entryHead)
	code := compileForms[form].code
	line := strings.Count(entryHead, "\n") + 1 + strings.Count(code[:strings.LastIndex(code, "torch.compile")], "\n")
	b.WriteString(code)
	b.WriteString("\n\ndef call_once():\n")
	b.WriteString(handlers[handler].code)
	b.WriteString("\n\ndef main():\n")
	b.WriteString(callers[caller].code)
	if guarded {
		b.WriteString("\n\nif __name__ == \"__main__\":\n    main()\n")
	} else {
		b.WriteString("\n\nmain()\n")
	}
	return b.String(), line
}

type captureCase struct {
	name                  string
	form, handler, caller int
	guarded               bool
}

// captureCases covers every caller, every form and every handler at
// least once, and each caller with two forms and two handlers.
func captureCases() []captureCase {
	var out []captureCase
	for c := range callers {
		for k := range 2 {
			cc := captureCase{
				form:    (c + k) % len(compileForms),
				handler: (c + 2*k) % len(handlers),
				caller:  c,
				guarded: (c+k)%2 == 0,
			}
			guard := "top level"
			if cc.guarded {
				guard = "__main__"
			}
			cc.name = fmt.Sprintf("%s, %s, %s, %s", callers[c].name, compileForms[cc.form].name, handlers[cc.handler].name, guard)
			out = append(out, cc)
		}
	}
	return out
}

// TestCaptureShapes runs generated entry points through the real script
// on Debian's torch 1.13: wherever the first call happens (a thread, a
// pool worker, a coroutine, under __main__ or not) and whatever the code
// around it catches, the call is captured and replayed, and nothing of
// the capture's machinery reaches the result.
func TestCaptureShapes(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	if testing.Short() {
		t.Skip("starts an interpreter per shape")
	}
	for _, tc := range captureCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, line := entryScript(tc.form, tc.handler, tc.caller, tc.guarded)
			r := runCapture(t, python, src, line, 30*time.Second)
			raw, _ := json.Marshal(r)
			if strings.Contains(string(raw), "_Captured") || strings.Contains(string(raw), "CapturedCall") {
				t.Errorf("the capture's own names reach the result: %s", raw)
			}
			if !r.OK || r.Inputs == nil || !strings.HasPrefix(r.Inputs.Source, "captured") || len(r.Inputs.Values) == 0 || r.Inputs.Values[0] != "arg 0: float32[4] cpu" {
				t.Errorf("want the first call captured and replayed, got %s\nentry:\n%s", raw, src)
			}
		})
	}
}

// A capture that cannot happen says why in plain words.
func TestCaptureRefused(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	for _, tc := range []struct {
		name, body string
		want       string
	}{
		{"never called", "def main():\n    pass\n\n\nmain()\n", "never called the torch.compile at serve.py:%d in this process"},
		{"raises first", "def main():\n    raise ValueError('no config file')\n\n\nmain()\n", "the entry point serve.py raised ValueError before it called the torch.compile at serve.py:%d: no config file"},
		{"exits first", "import sys\nsys.exit(2)\n", "(it exited (2)) never called"},
		{"called in another process", "import multiprocessing\n\n\ndef main():\n    p = multiprocessing.get_context('fork').Process(target=lambda: compiled(torch.ones(4)))\n    p.start()\n    p.join()\n\n\nif __name__ == '__main__':\n    main()\n", "never called the torch.compile at serve.py:%d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			head, line := entryScript(0, 0, 0, true)
			head = head[:strings.Index(head, "\n\ndef call_once")] + "\n\n\n"
			r := runCapture(t, python, head+tc.body, line, 10*time.Second)
			raw, _ := json.Marshal(r)
			want := tc.want
			if strings.Contains(want, "%d") {
				want = fmt.Sprintf(want, line)
			}
			if r.OK || len(r.Errors) != 1 || r.Errors[0].Type != "SetupError" || !strings.Contains(r.Errors[0].Message, want) {
				t.Errorf("want a SetupError saying %q, got %s", want, raw)
			}
			if strings.Contains(string(raw), "_Captured") {
				t.Errorf("the capture's own names reach the result: %s", raw)
			}
		})
	}
}

// runCapture runs the main-thread variant on the entry point src, whose
// torch.compile call is at line.
func runCapture(t *testing.T, python, src string, line int, timeout time.Duration) VariantResult {
	t.Helper()
	vs, err := Generate(Spec{
		StandIn: true, CallsPerThread: 2, Variants: []string{VariantMainThread},
		Files: []File{{Path: "serve.py", Data: []byte(src)}}, Entry: "serve.py",
		CaptureFile: "serve.py", CaptureLines: [2]int{line, line + 1}, CaptureTimeout: timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), localTarget(t, "local"), remote.Interpreter{Python: python}, vs, RunOptions{Parallel: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Variants[0]
	if r.Failure != "" {
		t.Fatalf("no result: %s", r.Failure)
	}
	return r
}

// TestCaptureLeavesNothingBehind replays, in a repro and in explain, an
// object that compiles again when it is called: after the capture,
// torch.compile is the target's own again (here, where torch 1.13 has
// none, the pass-through the stand-in runs with), so the replay runs and
// no capture machinery shows in the result.
func TestCaptureLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	lazy := -1
	for i, f := range compileForms {
		if f.name == "lazy" {
			lazy = i
		}
	}
	src, line := entryScript(lazy, 0, 1, true)
	r := runCapture(t, python, src, line, 30*time.Second)
	raw, _ := json.Marshal(r)
	if !r.OK || strings.Contains(string(raw), "_Captured") {
		t.Errorf("repro: want the lazy object replayed, got %s", raw)
	}

	v, err := GenerateExplain(Spec{StandIn: true, Files: []File{{Path: "serve.py", Data: []byte(src)}}, Entry: "serve.py",
		CaptureFile: "serve.py", CaptureLines: [2]int{line, line + 1}, CaptureTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Explain(context.Background(), localTarget(t, "local"), remote.Interpreter{Python: python}, v, RunOptions{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(rep)
	md := rep.ExplainMarkdown(nil)
	if ev := rep.Variants[0]; len(ev.Errors) != 0 || ev.Explain == nil || strings.Contains(string(raw)+md, "_Captured") {
		t.Errorf("explain: want the lazy object explained, got %s\n%s", raw, md)
	}
}

// TestUnworkableTorch runs every variant, and explain, on a target whose
// torch is a stub (the editor tests' fixture: torch.compile, no
// torch.cuda): the report is one sentence saying why nothing ran, not a
// table of variants each failing in setup.
func TestUnworkableTorch(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	site, err := filepath.Abs("../../editors/testdata/site")
	if err != nil {
		t.Fatal(err)
	}
	in := remote.Interpreter{Python: python, Env: map[string]string{"PYTHONPATH": site}}
	vs, err := Generate(Spec{Mode: "reduce-overhead", CallsPerThread: 2})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), localTarget(t, "local"), in, vs, RunOptions{Parallel: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "the torch at " + filepath.Join(site, "torch") + " (version 2.11.0) is not a working PyTorch: it has no torch.cuda"
	for _, v := range rep.Variants {
		if v.OK || len(v.Errors) != 0 || !strings.Contains(v.Unsupported, want) {
			t.Errorf("%s: want %q alone, got unsupported %q, errors %+v, failure %q", v.Variant, want, v.Unsupported, v.Errors, v.Failure)
		}
	}
	if s := rep.Summary(); !strings.HasPrefix(s, "Nothing ran: "+want) || strings.Count(s, want) != 1 {
		t.Errorf("summary %q: want one sentence", s)
	}
	if md := rep.Markdown(nil); strings.Contains(md, "| Variant") || strings.Contains(md, "AttributeError") || strings.Count(md, want) != 1 {
		t.Errorf("report: want the sentence and no table:\n%s", md)
	}

	ev, err := GenerateExplain(Spec{Files: []File{{Path: "serve.py", Data: []byte("import torch\n\ncompiled = torch.compile(abs)\ncompiled(1)\n")}},
		Entry: "serve.py", CaptureFile: "serve.py", CaptureLines: [2]int{3, 3}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Explain(context.Background(), localTarget(t, "local"), in, ev, RunOptions{}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "AttributeError") {
		t.Errorf("explain: want %q, got %v", want, err)
	}
}

// TestReproExitsCleanly replays an entry point whose threads go on
// printing (a server's log, daemon threads and a thread it never joins)
// while every variant runs and ends: no variant may end in an error of
// the interpreter's shutdown ("Fatal Python error: _enter_buffered_busy:
// could not acquire lock for <_io.BufferedWriter name='<stdout>'> at
// interpreter shutdown, possibly due to daemon threads").
func TestReproExitsCleanly(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	const entry = `import sys
import threading

import torch


def step(x):
    return x * 2 + 1


compiled = torch.compile(step)


def chatter(stream, n):
    line = "request served " + "." * 4000 + "\n"
    while True:
        stream.write(line)


def main():
    for i in range(4):
        threading.Thread(target=chatter, args=(sys.stdout, i), daemon=True).start()
    threading.Thread(target=chatter, args=(sys.stderr, 9), daemon=True).start()
    compiled(torch.ones(4))


if __name__ == "__main__":
    main()
`
	vs, err := Generate(Spec{
		StandIn: true, CallsPerThread: 2,
		Files: []File{{Path: "serve.py", Data: []byte(entry)}}, Entry: "serve.py",
		CaptureFile: "serve.py", CaptureLines: [2]int{11, 11}, CaptureTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var fatal []string
	sink := func(ev Event) {
		if strings.Contains(ev.Line, "Fatal Python error") || strings.Contains(ev.Line, "at interpreter shutdown") {
			fatal = append(fatal, ev.Variant+": "+ev.Line)
		}
	}
	rep, err := Run(context.Background(), localTarget(t, "local"), remote.Interpreter{Python: python}, vs, RunOptions{Parallel: 2}, sink)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Variants {
		if v.Failure != "" || v.Inputs == nil || !strings.HasPrefix(v.Inputs.Source, "captured") {
			t.Errorf("%s: want a result with the captured input, got failure %q, inputs %+v, errors %+v, unsupported %q", v.Variant, v.Failure, v.Inputs, v.Errors, v.Unsupported)
		}
		if v.ExitCode != 0 {
			t.Errorf("%s: exit status %d", v.Variant, v.ExitCode)
		}
	}
	if len(fatal) > 0 {
		t.Errorf("the script's shutdown failed:\n%s", strings.Join(fatal, "\n"))
	}
}
