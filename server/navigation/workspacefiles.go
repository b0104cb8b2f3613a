package navigation

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sourcegraph/conc/pool"

	"github.com/torchlsp/torchlsp/server/internal/wswalk"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// References, incoming calls and workspace symbols search the user's
// workspace files that no editor has open besides the open documents
// (whose snapshots win over the files on disk). Workspace is what those
// requests ask of them; DiskWorkspace answers from the files on disk.
// The engine gives one through Deps, so that a model of the workspace
// can stand in for it.

// Workspace is the user's workspace files as cross-reference queries and
// workspace symbols read them. skip names the files the caller searches
// otherwise (the open documents): they are left out.
type Workspace interface {
	// Mentioning lists the Python files of the workspace whose text may
	// name one of names; a file left out names none of them.
	Mentioning(ctx context.Context, names []string, skip func(path string) bool) ([]pyindex.File, error)
	// Outlines are the definitions of the Python files of the
	// workspace; a file left out holds no definition whose name match
	// takes (nil takes every name).
	Outlines(ctx context.Context, match func(name string) bool, skip func(path string) bool) ([]FileOutline, error)
}

// FileOutline is a workspace file's outline.
type FileOutline struct {
	Path   string
	Module string // its module under its workspace folder; "" when it has none
	Items  []pyscope.OutlineItem
}

// WorkspaceLimits bound what DiskWorkspace reads of a workspace.
type WorkspaceLimits struct {
	MaxEntries   int   // directory entries one walk visits (wswalk)
	MaxFiles     int   // Python files searched
	MaxFileBytes int64 // a larger file is generated data, skipped
	MaxBytes     int64 // the text of all the files searched together
	// MaxTableBytes bounds the source whose parsed tables are kept
	// between queries (a table takes about 23 bytes a byte of source).
	MaxTableBytes int64
}

// DefaultWorkspaceLimits are the limits of the engine's DiskWorkspace:
// 200,000 directory entries (as the site's import scan), 20,000 Python
// files, 4 MiB a file (torch's largest file is 1.4 MB) and 256 MiB in
// all, the tables of 1 MiB of source kept (about 24 MB).
func DefaultWorkspaceLimits() WorkspaceLimits {
	return WorkspaceLimits{
		MaxEntries:    200000,
		MaxFiles:      20000,
		MaxFileBytes:  4 << 20,
		MaxBytes:      256 << 20,
		MaxTableBytes: 1 << 20,
	}
}

// DiskWorkspace reads the workspace's Python files from disk: every file
// under each folder that the one workspace walk (wswalk) visits, so
// environments, hidden directories and caches are skipped as the site's
// import scan and runs skip them (and torchlsp's cache, where the
// mirrors are, wherever it lies). Only regular files are read, through an
// os.Root of their folder (no link is followed, none leads out) and
// localfile (never blocking, within the limits). Each file's words are
// kept per version (size, modification time, inode), so a query reads
// and parses only the files whose text may name what it looks for, and a
// later query reads only the files that changed; outlines are kept the
// same way (a file is parsed for its outline only when one of its words
// can match the query), and the parsed tables of the last files searched
// within MaxTableBytes. It is safe for concurrent use.
type DiskWorkspace struct {
	folders  func() []string
	cacheDir string
	parses   *syntax.Budget
	parsers  *syntax.Pool
	limits   WorkspaceLimits
	note     func(msg string)

	mu     sync.Mutex            // guards files, tables, byPath, tableBytes and noted
	files  map[string]*diskEntry // by path: what is known of each file's version
	tables *list.List            // of *diskTable, most recently used first
	byPath map[string]*list.Element
	// tableBytes is the source of the tables kept.
	tableBytes int64
	// noted is the last cut of a walk said (note), so it is said once.
	noted string
}

// NewDiskWorkspace reads the files under folders, parsing under the
// shared budget parses; files under cacheDir (torchlsp's mirrors) are
// never the workspace's. note (nil: none) is told, once for each new
// reason, that a walk stopped at a limit and left files unsearched.
func NewDiskWorkspace(folders func() []string, cacheDir string, parses *syntax.Budget, limits WorkspaceLimits, note func(msg string)) *DiskWorkspace {
	if note == nil {
		note = func(string) {}
	}
	return &DiskWorkspace{
		folders: folders, cacheDir: filepath.Clean(cacheDir), parses: parses.OrDefault(),
		parsers: syntax.NewPool(runtime.GOMAXPROCS(0)), limits: limits, note: note,
		files: map[string]*diskEntry{}, tables: list.New(), byPath: map[string]*list.Element{},
	}
}

// fileVersion tells one version of a file from another.
type fileVersion struct {
	size, mtime int64
	dev, ino    uint64
}

func versionOf(st fs.FileInfo) fileVersion {
	v := fileVersion{size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		v.dev, v.ino = uint64(sys.Dev), sys.Ino
	}
	return v
}

// diskEntry is what is known of one version of a file; it is replaced,
// never changed, once published.
type diskEntry struct {
	ver   fileVersion
	words wordSet
	// outline is set once the file was parsed (outlined).
	outline  []pyscope.OutlineItem
	outlined bool
}

// diskTable is a parsed file kept for the next query.
type diskTable struct {
	path string
	ver  fileVersion
	tab  *pyscope.Table
	size int64
}

// wsFile is a Python file a walk found.
type wsFile struct {
	root string // its workspace folder
	// dir is the folder opened, while the walk's caller holds it open;
	// nil once it is closed.
	dir  *os.Root
	rel  string // its path under the folder, slash-separated
	path string
	ver  fileVersion
}

func (f wsFile) module() (string, bool) { return pyindex.ModuleName(f.root, f.path) }

// Mentioning lists the files whose words hold one of names: a file's
// words are read once per version.
func (w *DiskWorkspace) Mentioning(ctx context.Context, names []string, skip func(string) bool) ([]pyindex.File, error) {
	files, done, err := w.walk(ctx, skip)
	if err != nil {
		return nil, err
	}
	defer done()
	needles := make([]string, len(names))
	for i, n := range names {
		needles[i] = "\n" + n + "\n"
	}
	var out []pyindex.File
	// The tables this round may add to those kept: a round that parses
	// more than they hold keeps its first files' and pushes out no
	// more, so that asking it again finds those.
	quota := &atomic.Int64{}
	quota.Store(w.limits.MaxTableBytes)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("workspace files: %w", err)
		}
		e := w.entry(f)
		if e == nil {
			text, ver, err := w.read(f)
			if err != nil {
				continue // gone, or no longer a regular file of its size
			}
			f.ver = ver
			e = w.store(f, &diskEntry{ver: ver, words: wordsOf(text)})
		}
		if e.words.mentions(needles) {
			f.dir = nil // closed when the walk's folders are
			out = append(out, diskFile{w: w, f: f, quota: quota})
		}
	}
	return out, nil
}

// Outlines are the outlines of the files whose words match takes, each
// file parsed once per version: a file whose words (read once per
// version) match takes none of is not parsed.
func (w *DiskWorkspace) Outlines(ctx context.Context, match func(string) bool, skip func(string) bool) ([]FileOutline, error) {
	files, done, err := w.walk(ctx, skip)
	if err != nil {
		return nil, err
	}
	defer done()
	out := make([]FileOutline, len(files))
	p := pool.New().WithContext(ctx).WithMaxGoroutines(runtime.GOMAXPROCS(0)).WithCancelOnError()
	for i, f := range files {
		p.Go(func(ctx context.Context) error {
			e, err := w.outline(ctx, f, match)
			if err != nil || e == nil || !e.outlined {
				return err
			}
			m, _ := f.module()
			out[i] = FileOutline{Path: f.path, Module: m, Items: e.outline}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return nil, fmt.Errorf("workspace outlines: %w", err)
	}
	return slices.DeleteFunc(out, func(o FileOutline) bool { return o.Path == "" }), nil
}

// outline is what the memo holds of f, with its outline when match
// takes one of its words: f is read when the memo holds nothing of its
// version, and parsed when its outline is wanted and not held. nil when
// it cannot be read.
func (w *DiskWorkspace) outline(ctx context.Context, f wsFile, match func(string) bool) (*diskEntry, error) {
	e := w.entry(f)
	if e != nil && (e.outlined || match != nil && !e.words.any(match)) {
		return e, nil
	}
	text, ver, err := w.read(f)
	if err != nil {
		return nil, nil
	}
	f.ver = ver
	words := wordsOf(text)
	if match != nil && !words.any(match) {
		return w.store(f, &diskEntry{ver: ver, words: words}), nil
	}
	release, err := w.parses.TakeContext(ctx, len(text))
	if err != nil {
		return nil, err
	}
	defer release()
	ps, err := w.parsers.Get()
	if err != nil {
		return nil, err
	}
	defer w.parsers.Put(ps)
	var items []pyscope.OutlineItem
	ps.Visit(text, func(t *syntax.Tree) { items = pyscope.New(t).Outline() })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return w.store(f, &diskEntry{ver: ver, words: words, outline: items, outlined: true}), nil
}

// entry is what the memo holds for f's version; nil when it holds none.
func (w *DiskWorkspace) entry(f wsFile) *diskEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.files[f.path]; e != nil && e.ver == f.ver {
		return e
	}
	return nil
}

// store keeps e for f's version, with what the memo knew of that version
// already, and returns what is kept.
func (w *DiskWorkspace) store(f wsFile, e *diskEntry) *diskEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.files[f.path]; old != nil && old.ver == e.ver && old.outlined && !e.outlined {
		merged := *old
		merged.words = e.words
		e = &merged
	}
	w.files[f.path] = e
	return e
}

// read reads f's text through an os.Root of its folder, as a regular
// file within the limit, with the version it read.
func (w *DiskWorkspace) read(f wsFile) ([]byte, fileVersion, error) {
	root := f.dir
	if root == nil {
		var err error
		if root, err = os.OpenRoot(f.root); err != nil {
			return nil, fileVersion{}, err
		}
		defer root.Close()
	}
	fh, st, err := localfile.OpenIn(root, filepath.FromSlash(f.rel))
	if err != nil {
		return nil, fileVersion{}, err
	}
	defer fh.Close()
	text, err := localfile.ReadOpen(fh, f.path, w.limits.MaxFileBytes)
	if err != nil {
		return nil, fileVersion{}, err
	}
	return text, versionOf(st), nil
}

// table is f's parsed table: the one kept for its version, or a new
// parse under the budget (release gives the budget back).
func (w *DiskWorkspace) table(ctx context.Context, f wsFile, quota *atomic.Int64) (tab *pyscope.Table, release func(), err error) {
	release = func() {}
	w.mu.Lock()
	if el, ok := w.byPath[f.path]; ok {
		if dt := el.Value.(*diskTable); dt.ver == f.ver {
			w.tables.MoveToFront(el)
			w.mu.Unlock()
			return dt.tab, release, nil
		}
	}
	w.mu.Unlock()
	text, ver, err := w.read(f)
	if err != nil {
		return nil, release, nil
	}
	f.ver = ver
	if release, err = w.parses.TakeContext(ctx, len(text)); err != nil {
		return nil, func() {}, err
	}
	ps, err := w.parsers.Get()
	if err != nil {
		release()
		return nil, func() {}, err
	}
	t, err := ps.ParseContext(ctx, text)
	w.parsers.Put(ps)
	if err != nil {
		release()
		return nil, func() {}, err
	}
	tab = pyscope.New(t)
	if e := w.entry(f); e == nil || !e.outlined {
		// Its outline too, now that it is parsed: symbols need not parse
		// it again.
		var words wordSet
		if e != nil {
			words = e.words
		} else {
			words = wordsOf(text)
		}
		w.store(f, &diskEntry{ver: ver, words: words, outline: tab.Outline(), outlined: true})
	}
	if size := int64(len(text)); quota.Add(-size) >= 0 {
		w.keep(&diskTable{path: f.path, ver: ver, tab: tab, size: size})
	}
	return tab, release, nil
}

// keep keeps a parsed table, dropping the least recently used past
// MaxTableBytes.
func (w *DiskWorkspace) keep(dt *diskTable) {
	if dt.size > w.limits.MaxTableBytes/4 {
		return // one file would push out all the others
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if el, ok := w.byPath[dt.path]; ok {
		w.tableBytes -= el.Value.(*diskTable).size
		w.tables.Remove(el)
	}
	w.byPath[dt.path] = w.tables.PushFront(dt)
	w.tableBytes += dt.size
	for w.tableBytes > w.limits.MaxTableBytes {
		last := w.tables.Back()
		old := last.Value.(*diskTable)
		w.tables.Remove(last)
		delete(w.byPath, old.path)
		w.tableBytes -= old.size
	}
}

// walk lists the Python files of the workspace folders (each file once,
// in the folders' order, then lexical order), but those skip names and
// those under the cache, within the limits, and forgets what the memo
// held of files no longer there. A folder that cannot be opened holds
// none. The folders stay open, for reading the files, until done.
func (w *DiskWorkspace) walk(ctx context.Context, skip func(string) bool) (_ []wsFile, done func(), _ error) {
	var out []wsFile
	var roots []*os.Root
	done = func() {
		for _, r := range roots {
			r.Close()
		}
	}
	seen := map[string]bool{}
	var total int64
	cut := "" // why files were left unlisted, if they were
	for _, folder := range w.folders() {
		folder = filepath.Clean(folder)
		if !filepath.IsAbs(folder) || w.inCache(folder) {
			continue // a server started in the cache: the index's files
		}
		root, err := os.OpenRoot(folder)
		if err != nil {
			continue // gone, or not a directory: it holds no files
		}
		roots = append(roots, root)
		err = wswalk.Walk(ctx, root.FS(), w.limits.MaxEntries, func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // an unreadable corner of a workspace
			}
			p := filepath.Join(folder, filepath.FromSlash(rel))
			if d.IsDir() {
				if p == w.cacheDir {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || !(strings.HasSuffix(rel, ".py") || strings.HasSuffix(rel, ".pyi")) {
				return nil // links (in or out), pipes, devices: never read
			}
			if seen[p] || skip != nil && skip(p) {
				return nil
			}
			st, err := d.Info()
			if err != nil || st.Size() > w.limits.MaxFileBytes {
				return nil
			}
			if len(out) >= w.limits.MaxFiles || total+st.Size() > w.limits.MaxBytes {
				cut = fmt.Sprintf("past %d files or %d MiB of them", w.limits.MaxFiles, w.limits.MaxBytes>>20)
				return fs.SkipAll
			}
			seen[p] = true
			total += st.Size()
			out = append(out, wsFile{root: folder, dir: root, rel: rel, path: p, ver: versionOf(st)})
			return nil
		})
		if le, ok := errors.AsType[*wswalk.EntryLimitError](err); ok {
			// A data directory, not code: what was found counts.
			cut, err = fmt.Sprintf("past %d directory entries (at %s)", le.Limit, filepath.Join(folder, filepath.FromSlash(le.Path))), nil
		}
		if err != nil {
			done()
			return nil, func() {}, fmt.Errorf("workspace %s: %w", folder, err)
		}
	}
	w.forget(seen, skip, cut)
	return out, done, nil
}

// forget drops what the memo holds of files the last walk did not list
// (skipped ones kept: they are open, and will be closed), so that it
// holds no more files than a walk lists, and says a new cut once.
func (w *DiskWorkspace) forget(listed map[string]bool, skip func(string) bool, cut string) {
	w.mu.Lock()
	say := cut != w.noted && cut != ""
	w.noted = cut
	for p := range w.files {
		if !listed[p] && (skip == nil || !skip(p)) {
			delete(w.files, p)
		}
	}
	for p, el := range w.byPath {
		if !listed[p] && (skip == nil || !skip(p)) {
			w.tableBytes -= el.Value.(*diskTable).size
			w.tables.Remove(el)
			delete(w.byPath, p)
		}
	}
	w.mu.Unlock()
	if say { // outside the lock: the note goes to the editor
		w.note("torchlsp: references and symbols search the workspace's Python files up to a limit: the files " + cut + " are left out")
	}
}

// inCache reports whether p is torchlsp's cache or under it.
func (w *DiskWorkspace) inCache(p string) bool {
	if w.cacheDir == "" || w.cacheDir == "." {
		return false
	}
	return p == w.cacheDir || strings.HasPrefix(p, w.cacheDir+string(filepath.Separator))
}

// diskFile is a workspace file a query searches.
type diskFile struct {
	w     *DiskWorkspace
	f     wsFile
	quota *atomic.Int64 // the source whose tables its round may still keep
}

// Visit parses the file (or takes its kept table) and calls fn with it.
func (d diskFile) Visit(ctx context.Context, fn func(pyindex.Source)) error {
	tab, release, err := d.w.table(ctx, d.f, d.quota)
	defer release()
	if err != nil || tab == nil {
		if ctx.Err() != nil {
			return fmt.Errorf("workspace file %s: %w", d.f.path, err)
		}
		return nil // a file that cannot be read names nothing
	}
	m, pkg := d.f.module()
	fn(pyindex.Source{Module: m, Package: pkg, Path: d.f.path, Table: tab})
	return nil
}

// maxWordsPerFile bounds the distinct words kept for one file; a file
// with more may name anything.
const maxWordsPerFile = 1 << 16

// wordSet is the distinct words of a text: every identifier the parse can
// find is among them (with the words of comments, strings and numbers), so
// a name it lacks is one the file does not hold.
type wordSet struct {
	// text holds the words, each after a line break and the last one
	// before one: "\na\nb\n".
	text string
	all  bool // too many words to keep: the file may name anything
}

// mentions reports whether the set holds one of the words (each given
// as "\nword\n").
func (s wordSet) mentions(needles []string) bool {
	if s.all {
		return true
	}
	for _, n := range needles {
		if strings.Contains(s.text, n) {
			return true
		}
	}
	return false
}

// any reports whether match takes one of the words.
func (s wordSet) any(match func(string) bool) bool {
	if s.all {
		return true
	}
	for w := range strings.SplitSeq(strings.Trim(s.text, "\n"), "\n") {
		if w != "" && match(w) {
			return true
		}
	}
	return false
}

// wordsOf collects the words of a text: each run of identifier bytes
// (ASCII letters, digits, underscores and any byte of a multi-byte
// character), and within a run that starts with a digit or holds a
// multi-byte character each run of ASCII identifier characters too,
// where the parser may see an identifier of its own in broken text.
func wordsOf(text []byte) wordSet {
	type span struct{ start, end int32 } // a file is at most MaxFileBytes
	var ws []span
	for i := 0; i < len(text); {
		if !isWordByte(text[i]) {
			i++
			continue
		}
		j, odd := i, isDigit(text[i])
		for j < len(text) && isWordByte(text[j]) {
			odd = odd || text[j] >= 0x80
			j++
		}
		ws = append(ws, span{int32(i), int32(j)})
		if odd {
			for k := i; k < j; {
				if !isASCIIWord(text[k]) || isDigit(text[k]) {
					k++
					continue
				}
				l := k
				for l < j && isASCIIWord(text[l]) {
					l++
				}
				ws = append(ws, span{int32(k), int32(l)})
				k = l
			}
		}
		i = j
	}
	// The distinct words, in the order first met: the set is searched,
	// never walked in order.
	seen := make(map[string]struct{}, len(ws)/4)
	n := 1
	distinct := ws[:0]
	for _, w := range ws {
		word := text[w.start:w.end]
		if _, dup := seen[string(word)]; dup {
			continue
		}
		seen[string(word)] = struct{}{}
		distinct = append(distinct, w)
		n += len(word) + 1
	}
	if len(distinct) > maxWordsPerFile {
		return wordSet{all: true}
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('\n')
	for _, w := range distinct {
		b.Write(text[w.start:w.end])
		b.WriteByte('\n')
	}
	return wordSet{text: b.String()}
}

func isWordByte(c byte) bool { return isASCIIWord(c) || c >= 0x80 }

func isASCIIWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || isDigit(c)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
