package gates

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/sourcegraph/conc/pool"
)

// Options tunes a scan.
type Options struct {
	// Workers is the number of parsing goroutines; 0 means GOMAXPROCS.
	Workers int
	// NoPrefilter parses every file fully (for measuring the prefilter).
	NoPrefilter bool
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

// torchFile is one .py file of the tree.
type torchFile struct {
	rel   string // slash separated, relative to the site dir
	size  int64
	mtime int64
}

func listTorchFiles(siteDir string) ([]torchFile, error) {
	root := filepath.Join(siteDir, "torch")
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("gates: %s holds no torch package", siteDir)
	}
	var files []torchFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
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
		files = append(files, torchFile{rel: filepath.ToSlash(rel), size: info.Size(), mtime: info.ModTime().UnixNano()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gates: list %s: %w", root, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, nil
}

// moduleName turns torch/_inductor/config.py into torch._inductor.config.
func moduleName(rel string) string {
	m := strings.TrimSuffix(rel, ".py")
	m = strings.TrimSuffix(m, "/__init__")
	return strings.ReplaceAll(m, "/", ".")
}

// parserPool hands each worker its own parser.
type parserPool chan *parser

func newParserPool(g *grammar, n int) (parserPool, error) {
	pp := make(parserPool, n)
	for i := 0; i < n; i++ {
		p, err := newParser(g)
		if err != nil {
			pp.close()
			return nil, err
		}
		pp <- p
	}
	return pp, nil
}

func (pp parserPool) close() {
	close(pp)
	for p := range pp {
		p.Close()
	}
}

func scanFiles(ctx context.Context, siteDir string, files []torchFile, opts Options) (*Catalog, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	parsers, err := newParserPool(newGrammar(), workers)
	if err != nil {
		return nil, err
	}
	defer parsers.close()

	// Phase 1: config modules.
	var mu sync.Mutex
	cat := &Catalog{}
	p := pool.New().WithContext(ctx).WithMaxGoroutines(workers).WithCancelOnError()
	for _, f := range files {
		p.Go(func(ctx context.Context) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := os.ReadFile(filepath.Join(siteDir, f.rel))
			if err != nil {
				return fmt.Errorf("gates: read %s: %w", f.rel, err)
			}
			if !mightBeConfigModule(b) {
				return nil
			}
			parser := <-parsers
			m := parseConfigModule(parser, b, f.rel, moduleName(f.rel))
			parsers <- parser
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
				b, err := os.ReadFile(filepath.Join(siteDir, f.rel))
				if err != nil {
					return fmt.Errorf("gates: read %s: %w", f.rel, err)
				}
				if !opts.NoPrefilter && !containsAnyWord(b, ix.lastNames) {
					return nil
				}
				parser := <-parsers
				sites, ok := safeScanSites(parser, ix, f.rel, b, !opts.NoPrefilter)
				parsers <- parser
				if !ok {
					mu.Lock()
					cat.Skipped = append(cat.Skipped, f.rel)
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
	cat.Version = readVersion(siteDir)
	cat.Fingerprint = fingerprint(siteDir, files)
	parser := <-parsers
	err = readCompileInfo(siteDir, cat, parser)
	parsers <- parser
	if err != nil {
		return nil, err
	}
	return cat, nil
}

// safeScanSites is scanSites that turns a fault on one file into a skipped
// file rather than a failed scan.
func safeScanSites(p *parser, ix *flagIndex, rel string, b []byte, pieces bool) (sites map[string][]Site, ok bool) {
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
// whole file through the parser instead.
func scanSites(p *parser, ix *flagIndex, rel string, b []byte, pieces bool) map[string][]Site {
	type parsed struct {
		t *tree
		s *src
	}
	var trees []parsed
	fs := newFileSites(ix, rel)
	whole := func() {
		fs = newFileSites(ix, rel)
		s := &src{b: b}
		t := p.parse(b)
		trees = []parsed{{t, s}}
		fs.collectBindings(s, t.Root(), fs.module)
	}
	if !pieces {
		whole()
	} else if !scanPieces(p, ix, fs, b, func(t *tree, s *src) { trees = append(trees, parsed{t, s}) }) {
		whole()
	}
	for _, t := range trees {
		if r := t.t.Root(); r != nil {
			fs.collectSites(t.s, r, fs.module)
		}
	}
	return fs.sites
}

// scanPieces parses the relevant pieces of b and collects their bindings;
// false means a piece had a syntax error and the caller should parse all of b.
func scanPieces(p *parser, ix *flagIndex, fs *fileSites, b []byte, keep func(*tree, *src)) bool {
	ps := topLevelPieces(b)
	done := make([]bool, len(ps))
	triggers := make(map[string]bool, len(ix.lastNames)+1)
	for w := range ix.lastNames {
		triggers[w] = true
	}
	for {
		type parsed struct {
			t *tree
			s *src
		}
		var fresh []parsed
		for i := 0; i < len(ps); {
			if done[i] || !containsAnyWord(b[ps[i].start:ps[i].end], triggers) {
				i++
				continue
			}
			j := i
			for j < len(ps) && !done[j] && containsAnyWord(b[ps[j].start:ps[j].end], triggers) {
				done[j] = true
				j++
			}
			s := &src{b: b[ps[i].start:ps[j-1].end], lineBase: ps[i].line}
			t := p.parse(s.b)
			if t.hasError {
				return false
			}
			fresh = append(fresh, parsed{t, s})
			i = j
		}
		if len(fresh) == 0 {
			return true
		}
		for _, t := range fresh {
			keep(t.t, t.s)
			if r := t.t.Root(); r != nil {
				fs.collectBindings(t.s, r, fs.module)
			}
		}
		grew := false
		for name, bs := range fs.module.binds {
			if triggers[name] {
				continue
			}
			for _, bd := range bs {
				if bd.kind != bindOther {
					triggers[name] = true
					grew = true
					break
				}
			}
		}
		if !grew {
			return true
		}
	}
}

var versionRE = regexp.MustCompile(`(?m)^__version__\s*=\s*['"]([^'"]+)['"]`)

func readVersion(siteDir string) string {
	b, err := os.ReadFile(filepath.Join(siteDir, "torch", "version.py"))
	if err != nil {
		return ""
	}
	if m := versionRE.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// readCompileInfo fills HasCompile, Modes and CompileOptions.
func readCompileInfo(siteDir string, cat *Catalog, p *parser) error {
	initPy, err := os.ReadFile(filepath.Join(siteDir, "torch", "__init__.py"))
	if err != nil {
		return fmt.Errorf("gates: read torch/__init__.py: %w", err)
	}
	ind, err := os.ReadFile(filepath.Join(siteDir, "torch", "_inductor", "__init__.py"))
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
