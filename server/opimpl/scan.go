package opimpl

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

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

// sourceFile is a candidate file of the tree.
type sourceFile struct {
	rel   string // slash-separated, relative to the site dir
	size  int64
	mtime int64
}

// listFiles lists the .py files under the scan roots, sorted.
func listFiles(siteDir string) ([]sourceFile, error) {
	if st, err := os.Stat(filepath.Join(siteDir, "torch")); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("opimpl: %s holds no torch package", siteDir)
	}
	var files []sourceFile
	for _, root := range scanRoots {
		abs := filepath.Join(siteDir, filepath.FromSlash(root))
		err := filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == abs && os.IsNotExist(err) {
					return nil // older torch: no such part
				}
				return err
			}
			if d.IsDir() || !strings.HasSuffix(p, ".py") {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(siteDir, p)
			if err != nil {
				return err
			}
			files = append(files, sourceFile{rel: filepath.ToSlash(rel), size: info.Size(), mtime: info.ModTime().UnixNano()})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("opimpl: list %s: %w", abs, err)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
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
func scanFiles(ctx context.Context, siteDir string, files []sourceFile, budget *syntax.Budget) (*Table, error) {
	facts, err := parseAll(ctx, siteDir, files, budget.OrDefault())
	if err != nil {
		return nil, err
	}
	r := newResolver(facts)
	r.infer()
	t := &Table{Fingerprint: fingerprint(siteDir, files), Version: readVersion(siteDir)}
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
func parseAll(ctx context.Context, siteDir string, files []sourceFile, budget *syntax.Budget) ([]*fileFacts, error) {
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
				src, err := os.ReadFile(filepath.Join(siteDir, filepath.FromSlash(f.rel)))
				if err != nil {
					errs <- fmt.Errorf("opimpl: read %s: %w", f.rel, err)
					return
				}
				if !strings.HasPrefix(f.rel, "torch/_refs/") && !containsAny(src, prefilter) {
					continue
				}
				mod, isPkg := moduleOf(f.rel)
				release := budget.Take(len(src))
				out[i] = parseFile(p, f.rel, mod, isPkg, src)
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

// readVersion reads torch's version from torch/version.py.
func readVersion(siteDir string) string {
	b, err := os.ReadFile(filepath.Join(siteDir, "torch", "version.py"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "__version__")
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		if i := strings.Index(rest, "="); i >= 0 {
			rest = strings.TrimSpace(rest[i+1:])
		}
		if i := strings.IndexAny(rest, "'\""); i >= 0 {
			q := rest[i]
			rest = rest[i+1:]
			if j := strings.IndexByte(rest, q); j >= 0 {
				return rest[:j]
			}
		}
	}
	return ""
}
