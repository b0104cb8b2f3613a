package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// The bounds the server keeps while a user edits large documents: the
// training log of a running job, which VS Code opens for its links, and a
// broken Python file, each near the 4 MiB the server analyses, changed 20
// times 0.3 s apart. On 83211fb the same session peaked at 2.4–4.5 GB and
// used 46–77 s of CPU: every version past the debounce got a parse of its
// own, and the log was parsed as Python.
const (
	largeDocPeakRSSMB = 250              // the server's VmHWM over the whole session (99–128 MB measured; before parses stopped at syntax.MemoryLimit, 620 MB: one parse of the broken file alone took 580 MB of tree-sitter's C memory)
	largeDocCPU       = 30 * time.Second // 5.1–6.1 s measured
	largeDocEdits     = 20
	largeDocEditEvery = 300 * time.Millisecond
)

// largeLog is a training log of size bytes: progress lines and the
// tracebacks a failing job repeats.
func largeLog(size int) string {
	const chunk = "step 1200 loss 2.3141 lr 3.0e-04 tokens/s 41210\n" +
		"Traceback (most recent call last):\n" +
		"  File \"/root/train.py\", line 24, in <module>\n" +
		"    out = compiled(x)\n" +
		"  File \"/root/venv/lib/python3.12/site-packages/torch/_inductor/cudagraph_trees.py\", line 359, in get_obj\n" +
		"    assert torch._C._is_key_in_tls(attr_name)\n" +
		"AssertionError\n"
	return strings.Repeat(chunk, size/len(chunk)+1)[:size]
}

// brokenPython is size bytes of Python that imports torch and is broken
// on every other line, so tree-sitter's error recovery works all through.
func brokenPython(size int) string {
	const chunk = "x = torch.compile(f, mode=\n    y = [(]\ndef g(a, b:\n  return {a: [b\n"
	return "import torch\n" + strings.Repeat(chunk, size/len(chunk)+1)[:size-len("import torch\n")]
}

func TestLargeDocumentsStayBounded(t *testing.T) {
	t.Parallel()
	needPython(t)
	bin := buildServer(t)
	ws, file, text := hostileWorkspace(t)
	env, _ := xdgEnv(t)
	site := filepath.Join(repoRoot(t), "testdata", "site")
	p := serveProcess(t, bin, ws, targetSettings(t, debianPython, map[string]string{"PYTHONPATH": site}), env)
	pid := p.Cmd.Process.Pid

	train := lsptest.FileURI(file)
	if err := p.DidOpen(train, "python", text); err != nil {
		t.Fatal(err)
	}
	docs := []struct{ uri, language, text, tail string }{
		{lsptest.FileURI(filepath.Join(ws, "train.log")), "log", largeLog(3<<20 + 1<<19), largeLog(16 << 10)},
		{lsptest.FileURI(filepath.Join(ws, "broken.py")), "python", brokenPython(3<<20 + 1<<19), brokenPython(16 << 10)[len("import torch\n"):]},
	}
	for _, d := range docs {
		if err := p.DidOpen(d.uri, d.language, d.text); err != nil {
			t.Fatal(err)
		}
	}

	// Other requests are answered all through the edits: a hover on the
	// training script every edit, each within its own deadline.
	var wg sync.WaitGroup
	errs := make(chan error, largeDocEdits)
	hoverAt := strings.Index(text, "AdamW(model")
	line := strings.Count(text[:hoverAt], "\n")
	col := hoverAt - strings.LastIndex(text[:hoverAt], "\n") - 1

	lines := make([]int, len(docs))
	for i, d := range docs {
		lines[i] = strings.Count(d.text, "\n")
	}
	for v := int32(2); v < 2+largeDocEdits; v++ {
		for i, d := range docs {
			end := lsptest.Position{Line: uint32(lines[i]), Character: 0}
			if err := p.DidChange(d.uri, v, lsptest.Change{Range: &lsptest.Range{Start: end, End: end}, Text: d.tail}); err != nil {
				t.Fatal(err)
			}
			lines[i] += strings.Count(d.tail, "\n")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := testContext(t, 20*time.Second)
			if _, err := p.Hover(ctx, train, uint32(line), uint32(col)); err != nil {
				errs <- fmt.Errorf("hover during version %d: %w", v, err)
			}
		}()
		time.Sleep(largeDocEditEvery) // the user's typing, not a wait for the server
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// The last version of each is checked and published; the broken file
	// parses past its memory bound, and its note says so.
	ctx := testContext(t, 2*time.Minute)
	for _, d := range docs {
		var ok func(lsptest.Diagnostics) bool
		if d.language == "python" {
			ok = func(ds lsptest.Diagnostics) bool {
				return len(ds.Diagnostics) == 1 && strings.Contains(ds.Diagnostics[0].Message, "stopped at the bound of its memory")
			}
		}
		if _, err := p.AwaitAll(ctx, lsptest.DiagnosticsAt(d.uri, 1+largeDocEdits, ok)); err != nil {
			t.Fatalf("%s: no diagnostics for the last version: %v", d.language, err)
		}
	}
	rss, cpu := peakRSSMB(t, pid), processCPU(t, pid)
	t.Logf("serve over %d edits of a %d MiB log and a %d MiB broken .py: peak RSS %.0f MB, CPU %v", largeDocEdits, 4, 4, rss, cpu)
	if rss > largeDocPeakRSSMB {
		t.Errorf("peak RSS %.0f MB, over the bound of %d MB", rss, largeDocPeakRSSMB)
	}
	if cpu > largeDocCPU {
		t.Errorf("CPU %v, over the bound of %v", cpu, largeDocCPU)
	}
}

// processCPU is the user and system CPU time a live process has used.
func processCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skipf("no /proc stat: %v", err)
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the line, in clock ticks (100 a second).
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
