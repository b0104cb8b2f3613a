package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// growthResult is what one child process measured on one site directory.
// Each phase runs in its own process so that its peak RSS is its own.
type growthResult struct {
	Site  string `json:"site"`
	Phase string `json:"phase"` // "index" or "gates"
	Files int    `json:"files"`

	BuildMs      float64 `json:"build_ms,omitempty"`       // Open + Build with no cache
	HeapMB       float64 `json:"heap_mb,omitempty"`        // live heap after Build and a GC
	CacheMB      float64 `json:"cache_mb,omitempty"`       // index cache file
	ReopenMs     float64 `json:"reopen_ms,omitempty"`      // Open from the cache file
	FirstQueryMs float64 `json:"first_query_ms,omitempty"` // first Resolve after that Open
	ScanMs       float64 `json:"scan_ms,omitempty"`        // gates.Open with no cache
	Flags        int     `json:"flags,omitempty"`
	PeakRSSMB    float64 `json:"peak_rss_mb"` // VmHWM of the process at the end
}

// growthCmd measures how indexing and the gate scan grow with the tree:
// for every -site, one child process builds the index (then reopens it
// from its cache and answers one query) and another scans the config
// gates, one after the other.
func growthCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("growth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sites listFlag
	fs.Var(&sites, "site", "site directory holding torch/ (repeatable)")
	child := fs.String("child", "", "internal: run one phase (index or gates) in this process")
	probe := fs.String("probe", "torch.nn.Linear", "name resolved after reopening the index")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *child != "" {
		if len(sites) != 1 {
			fmt.Fprintln(stderr, "lspbench growth -child needs one -site")
			return 2
		}
		r, err := growthPhase(ctx, *child, sites[0], *probe)
		if err != nil {
			fmt.Fprintf(stderr, "lspbench growth: %v\n", err)
			return 1
		}
		if err := json.NewEncoder(stdout).Encode(r); err != nil {
			return 1
		}
		return 0
	}
	if len(sites) == 0 {
		fmt.Fprintln(stderr, "lspbench growth: no -site")
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "lspbench growth: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "GOMAXPROCS %d\n\n", runtime.GOMAXPROCS(0))
	fmt.Fprintln(stdout, "| site | files | index build | heap after build | cache file | reopen from cache | first query | peak RSS (build) | gate scan | flags | peak RSS (scan) |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, site := range sites {
		var ix, gt growthResult
		for _, phase := range []string{"index", "gates"} {
			cmd := exec.CommandContext(ctx, self, "growth", "-child", phase, "-site", site, "-probe", *probe)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(stderr, "lspbench growth: %s %s: %v\n", phase, site, err)
				return 1
			}
			dst := &ix
			if phase == "gates" {
				dst = &gt
			}
			if err := json.Unmarshal(out.Bytes(), dst); err != nil {
				fmt.Fprintf(stderr, "lspbench growth: %s %s: %v\n", phase, site, err)
				return 1
			}
		}
		fmt.Fprintf(stdout, "| %s | %d | %.2f s | %.0f MB | %.1f MB | %.0f ms | %.2f ms | %.0f MB | %.2f s | %d | %.0f MB |\n",
			site, ix.Files, ix.BuildMs/1e3, ix.HeapMB, ix.CacheMB, ix.ReopenMs, ix.FirstQueryMs, ix.PeakRSSMB,
			gt.ScanMs/1e3, gt.Flags, gt.PeakRSSMB)
	}
	return 0
}

func growthPhase(ctx context.Context, phase, site, probe string) (growthResult, error) {
	r := growthResult{Site: site, Phase: phase}
	tmp, err := os.MkdirTemp("", "lspbench-growth-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(tmp)
	switch phase {
	case "index":
		cache := filepath.Join(tmp, "index.bin")
		start := time.Now()
		ix, err := pyindex.Open(site, cache, pyindex.WithPackages("torch"))
		if err != nil {
			return r, err
		}
		if err := ix.Build(ctx); err != nil {
			return r, err
		}
		r.BuildMs = ms(time.Since(start))
		r.Files = ix.Stats().Files
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		r.HeapMB = float64(m.HeapAlloc) / 1e6
		runtime.KeepAlive(ix)
		ix.Close()
		st, err := os.Stat(cache)
		if err != nil {
			return r, fmt.Errorf("index cache: %w", err)
		}
		r.CacheMB = float64(st.Size()) / 1e6
		start = time.Now()
		ix2, err := pyindex.Open(site, cache, pyindex.WithPackages("torch"))
		if err != nil {
			return r, err
		}
		r.ReopenMs = ms(time.Since(start))
		if !ix2.Stats().FromCache {
			return r, errors.New("the reopened index did not use its cache")
		}
		start = time.Now()
		if _, err := ix2.Resolve(probe); err != nil {
			return r, err
		}
		r.FirstQueryMs = ms(time.Since(start))
		ix2.Close()
	case "gates":
		start := time.Now()
		cat, err := gates.Open(ctx, site, filepath.Join(tmp, "gates.bin"), gates.Options{})
		if err != nil {
			return r, err
		}
		r.ScanMs = ms(time.Since(start))
		for _, m := range cat.Modules {
			r.Flags += len(m.Flags)
		}
	default:
		return r, fmt.Errorf("unknown phase %q", phase)
	}
	if kb, ok := vmHWM(os.Getpid()); ok {
		r.PeakRSSMB = float64(kb) / 1e3
	}
	return r, nil
}
