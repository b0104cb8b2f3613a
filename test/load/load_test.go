// Package load drives the real torchlsp server, in process behind the real
// wire, with many pipelined hover and definition requests while the user
// types (a didChange every 10 ms) and a mirror streams Debian's torch in
// the background. It checks that every request is answered exactly once
// and correctly, and reports latency percentiles, heap growth and
// goroutines left after shutdown.
//
//	go test ./test/load -run TestLoad -v -load.requests=100000
package load

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/remote"
)

const debianPython = "/usr/bin/python3"

var (
	requestsFlag = flag.Int("load.requests", envInt("TORCHLSP_LOAD_REQUESTS", 5000), "hover and definition requests to send (TORCHLSP_LOAD_REQUESTS)")
	windowFlag   = flag.Int("load.window", 64, "requests in flight at once")
	reportFlag   = flag.String("load.report", os.Getenv("TORCHLSP_LOAD_REPORT"), "write the figures as JSON to this file (TORCHLSP_LOAD_REPORT)")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func repoRoot(t testing.TB) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// query is one place in train.py and what must be answered there.
type query struct {
	name   string
	method string // textDocument/hover or textDocument/definition
	needle string
	off    int
	// want is a substring of a hover, or "file:line" of a definition
	// (file relative to the mirror's site dir, 0-based line).
	want string
}

var queries = []query{
	{"def compile", "textDocument/definition", "torch.compile(model", 6, "torch/__init__.py:44"},
	{"def Linear", "textDocument/definition", "nn.Linear(4, 4)", 3, "torch/nn/modules/linear.py:18"},
	{"def checkpoint", "textDocument/definition", "checkpoint(self.proj", 0, "torch/utils/checkpoint.py:18"},
	{"def relu after non-ASCII", "textDocument/definition", "act = F.relu", 8, "torch/nn/functional.py:10"},
	{"def AdamW", "textDocument/definition", "AdamW(model", 0, "torch/optim/adamw.py:3"},
	{"def config flag", "textDocument/definition", "triton.cudagraph_trees = False", 7, "torch/_inductor/config.py:24"},
	{"hover compile", "textDocument/hover", "torch.compile(model", 8, "def compile("},
	{"hover Linear", "textDocument/hover", "nn.Linear(4, 4)", 3, "class Linear"},
	{"hover is_available", "textDocument/hover", "torch.cuda.is_available", 11, "def is_available"},
	{"hover add (helper)", "textDocument/hover", "torch.add(", 6, "def add"},
}

// result are the figures of one run.
type result struct {
	Requests       int     `json:"requests"`
	Window         int     `json:"window"`
	Seconds        float64 `json:"seconds"`
	PerSecond      float64 `json:"per_second"`
	P50, P90, P99  float64 // milliseconds
	MaxMs          float64 `json:"max_ms"`
	DidChanges     int64   `json:"did_changes"`
	Mirrors        int64   `json:"mirrors"`
	HeapWarmMB     float64 `json:"heap_after_warmup_mb"`
	HeapEndMB      float64 `json:"heap_end_mb"`
	HeapGrowth     float64 `json:"heap_growth"` // (end - warm) / warm
	GoroutinesBase int     `json:"goroutines_baseline"`
	GoroutinesEnd  int     `json:"goroutines_end"`
}

func heapMB() float64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

func TestLoad(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is missing: run scripts/setup.sh --test", debianPython)
	}
	total, window := *requestsFlag, *windowFlag
	baseGoroutines := runtime.NumGoroutine()

	root := repoRoot(t)
	site := filepath.Join(root, "testdata", "site")
	settings, _ := json.Marshal(map[string]any{
		"defaultTarget": "fixture",
		"targets": map[string]any{
			"fixture": map[string]any{"python": debianPython, "env": map[string]string{"PYTHONPATH": site}},
		},
	})

	env := lsptest.Start(t, lsptest.Config{
		Server:   lsptest.InProcess{Wire: lsp.Options{Version: "load"}},
		CopyFrom: filepath.Join(root, "test", "e2e", "testdata", "workspace"),
		Settings: settings,
	})
	c := env.Client()
	ctx := env.CtxFor(30 * time.Minute)
	uri := env.OpenFile("train.py")
	text := env.Text(uri)

	// Expected answers, checked once against the fixture's known layout.
	type prepared struct {
		query
		params map[string]any
	}
	var qs []prepared
	for _, q := range queries {
		qs = append(qs, prepared{q, map[string]any{
			"textDocument": map[string]string{"uri": uri},
			"position":     env.At(uri, q.needle, q.off),
		}})
	}
	check := func(q prepared, r *lsptest.Response) error {
		if r.Error != nil {
			return fmt.Errorf("%s: error %v", q.name, r.Error)
		}
		if q.method == "textDocument/hover" {
			var h lsptest.Hover
			if err := json.Unmarshal(r.Result, &h); err != nil || !strings.Contains(h.Contents.Value, q.want) {
				return fmt.Errorf("%s: hover %.200s lacks %q (%v)", q.name, r.Result, q.want, err)
			}
			return nil
		}
		var locs []lsptest.Location
		if err := json.Unmarshal(r.Result, &locs); err != nil || len(locs) != 1 {
			return fmt.Errorf("%s: definition %.200s (%v)", q.name, r.Result, err)
		}
		got := fmt.Sprintf("%s:%d", locs[0].URI[strings.LastIndex(locs[0].URI, "/site/")+len("/site/"):], locs[0].Range.Start.Line)
		if got != q.want {
			return fmt.Errorf("%s: definition at %s, want %s", q.name, got, q.want)
		}
		return nil
	}
	for _, q := range qs { // warm: mirror, index and helper ready
		p, err := c.Start(q.method, q.params)
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(q, r); err != nil {
			t.Fatal(err)
		}
	}

	// The user types: a comment at the end of the file changes every
	// 10 ms, leaving the queried lines as they are.
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var changes atomic.Int64
	bg.Add(1)
	go func() {
		defer bg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := env.Editor.EditBuffer(uri, text+"# edit "+strconv.Itoa(n)+"\n"); err != nil {
				t.Errorf("didChange: %v", err)
				return
			}
			changes.Add(1)
		}
	}()
	// A mirror streams Debian's torch 1.13 meanwhile, again and again.
	var mirrors atomic.Int64
	bg.Add(1)
	go func() {
		defer bg.Done()
		spec := remote.Spec{Name: "deb", Python: debianPython}
		target := remote.NewLocal(spec)
		defer target.Close()
		client := remote.NewClient(target, spec)
		defer client.Close()
		info, err := client.PackageInfo(ctx, "torch")
		if err != nil {
			t.Logf("no background mirror: Debian's torch: %v", err)
			return
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			cache, err := os.MkdirTemp("", "torchlsp-load-mirror-")
			if err != nil {
				t.Error(err)
				return
			}
			mctx, mcancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-stop:
				case <-mctx.Done():
				}
				mcancel()
			}()
			_, err = remote.Mirror(mctx, target, spec, info, cache, nil)
			mcancel()
			select {
			case <-stop: // cut short when the load ended; any error is that
			default:
				if err != nil {
					t.Errorf("background mirror: %v", err)
				} else {
					mirrors.Add(1)
				}
			}
			removeAll(cache)
		}
	}()

	// Pipelined requests: up to window in flight.
	latencies := make([]time.Duration, total)
	answered := make([]atomic.Int32, total)
	var failures atomic.Int64
	var firstErr atomic.Value
	sem := make(chan struct{}, window)
	var inflight sync.WaitGroup
	var heapWarm float64
	warmAt := total / 10
	begin := time.Now()
	for i := range total {
		if i == warmAt {
			inflight.Wait()
			heapWarm = heapMB()
		}
		sem <- struct{}{}
		q := qs[i%len(qs)]
		sent := time.Now()
		p, err := c.Start(q.method, q.params)
		if err != nil {
			t.Fatalf("request %d not sent: %v", i, err)
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer func() { <-sem }()
			r, err := p.Wait(ctx)
			latencies[i] = time.Since(sent)
			answered[i].Add(1)
			if err == nil {
				err = check(q, r)
			}
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Errorf("request %d: %w", i, err))
			}
		}()
	}
	inflight.Wait()
	elapsed := time.Since(begin)
	close(stop)
	bg.Wait()
	heapEnd := heapMB()

	for i := range answered {
		if n := answered[i].Load(); n != 1 {
			t.Fatalf("request %d answered %d times", i, n)
		}
	}
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d answers wrong or missing; first: %v", n, total, firstErr.Load())
	}
	// A reply with an id nobody waits for would be a duplicate or a stray.
	for _, e := range c.Events() {
		if e.Response != nil {
			t.Errorf("reply to no pending request: id %s", e.ID)
		}
	}

	env.Shutdown()
	c.Close()
	endGoroutines := runtime.NumGoroutine()
	// Nothing announces a goroutine's end: the count is read again until
	// it settles, within a bound.
	for deadline := time.Now().Add(10 * time.Second); endGoroutines > baseGoroutines && time.Now().Before(deadline); endGoroutines = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}

	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
	}
	res := result{
		Requests: total, Window: window, Seconds: elapsed.Seconds(), PerSecond: float64(total) / elapsed.Seconds(),
		P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), MaxMs: float64(latencies[len(latencies)-1].Microseconds()) / 1000,
		DidChanges: changes.Load(), Mirrors: mirrors.Load(),
		HeapWarmMB: heapWarm, HeapEndMB: heapEnd, HeapGrowth: (heapEnd - heapWarm) / heapWarm,
		GoroutinesBase: baseGoroutines, GoroutinesEnd: endGoroutines,
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("load figures:\n%s", out)
	if *reportFlag != "" {
		if err := os.WriteFile(*reportFlag, out, 0o644); err != nil {
			t.Error(err)
		}
	}
	if res.DidChanges == 0 {
		t.Error("no didChange was sent during the load")
	}
	if total >= 20000 && res.HeapGrowth > 0.05 {
		// Short runs end before the heap settles; the bound is for long ones.
		t.Errorf("heap grew %.1f%% from warm-up (%.1f MB) to the end (%.1f MB), want at most 5%%", 100*res.HeapGrowth, heapWarm, heapEnd)
	}
	if endGoroutines > baseGoroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after shutdown, %d before the server started:\n%s", endGoroutines, baseGoroutines, buf[:runtime.Stack(buf, true)])
	}
}

// removeAll deletes a mirror cache, whose trees are read-only.
func removeAll(dir string) {
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
