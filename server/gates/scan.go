package gates

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/sourcegraph/conc/pool"

	"github.com/torchlsp/torchlsp/server/internal/torchtree"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Options tunes a scan.
type Options struct {
	// Workers is the number of parsing goroutines; 0 means GOMAXPROCS.
	Workers int
	// NoPrefilter parses every file fully (for measuring the prefilter).
	NoPrefilter bool
	// Budget, shared with the process's other background parsing, bounds
	// the text parsed at once; nil gives the scan a syntax.DefaultBudget
	// of its own.
	Budget *syntax.Budget
}

// Scan builds the catalog of the torch package under siteDir (a directory
// that contains torch/). It reads files only; it never imports torch.
func Scan(ctx context.Context, siteDir string, opts Options) (*Catalog, error) {
	files, err := listTorchFiles(siteDir)
	if err != nil {
		return nil, err
	}
	return scanFiles(ctx, siteDir, files, opts)
}

func listTorchFiles(siteDir string) ([]torchtree.File, error) {
	files, err := torchtree.List(siteDir, "torch")
	if err != nil {
		return nil, fmt.Errorf("gates: %w", err)
	}
	return files, nil
}

// moduleName turns torch/_inductor/config.py into torch._inductor.config.
func moduleName(rel string) string {
	m := strings.TrimSuffix(rel, ".py")
	m = strings.TrimSuffix(m, "/__init__")
	return strings.ReplaceAll(m, "/", ".")
}

// worker is what one scanning goroutine owns: a parser and a read buffer
// reused from file to file (nothing the catalog keeps points into it).
type worker struct {
	p   *syntax.Parser
	buf []byte
}

// read reads a file of the mirror into the worker's buffer, as
// torchtree.ReadFile reads one: opened without following a link at its
// name and without blocking, checked on the open descriptor to be a
// regular file, and read through torchtree.MaxFileBytes (one byte more
// tells a file that grew past it).
func (w *worker) read(path string) ([]byte, error) {
	f, st, err := localfile.OpenNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const limit = torchtree.MaxFileBytes
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit: %w", path, st.Size(), limit, localfile.ErrTooLarge)
	}
	if n := int(st.Size()) + 1; cap(w.buf) < n {
		w.buf = make([]byte, n+n/4)
	}
	b := w.buf[:0]
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > limit {
			return nil, fmt.Errorf("%s grew past the %d-byte limit while it was read: %w", path, limit, localfile.ErrTooLarge)
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) { // the file grew while being read
			b = append(b, 0)[:len(b)]
		}
	}
}

// workerPool hands each goroutine its own worker.
type workerPool chan *worker

func newWorkerPool(n int) (workerPool, error) {
	wp := make(workerPool, n)
	for i := 0; i < n; i++ {
		p, err := syntax.NewParser()
		if err != nil {
			wp.close()
			return nil, fmt.Errorf("gates: %w", err)
		}
		wp <- &worker{p: p}
	}
	return wp, nil
}

func (wp workerPool) close() {
	close(wp)
	for w := range wp {
		w.p.Close()
	}
}

func scanFiles(ctx context.Context, siteDir string, files []torchtree.File, opts Options) (*Catalog, error) {
	workers := opts.Workers
	if workers <= 0 {
		// Each worker holds a parse tree; more than four buy little
		// time and cost memory.
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	budget := opts.Budget.OrDefault()
	workersPool, err := newWorkerPool(workers)
	if err != nil {
		return nil, err
	}
	defer workersPool.close()

	// Phase 1: config modules.
	var mu sync.Mutex
	cat := &Catalog{}
	p := pool.New().WithContext(ctx).WithMaxGoroutines(workers).WithCancelOnError()
	for _, f := range files {
		p.Go(func(ctx context.Context) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			w := <-workersPool
			defer func() { workersPool <- w }()
			b, err := w.read(filepath.Join(siteDir, f.Rel))
			if err != nil {
				return fmt.Errorf("gates: read %s: %w", f.Rel, err)
			}
			if !mightBeConfigModule(b) {
				return nil
			}
			release := budget.Take(len(b))
			m := parseConfigModule(w.p, b, f.Rel, moduleName(f.Rel))
			release()
			if m != nil {
				mu.Lock()
				cat.Modules = append(cat.Modules, m)
				mu.Unlock()
			}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	cat.index()
	ix := newFlagIndex(cat.Modules)

	// Phase 2: gate sites, in files that can name a config module.
	if len(cat.Modules) > 0 {
		p = pool.New().WithContext(ctx).WithMaxGoroutines(workers).WithCancelOnError()
		for _, f := range files {
			p.Go(func(ctx context.Context) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				w := <-workersPool
				defer func() { workersPool <- w }()
				b, err := w.read(filepath.Join(siteDir, f.Rel))
				if err != nil {
					return fmt.Errorf("gates: read %s: %w", f.Rel, err)
				}
				if !opts.NoPrefilter && !containsAnyWord(b, ix.lastNames) {
					return nil
				}
				release := budget.Take(len(b))
				sites, ok := safeScanSites(w.p, ix, f.Rel, b, !opts.NoPrefilter)
				release()
				if !ok {
					mu.Lock()
					cat.Skipped = append(cat.Skipped, f.Rel)
					mu.Unlock()
				}
				if len(sites) > 0 {
					mu.Lock()
					for k, v := range sites {
						cat.SiteMap[k] = append(cat.SiteMap[k], v...)
					}
					mu.Unlock()
				}
				return nil
			})
		}
		if err := p.Wait(); err != nil {
			return nil, err
		}
	}
	for k, v := range cat.SiteMap {
		sort.Slice(v, func(i, j int) bool {
			if v[i].File != v[j].File {
				return v[i].File < v[j].File
			}
			if v[i].Line != v[j].Line {
				return v[i].Line < v[j].Line
			}
			return v[i].Col < v[j].Col
		})
		cat.SiteMap[k] = v
	}

	sort.Strings(cat.Skipped)
	cat.Version = torchtree.Version(siteDir)
	cat.Fingerprint = fingerprint(siteDir, files)
	w := <-workersPool
	err = readCompileInfo(siteDir, cat, w.p)
	workersPool <- w
	if err != nil {
		return nil, err
	}
	return cat, nil
}

// safeScanSites is scanSites that turns a fault on one file into a skipped
// file rather than a failed scan.
func safeScanSites(p *syntax.Parser, ix *flagIndex, rel string, b []byte, pieces bool) (sites map[string][]Site, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			sites, ok = nil, false
		}
	}()
	return scanSites(p, ix, rel, b, pieces), true
}

// scanSites finds the gate sites of one file. With pieces set it parses
// only the top-level statements that can involve a config module: those
// naming a config module, then those naming a module-level alias of one,
// until no new alias appears. A piece that does not parse cleanly sends the
// whole file through the parser instead, unless the parser gave up on it
// (syntax.CPULimit).
func scanSites(p *syntax.Parser, ix *flagIndex, rel string, b []byte, pieces bool) map[string][]Site {
	var trees []*syntax.Tree
	fs := newFileSites(ix, rel)
	whole := func() {
		fs = newFileSites(ix, rel)
		s := p.Parse(b)
		trees = []*syntax.Tree{s}
		if r := s.Root(); r >= 0 {
			fs.collectBindings(s, r, fs.module)
		}
	}
	if !pieces {
		whole()
	} else if !scanPieces(p, ix, fs, b, func(s *syntax.Tree) { trees = append(trees, s) }) {
		whole()
	}
	for _, s := range trees {
		if r := s.Root(); r >= 0 {
			fs.collectSites(s, r, fs.module)
		}
	}
	return fs.sites
}

// unit is a top-level statement, or a class split into its header and
// members, that the scanner parses or skips.
type unit struct {
	piece
	members []piece // for a class: header first, then one piece per member
	keep    []bool  // per piece: wanted (a plain statement uses keep[0])
	parsed  []bool  // per piece: already in a tree
}

// scanPieces parses only what can involve a config module: the top-level
// statements (for classes, the members) that name a config module, then,
// round by round, those naming a module- or class-level alias found so far,
// until no new alias appears. Each round parses just its new pieces, in
// place (tree-sitter's included ranges), so positions stay true; all trees
// share one set of scopes. false means a piece did not parse cleanly and
// the caller should parse all of b.
func scanPieces(p *syntax.Parser, ix *flagIndex, fs *fileSites, b []byte, keep func(*syntax.Tree)) bool {
	var units []unit
	for _, pc := range topLevelPieces(b) {
		u := unit{piece: pc, members: []piece{pc}}
		if text := b[pc.start:pc.end]; isClassPiece(text) {
			if ms := splitStatements(text, -1); len(ms) > 2 {
				for k := range ms {
					ms[k].start += pc.start
					ms[k].end += pc.start
				}
				u.members = ms
			}
		}
		u.keep = make([]bool, len(u.members))
		u.parsed = make([]bool, len(u.members))
		units = append(units, u)
	}
	triggers := make(map[string]bool, len(ix.lastNames)+1)
	for w := range ix.lastNames {
		triggers[w] = true
	}
	lines := syntax.NewLines(b)
	for {
		var spans []syntax.Range
		add := func(pc piece) {
			if n := len(spans); n > 0 && spans[n-1].End == pc.start {
				spans[n-1] = lines.Range(spans[n-1].Start, pc.end)
				return
			}
			spans = append(spans, lines.Range(pc.start, pc.end))
		}
		for k := range units {
			u := &units[k]
			if len(u.members) == 1 {
				if !u.parsed[0] && containsAnyWord(b[u.start:u.end], triggers) {
					u.parsed[0] = true
					add(u.piece)
				}
				continue
			}
			// A class: a header naming a trigger wants every member.
			header := u.keep[0] || containsAnyWord(b[u.members[0].start:u.members[0].end], triggers)
			fresh := false
			for m := 1; m < len(u.members); m++ {
				if !u.keep[m] && (header || containsAnyWord(b[u.members[m].start:u.members[m].end], triggers)) {
					u.keep[m] = true
				}
				fresh = fresh || (u.keep[m] && !u.parsed[m])
			}
			u.keep[0] = header
			if !fresh {
				continue
			}
			add(u.members[0]) // the header again: its scope is shared across trees
			for m := 1; m < len(u.members); m++ {
				if u.keep[m] && !u.parsed[m] {
					u.parsed[m] = true
					add(u.members[m])
				}
			}
		}
		if len(spans) == 0 {
			return true
		}
		s := p.ParseRanges(b, spans)
		if s.GaveUp() {
			// The parser gave up on these pieces within the limit a parse of
			// the whole file has; the whole file, which holds them, would
			// take it too. The file's other sites are those found so far.
			return true
		}
		if s.HasError() {
			return false
		}
		keep(s)
		if r := s.Root(); r >= 0 {
			fs.collectBindings(s, r, fs.module)
		}
		grew := false
		for _, sc := range append([]*scope{fs.module}, fs.classScopes()...) {
			for name, bs := range sc.binds {
				if triggers[name] {
					continue
				}
				for _, bd := range bs {
					if bd.kind != bindOther {
						triggers[name], grew = true, true
						break
					}
				}
			}
		}
		if !grew {
			return true
		}
	}
}

// readCompileInfo fills HasCompile, Modes and CompileOptions.
func readCompileInfo(siteDir string, cat *Catalog, p *syntax.Parser) error {
	initPy, err := torchtree.ReadFile(filepath.Join(siteDir, "torch", "__init__.py"))
	if err != nil {
		return fmt.Errorf("gates: read torch/__init__.py: %w", err)
	}
	ind, err := torchtree.ReadFile(filepath.Join(siteDir, "torch", "_inductor", "__init__.py"))
	if err != nil || !bytes.Contains(initPy, []byte("\ndef compile(")) {
		return nil // torch without torch.compile (1.13 and older)
	}
	cat.HasCompile = true
	cat.Modes = parseModes(p, ind)
	if m, ok := cat.Module("torch._inductor.config"); ok {
		for _, f := range m.Flags {
			if f.Alias == "" {
				cat.CompileOptions = append(cat.CompileOptions, f.Key)
			}
		}
	}
	return nil
}
