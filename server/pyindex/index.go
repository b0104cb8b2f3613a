package pyindex

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/conc/pool"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// Index is the index of a site directory. It is safe for concurrent use:
// Resolve and Members parse the files they need on demand while Build
// parses the rest.
type Index struct {
	siteDir     string
	cacheFile   string
	fingerprint string

	// Fixed by Open.
	modules  map[string]*module
	children map[string][]string // module → names of its direct submodules
	files    []*fileState        // sorted by path

	parsers *syntax.Pool
	budget  *syntax.Budget // Build's parses share it with the process's other background parsing
	// read, when set, supplies a file's contents instead of the disk (an
	// index over a partial, on-demand tree; see OpenListing).
	read func(rel string) ([]byte, error)
	// search, when set with read, answers which unread files name a word
	// (filesMentioning); see TextSearch.
	search TextSearch
	// maxSearchRead bounds the bytes a query reads of the files search
	// names (maxSearchReadBytes; tests lower it).
	maxSearchRead int64

	// maxFileNames and maxNames are the limits on names per file and in
	// all (MaxNamesPerFile, MaxNamesPerIndex; tests lower them).
	maxFileNames, maxNames int

	fromCache bool         // every file's data came from the cache file
	parsed    atomic.Int64 // files parsed since Open
	names     atomic.Int64 // names those files hold, against maxNames
	idents    atomic.Int64 // identifier hashes those files hold, against maxIdentsPerIndex
	truncated atomic.Int64 // files of those whose names were cut at a limit
	notParsed atomic.Int64 // files of those whose parse stopped at its time or memory limit
	saved     atomic.Bool  // Build wrote the cache file
	saveMu    sync.Mutex

	paramMu sync.Mutex            // guards params
	params  map[string]*paramFile // parameter tables of recently asked files, by path

	tables tableCache // name tables of the files navigation read last

	// scanBufs holds *bytes.Buffer that text searches (filesMentioning)
	// and parses read files into (readBuffer), one per concurrent read.
	scanBufs sync.Pool

	// identScratch holds *[]uint32 buffers that parses collect a file's
	// identifier hashes in (identHashes), one per concurrent parse.
	identScratch sync.Pool
}

// module is a dotted module name and the files that define it.
type module struct {
	name  string
	py    *fileState // nil for a stub-only module or a namespace package
	pyi   *fileState
	isPkg bool
}

// fileState is one .py or .pyi file and, once parsed, its data.
type fileState struct {
	rel    string // slash-separated, relative to the site dir
	module string
	pkg    string // package that relative imports in the file start from
	stub   bool
	size   int64
	mtime  int64 // UnixNano

	mu   sync.Mutex // serialises parsing of this file
	data atomic.Pointer[fileData]
}

// Option adjusts Open.
type Option func(*openOptions)

type openOptions struct {
	packages    map[string]bool
	fingerprint string
	budget      *syntax.Budget
}

// WithPackages limits the index to the named top-level packages or modules
// (for example "torch"); by default everything in the site dir is indexed.
func WithPackages(names ...string) Option {
	return func(o *openOptions) {
		if o.packages == nil {
			o.packages = map[string]bool{}
		}
		for _, n := range names {
			o.packages[n] = true
		}
	}
}

// WithFingerprint sets the fingerprint that validates the cache file, such
// as the hash of the mirror's manifest. Without it the fingerprint is
// derived from the files' count, total size and newest modification time.
func WithFingerprint(fp string) Option {
	return func(o *openOptions) { o.fingerprint = fp }
}

// WithParseBudget makes the index's parses share b with the other parsing
// work of the process. By default an index has a budget of its own
// (syntax.DefaultBudget).
func WithParseBudget(b *syntax.Budget) Option {
	return func(o *openOptions) { o.budget = b }
}

// Stats describes the state of an Index.
type Stats struct {
	Files     int  // .py and .pyi files indexed
	Modules   int  // modules, namespace packages included
	Parsed    int  // files parsed since Open (the rest came from the cache or wait)
	FromCache bool // the cache file was valid and supplied every file
	// Truncated counts the files parsed since Open that held more names
	// than the index keeps (MaxNamesPerFile, or the index's total
	// MaxNamesPerIndex reached): the names past the limit are missing.
	Truncated int
	// NotParsed counts the files parsed since Open whose parse stopped at
	// its time or memory limit (syntax.CPULimit, syntax.MemoryLimit): the
	// index has none of their names.
	NotParsed int
}

// Open lists the Python files under siteDir and loads the cache file when
// it is valid for them. It parses nothing: Resolve parses on demand, and
// Build parses everything. cacheFile may be empty for no persistence. A
// cache file that is missing, stale, truncated or corrupt is ignored.
func Open(siteDir, cacheFile string, opts ...Option) (*Index, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	abs, err := filepath.Abs(siteDir)
	if err != nil {
		return nil, fmt.Errorf("pyindex: open %s: %w", siteDir, err)
	}
	ix := &Index{
		siteDir:   abs,
		cacheFile: cacheFile,
		modules:   map[string]*module{},
		children:  map[string][]string{},
		parsers:   syntax.NewPool(buildWorkers()),
		budget:    o.budget.OrDefault(),

		maxFileNames: MaxNamesPerFile,
		maxNames:     MaxNamesPerIndex,
	}
	// The grammar is compiled in: a version mismatch shows here or never.
	p, err := ix.parsers.Get()
	if err != nil {
		return nil, fmt.Errorf("pyindex: python grammar: %w", err)
	}
	ix.parsers.Put(p)
	if err := ix.scan(o.packages); err != nil {
		return nil, fmt.Errorf("pyindex: open %s: %w", siteDir, err)
	}
	ix.fingerprint = o.fingerprint
	if ix.fingerprint == "" {
		ix.fingerprint = ix.treeFingerprint()
	}
	if cacheFile != "" {
		// Any problem with the cache means it is rebuilt, so the error
		// only matters to Build's decision to write a new one.
		ix.fromCache = ix.loadCache() == nil
	}
	return ix, nil
}

// scan walks the site dir for modules.
func (ix *Index) scan(packages map[string]bool) error {
	// A site dir that is itself a link is walked where it points (WalkDir
	// does not follow its root); files are still read through siteDir.
	// Links below it are not followed: a package is its own tree.
	root := ix.siteDir
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil // unreadable subtrees are skipped, not fatal
		}
		if path == root {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		top, _, nested := strings.Cut(rel, "/")
		if d.IsDir() {
			if !syntax.IsIdentifier(d.Name()) || (!nested && packages != nil && !packages[top]) {
				return fs.SkipDir
			}
			return nil
		}
		name := d.Name()
		stub := strings.HasSuffix(name, ".pyi")
		if !stub && !strings.HasSuffix(name, ".py") {
			return nil
		}
		stem := strings.TrimSuffix(strings.TrimSuffix(name, ".pyi"), ".py")
		if !syntax.IsIdentifier(stem) || !d.Type().IsRegular() {
			return nil
		}
		if !nested && packages != nil && !packages[stem] {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		ix.addFile(rel, stem, stub, info)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(ix.files, func(i, j int) bool { return ix.files[i].rel < ix.files[j].rel })
	for parent := range ix.children {
		sort.Strings(ix.children[parent])
	}
	return nil
}

func (ix *Index) addFile(rel, stem string, stub bool, info fs.FileInfo) {
	dir := ""
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir = strings.ReplaceAll(rel[:i], "/", ".")
	}
	name, pkg, isPkg := dir, dir, true
	if stem != "__init__" {
		name, isPkg = joinName(dir, stem), false
	}
	if name == "" {
		return // __init__.py at the top of the site dir belongs to no module
	}
	// Module names are shared through ix.modules rather than interned:
	// interning every path costs a weak pointer each, a third of a warm
	// Open.
	m := ix.ensureModule(name)
	if pm, ok := ix.modules[pkg]; ok {
		pkg = pm.name
	}
	f := &fileState{
		rel: rel, module: m.name, pkg: pkg, stub: stub,
		size: info.Size(), mtime: info.ModTime().UnixNano(),
	}
	ix.files = append(ix.files, f)
	m.isPkg = m.isPkg || isPkg
	if stub {
		m.pyi = f
	} else {
		m.py = f
	}
}

// ensureModule registers name and its parents (namespace packages until a
// file says otherwise).
func (ix *Index) ensureModule(name string) *module {
	if m, ok := ix.modules[name]; ok {
		return m
	}
	m := &module{name: name}
	ix.modules[m.name] = m
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		parent := ix.ensureModule(name[:i])
		parent.isPkg = true
		ix.children[parent.name] = append(ix.children[parent.name], name[i+1:])
	}
	return m
}

func joinName(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func (ix *Index) treeFingerprint() string {
	var total, newest int64
	for _, f := range ix.files {
		total += f.size
		newest = max(newest, f.mtime)
	}
	return fmt.Sprintf("files=%d bytes=%d newest=%d", len(ix.files), total, newest)
}

// SiteDir is the absolute site directory the index covers.
func (ix *Index) SiteDir() string { return ix.siteDir }

// Stats reports the size of the index and how much is parsed.
func (ix *Index) Stats() Stats {
	return Stats{Files: len(ix.files), Modules: len(ix.modules), Parsed: int(ix.parsed.Load()), FromCache: ix.fromCache, Truncated: int(ix.truncated.Load()), NotParsed: int(ix.notParsed.Load())}
}

// ModuleNames lists every module in the index, sorted.
func (ix *Index) ModuleNames() []string {
	names := make([]string, 0, len(ix.modules))
	for n := range ix.modules {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Build parses every file not yet parsed, concurrently (buildWorkers
// workers), then writes the cache file when anything new was parsed. It
// blocks until done; run it in a goroutine to build in the background.
func (ix *Index) Build(ctx context.Context) error {
	if err := ix.parseMissing(ctx, buildWorkers()); err != nil {
		return fmt.Errorf("pyindex: build %s: %w", ix.siteDir, err)
	}
	// Every file is parsed: the parsers and their scratch memory are idle
	// from now on (the pool makes new ones should a file be parsed again).
	ix.parsers.Close()
	if ix.cacheFile == "" || ix.fromCache || ix.saved.Load() {
		return nil
	}
	if err := ix.saveCache(); err != nil {
		return fmt.Errorf("pyindex: build %s: %w", ix.siteDir, err)
	}
	ix.saved.Store(true)
	return nil
}

// parseMissing parses the files not yet parsed, workers at a time, each
// parse under the index's budget, the largest first: a large file's tree
// is the largest piece of C memory a build holds (torch 2.11's 1.35 MB
// file, 33 MB), and the index's own heap grows as files are parsed, so a
// large tree held early adds to a small heap instead of the whole one.
func (ix *Index) parseMissing(ctx context.Context, workers int) error {
	return ix.parseFiles(ctx, ix.files, workers)
}

// parseFiles parses those of files not yet parsed, as parseMissing does.
func (ix *Index) parseFiles(ctx context.Context, files []*fileState, workers int) error {
	todo := make([]*fileState, 0, len(files))
	for _, f := range files {
		if f.data.Load() == nil {
			todo = append(todo, f)
		}
	}
	slices.SortStableFunc(todo, func(a, b *fileState) int { return cmp.Compare(b.size, a.size) })
	p := pool.New().WithContext(ctx).WithMaxGoroutines(workers).WithCancelOnError()
	for _, f := range todo {
		p.Go(func(ctx context.Context) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			ix.loadIn(f, ix.budget)
			return nil
		})
	}
	return p.Wait()
}

// Close releases the parsers. The index stays usable; parsing resumes with
// new parsers.
func (ix *Index) Close() error {
	ix.parsers.Close()
	return nil
}

// load returns the data of f, parsing it first if needed. A request's
// parse does not wait for the budget that background builds share: it is
// one file, and a hover must not queue behind the build.
func (ix *Index) load(f *fileState) *fileData { return ix.loadIn(f, nil) }

// loadIn is load whose parse, if any, takes its text from budget first.
func (ix *Index) loadIn(f *fileState, budget *syntax.Budget) *fileData {
	if d := f.data.Load(); d != nil {
		return d
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.data.Load(); d != nil {
		return d
	}
	d := ix.parse(f, budget)
	if d == nil {
		// The reader failed (a link's hiccup): nothing is remembered, so
		// the next request reads again.
		return &fileData{}
	}
	f.data.Store(d)
	ix.parsed.Add(1)
	return d
}

// A file over chunkAbove is parsed a chunk of top-level statements at a
// time (syntax.Chunks, chunkSize each), each chunk's tree dropped before
// the next is made: the index keeps nothing that spans two top-level
// statements, and the tree of the whole of torch 2.11's largest file
// (1.35 MB) took 33 MB, the cold server's peak.
const (
	chunkAbove = 128 << 10
	chunkSize  = 64 << 10
)

// extractChunks is the data of src, a module whose package is pkg,
// parsed in chunks of size, each under budget, and whether every chunk
// parsed clean; nil when src has no place to split. A text whose chunks
// are not all clean is parsed whole if it can be, as tree-sitter's
// recovery over the whole text may differ from its recovery over a
// chunk, and a place the chunks' scan took wrongly always leaves an error
// in a chunk.
func extractChunks(p *syntax.Parser, src []byte, size int, pkg string, budget *syntax.Budget, limit, identLimit int, scratch *[]uint32) (_ *fileData, clean bool) {
	ranges := syntax.Chunks(src, size)
	if ranges == nil {
		return nil, false
	}
	e := newExtractor(src, pkg, limit)
	hashes := (*scratch)[:0]
	clean = true
	for _, r := range ranges {
		release := budget.Take(r.End - r.Start)
		p.VisitRanges(src, []syntax.Range{r}, func(t *syntax.Tree) {
			clean = clean && !t.HasError()
			e.add(t)
			hashes = appendIdentHashes(hashes, t)
		})
		release()
	}
	fd := e.done()
	fd.idents, fd.identsAll = distinctHashes(hashes, identLimit, scratch)
	return fd, clean
}

// parse reads and parses f. An unreadable file yields empty data: the
// index describes what it can see. A failed read through ix.read yields
// nil: load does not remember it.
func (ix *Index) parse(f *fileState, budget *syntax.Budget) *fileData {
	var src []byte
	var err error
	if ix.read != nil {
		if src, err = ix.read(f.rel); err != nil {
			return nil
		}
	} else {
		// The text goes into a reused buffer: extract copies what it
		// keeps, so a build's reads leave no garbage behind them.
		buf, release := ix.readBuffer()
		defer release()
		if src, err = ix.sourceInto(f, buf); err != nil {
			return &fileData{}
		}
	}
	p, err := ix.parsers.Get()
	if err != nil {
		return &fileData{}
	}
	defer ix.parsers.Put(p)
	// extract copies what it keeps: the tree may live in scratch memory.
	limit := min(ix.maxFileNames, max(ix.maxNames-int(ix.names.Load()), 0))
	identLimit := min(maxIdentsPerFile, max(maxIdentsPerIndex-int(ix.idents.Load()), 0))
	scratch, _ := ix.identScratch.Get().(*[]uint32)
	if scratch == nil {
		scratch = new([]uint32)
	}
	var fd, chunked *fileData
	if len(src) > chunkAbove {
		var clean bool
		if chunked, clean = extractChunks(p, src, chunkSize, f.pkg, budget, limit, identLimit, scratch); clean {
			fd = chunked
		}
	}
	if fd == nil {
		release := budget.Take(len(src))
		p.Visit(src, func(t *syntax.Tree) {
			switch {
			case t.GaveUp() && chunked != nil:
				// The whole text is over the parse's limits and its
				// chunks are not: they answer, errors and all.
				fd = chunked
				return
			case t.GaveUp():
				ix.notParsed.Add(1)
			}
			fd = extract(t, f.pkg, limit)
			fd.idents, fd.identsAll = identHashes(t, identLimit, scratch)
		})
		release()
	}
	ix.identScratch.Put(scratch)
	ix.names.Add(int64(countNames(fd.bindings)))
	ix.idents.Add(int64(len(fd.idents)))
	if fd.truncated {
		ix.truncated.Add(1)
	}
	return fd
}

// maxBuildWorkers caps parsing concurrency: each worker holds a parser and
// a file's tree, so memory grows with workers while a build is already
// short at four (torch 2.11 in about a second).
const maxBuildWorkers = 4

// buildWorkers leaves one processor to the requests that arrive while the
// index builds in the background (on two cores, one worker): a hover that
// waits behind parsing workers for a processor is what users notice.
func buildWorkers() int { return min(max(runtime.GOMAXPROCS(0)-1, 1), maxBuildWorkers) }
