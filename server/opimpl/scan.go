package opimpl

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/torchlsp/torchlsp/server/internal/torchtree"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// scanRoots are the parts of the torch tree where the compiler stack
// registers ops, relative to the site dir: a file or a directory.
var scanRoots = []string{
	"torch/_meta_registrations.py",
	"torch/_decomp",
	"torch/_refs",
	"torch/_prims",
	"torch/_prims_common",
	"torch/_inductor",
}

// prefilter skips, before parsing, files that cannot register an op: the
// words below appear in every registering call or in the name of the
// function that does it. Files of torch/_refs are always parsed, for the
// refs they define.
var prefilter = [][]byte{[]byte("register"), []byte("make_fallback"), []byte("py_impl"), []byte("_reference")}

// listFiles lists the .py files under the scan roots, sorted.
func listFiles(siteDir string) ([]torchtree.File, error) {
	files, err := torchtree.List(siteDir, scanRoots...)
	if err != nil {
		return nil, fmt.Errorf("opimpl: %w", err)
	}
	return files, nil
}

// moduleOf turns torch/_inductor/lowering.py into torch._inductor.lowering;
// isPkg is set for __init__.py.
func moduleOf(rel string) (mod string, isPkg bool) {
	m := strings.TrimSuffix(rel, ".py")
	if strings.HasSuffix(m, "/__init__") {
		m, isPkg = strings.TrimSuffix(m, "/__init__"), true
	}
	return strings.ReplaceAll(m, "/", "."), isPkg
}

// Scan builds the table of the torch tree under siteDir (the directory
// that holds torch/). It reads files only; it never imports torch.
func Scan(ctx context.Context, siteDir string) (*Table, error) {
	files, err := listFiles(siteDir)
	if err != nil {
		return nil, err
	}
	return scanFiles(ctx, siteDir, files, nil)
}

// scanFiles scans files; budget (nil: one of its own) bounds the text
// parsed at once.
func scanFiles(ctx context.Context, siteDir string, files []torchtree.File, budget *syntax.Budget) (*Table, error) {
	facts, err := parseAll(ctx, siteDir, files, budget.OrDefault())
	if err != nil {
		return nil, err
	}
	r := newResolver(facts)
	r.infer()
	t := &Table{Fingerprint: fingerprint(siteDir, files), Version: torchtree.Version(siteDir)}
	t.Impls = r.registrations()
	t.Impls = append(t.Impls, r.refs()...)
	sortImpls(t.Impls)
	t.Stats = r.stats
	t.Stats.Files = len(facts)
	t.Stats.Registrars = len(r.regs)
	for _, im := range t.Impls {
		if im.Kind == KindRef {
			t.Stats.Refs++
		} else {
			t.Stats.Registrations++
		}
	}
	t.index()
	return t, nil
}

// workers is how many files parse at once: one core is left to the
// editor's requests, and more than four gains little on the few large
// files that dominate.
func workers() int {
	return max(1, min(4, runtime.GOMAXPROCS(0)-1))
}

// parseAll reads and parses the files that pass the prefilter.
func parseAll(ctx context.Context, siteDir string, files []torchtree.File, budget *syntax.Budget) ([]*fileFacts, error) {
	out := make([]*fileFacts, len(files))
	next := make(chan int)
	errs := make(chan error, workers())
	var wg sync.WaitGroup
	for range workers() {
		p, err := syntax.NewParser()
		if err != nil {
			return nil, fmt.Errorf("opimpl: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.Close()
			for i := range next {
				f := files[i]
				src, err := torchtree.ReadFile(filepath.Join(siteDir, filepath.FromSlash(f.Rel)))
				if err != nil {
					errs <- fmt.Errorf("opimpl: read %s: %w", f.Rel, err)
					return
				}
				if !strings.HasPrefix(f.Rel, "torch/_refs/") && !containsAny(src, prefilter) {
					continue
				}
				mod, isPkg := moduleOf(f.Rel)
				release := budget.Take(len(src))
				out[i] = parseFile(p, f.Rel, mod, isPkg, src)
				release()
			}
		}()
	}
	var sendErr error
feed:
	for i := range files {
		select {
		case next <- i:
		case err := <-errs:
			sendErr = err
			break feed
		case <-ctx.Done():
			sendErr = fmt.Errorf("opimpl: scan: %w", ctx.Err())
			break feed
		}
	}
	close(next)
	wg.Wait()
	if sendErr == nil {
		select {
		case sendErr = <-errs:
		default:
		}
	}
	if sendErr != nil {
		return nil, sendErr
	}
	facts := out[:0]
	for _, ff := range out {
		if ff != nil {
			facts = append(facts, ff)
		}
	}
	return facts, nil
}

func containsAny(b []byte, words [][]byte) bool {
	for _, w := range words {
		if bytes.Contains(b, w) {
			return true
		}
	}
	return false
}
