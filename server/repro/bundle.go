package repro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/server/internal/wswalk"
	"github.com/torchlsp/torchlsp/server/localfile"
)

// Limits on the workspace files a run sends to the target.
const (
	DefaultMaxFiles     = 2000
	DefaultMaxBytes     = 16 << 20
	DefaultMaxFileBytes = 2 << 20
	// DefaultMaxEntries bounds the directory entries a walk visits: a
	// home directory or a data set is not a workspace to send.
	DefaultMaxEntries = 100000
)

// Without a workspace root only the file under test and the modules it
// imports travel, within these.
const (
	NeighbourMaxFiles = 256
	NeighbourMaxBytes = 4 << 20
)

// maxLeftOutExamples is how many paths a summary names for each reason.
const maxLeftOutExamples = 5

// File is one workspace file sent to the target: Path is relative to the
// workspace root, with slashes.
type File struct {
	Path string `json:"path"`
	Data []byte `json:"data"` // base64 in JSON
}

// BundleLimits bounds a Collector; zero fields take the defaults.
type BundleLimits struct {
	MaxFiles, MaxBytes, MaxFileBytes, MaxEntries int
}

func (l BundleLimits) withDefaults() BundleLimits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	return l
}

// Bundle is the set of files a run sends, and what was left out and why.
type Bundle struct {
	Files   []File
	LeftOut LeftOut
}

// Bytes is the size of the bundle's files together.
func (b Bundle) Bytes() int {
	n := 0
	for _, f := range b.Files {
		n += len(f.Data)
	}
	return n
}

// LeftOut summarises the files a bundle left out: how many, for which
// reasons, and the first few of each, so that one message says it all
// however many there are.
type LeftOut struct {
	Count   int
	Reasons []LeftOutReason // in the order they were first met
}

// LeftOutReason is one reason files were left out.
type LeftOutReason struct {
	Why      string   // "past the 2000-file limit", "not a regular file", …
	Count    int      // files left out for it
	Examples []string // the first few, "path" or "path (detail)"
}

func (l *LeftOut) add(why, example string) {
	l.Count++
	for i := range l.Reasons {
		if r := &l.Reasons[i]; r.Why == why {
			r.Count++
			if len(r.Examples) < maxLeftOutExamples {
				r.Examples = append(r.Examples, example)
			}
			return
		}
	}
	l.Reasons = append(l.Reasons, LeftOutReason{Why: why, Count: 1, Examples: []string{example}})
}

// String says in one line what was left out: "3 workspace file(s) left
// out: 2 past the 2000-file limit (a.py, b.py), 1 not a regular file
// (link.py)"; "" when nothing was.
func (l LeftOut) String() string {
	if l.Count == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d workspace file(s) left out:", l.Count)
	for i, r := range l.Reasons {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, " %d %s (%s", r.Count, r.Why, strings.Join(r.Examples, ", "))
		if more := r.Count - len(r.Examples); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
		b.WriteByte(')')
	}
	return b.String()
}

// bundlePart is what one path component of a sent file may be; the
// script on the target checks the same.
var bundlePart = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// shownPath is a workspace path as a message may show it: quoted, with
// escapes, unless every component is one the bundle accepts.
func shownPath(p string) string {
	if checkBundlePath(p) == nil {
		return p
	}
	return strconv.QuoteToASCII(p)
}

// Collector gathers the files a run sends from one directory, within
// limits. Every file is read through an os.Root of the directory
// (nothing outside it, no link followed out of it) with localfile: opened
// without blocking, checked as a regular file on the descriptor, read
// through its limit. Files the run cannot do without are added first
// (Require), so no limit or walk order can drop them; Walk then adds the
// workspace's other Python files while they fit.
type Collector struct {
	dir   string
	root  *os.Root
	lim   BundleLimits
	files map[string][]byte
	total int
	left  LeftOut

	// beforeRead, when set, runs before each file of a walk is read: tests
	// swap or grow the file there.
	beforeRead func(rel string)
}

// NewCollector opens dir for collection; Close releases it.
func NewCollector(dir string, lim BundleLimits) (*Collector, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	return &Collector{dir: dir, root: r, lim: lim.withDefaults(), files: map[string][]byte{}}, nil
}

// Close releases the directory.
func (c *Collector) Close() error { return c.root.Close() }

// Dir is the directory files are collected from.
func (c *Collector) Dir() string { return c.dir }

// Lstat describes rel inside the directory without following a link.
func (c *Collector) Lstat(rel string) (fs.FileInfo, error) {
	return c.root.Lstat(filepath.FromSlash(rel))
}

// Has reports whether rel is in the bundle already.
func (c *Collector) Has(rel string) bool {
	_, ok := c.files[rel]
	return ok
}

// Require adds a file the run cannot do without (the file under test, a
// module it imports) and returns its content; the error says why it
// cannot travel, and the caller refuses the run rather than send a bundle
// without it.
func (c *Collector) Require(rel string) ([]byte, error) {
	if data, ok := c.files[rel]; ok {
		return data, nil
	}
	if err := checkBundlePath(rel); err != nil {
		return nil, fmt.Errorf("%s: not a name the target accepts (%w)", shownPath(rel), err)
	}
	st, err := c.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, %w: it is not sent", rel, localfile.Kind(st.Mode()), localfile.ErrNotRegular)
	}
	if len(c.files) >= c.lim.MaxFiles {
		return nil, fmt.Errorf("%s: the run needs more than the %d-file limit", rel, c.lim.MaxFiles)
	}
	data, err := localfile.ReadIn(c.root, filepath.FromSlash(rel), int64(c.lim.MaxFileBytes))
	if err != nil {
		return nil, err
	}
	if c.total+len(data) > c.lim.MaxBytes {
		return nil, fmt.Errorf("%s: the files the run needs pass the %d-byte limit", rel, c.lim.MaxBytes)
	}
	c.keep(rel, data)
	return data, nil
}

func (c *Collector) keep(rel string, data []byte) {
	c.files[rel] = data
	c.total += len(data)
}

// Walk adds the other Python files under the directory, sorted by path,
// while they fit the limits: regular files only (symbolic links are
// neither followed nor sent); environments under any name, hidden
// directories and caches skipped (wswalk, the rules the site's scan
// shares). What does not fit is left out and summarised.
func (c *Collector) Walk(ctx context.Context) error {
	err := wswalk.Walk(ctx, c.root.FS(), c.lim.MaxEntries, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			c.left.add("unreadable", fmt.Sprintf("%s (%v)", shownPath(p), err))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if !bundlePart.MatchString(name) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".py") || c.Has(p) {
			return nil
		}
		switch {
		case !d.Type().IsRegular():
			c.left.add("not a regular file", shownPath(p))
			return nil
		case !bundlePart.MatchString(name):
			c.left.add("a name the target refuses", shownPath(p))
			return nil
		case len(c.files) >= c.lim.MaxFiles:
			c.left.add(fmt.Sprintf("past the %d-file limit", c.lim.MaxFiles), p)
			return nil
		}
		if c.beforeRead != nil {
			c.beforeRead(p)
		}
		data, err := localfile.ReadIn(c.root, filepath.FromSlash(p), int64(c.lim.MaxFileBytes))
		switch {
		case errors.Is(err, localfile.ErrTooLarge):
			c.left.add(fmt.Sprintf("over the %d-byte limit for a file", c.lim.MaxFileBytes), p)
			return nil
		case errors.Is(err, localfile.ErrNotRegular):
			c.left.add("not a regular file", p)
			return nil
		case err != nil:
			c.left.add("unreadable", fmt.Sprintf("%s (%v)", p, err))
			return nil
		case c.total+len(data) > c.lim.MaxBytes:
			c.left.add(fmt.Sprintf("past the %d-byte limit for all files", c.lim.MaxBytes), p)
			return nil
		}
		c.keep(p, data)
		return nil
	})
	if lim, ok := errors.AsType[*wswalk.EntryLimitError](err); ok {
		c.left.add(fmt.Sprintf("past the %d directory entries a walk visits", lim.Limit), shownPath(lim.Path))
		return nil
	}
	if err != nil {
		return fmt.Errorf("workspace %s: %w", c.dir, err)
	}
	return nil
}

// Bundle is what was collected, sorted by path.
func (c *Collector) Bundle() Bundle {
	b := Bundle{LeftOut: c.left}
	for p, data := range c.files {
		b.Files = append(b.Files, File{Path: p, Data: data})
	}
	sort.Slice(b.Files, func(i, j int) bool { return b.Files[i].Path < b.Files[j].Path })
	return b
}

// CollectWorkspace gathers the Python files under root within the limits
// (a Collector's Walk).
func CollectWorkspace(root string, lim BundleLimits) (Bundle, error) {
	c, err := NewCollector(root, lim)
	if err != nil {
		return Bundle{}, err
	}
	defer c.Close()
	err = c.Walk(context.Background())
	return c.Bundle(), err
}

// checkBundlePath says whether p may name a file on the target.
func checkBundlePath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || strings.Contains(p, "\\") {
		return fmt.Errorf("workspace file %q: not a clean relative path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if !bundlePart.MatchString(part) || part == ".." {
			return fmt.Errorf("workspace file %q: component %q", p, part)
		}
	}
	return nil
}

// encodeFiles frames files for the script's stdin: a decimal length, a
// newline, then that many bytes of JSON.
func encodeFiles(files []File) ([]byte, error) {
	var errs []error
	for _, f := range files {
		if err := checkBundlePath(f.Path); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	data, err := json.Marshal(struct {
		Files []File `json:"files"`
	}{files})
	if err != nil {
		return nil, fmt.Errorf("encode workspace files: %w", err)
	}
	return append([]byte(strconv.Itoa(len(data))+"\n"), data...), nil
}
