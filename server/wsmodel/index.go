package wsmodel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/internal/wswalk"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Limits bound what a model reads of a workspace.
type Limits struct {
	// MaxEntries bounds the directory entries walked per root.
	MaxEntries int
	// MaxFiles bounds the Python files indexed; MaxFileBytes each one's
	// size (a larger file is left out, as the editor's size limit does);
	// MaxBytes the source read in all (a home directory opened as a
	// workspace is not read whole).
	MaxFiles     int
	MaxFileBytes int64
	MaxBytes     int64
}

// DefaultLimits are the limits of a workspace model.
func DefaultLimits() Limits {
	return Limits{MaxEntries: 200_000, MaxFiles: 20_000, MaxFileBytes: 4 << 20, MaxBytes: 256 << 20}
}

// Indexer builds models of one workspace.
type Indexer struct {
	// Roots are the workspace folders; Paths the directories modules are
	// named from: each root, its src/ when there is one, and what the
	// user adds to sys.path in torchlsp.toml.
	Roots, Paths []string
	// Parse parses one file's text; it may refuse (a budget, a cancel).
	Parse func(ctx context.Context, src []byte) (*pybuf.Buffer, error)
	// Facts reads the diagnose facts of a parsed file.
	Facts  func(*pybuf.Buffer) diagnose.Facts
	Limits Limits
	// Exclude is a directory never indexed (torchlsp's cache: its mirrors
	// are torch's files, not the user's), wherever it lies.
	Exclude string
	// tops are the workspace's top-level module names, once a build has
	// walked it (set by Build before any file is read, then only read).
	tops map[string]bool
	// CacheFile, when set, keeps each file's facts between builds, under
	// CacheKey (what the facts were read against: the target's torch,
	// its site and environment); a file whose size and modification time
	// are unchanged is not read again.
	CacheFile, CacheKey string
}

// ImportPaths are the directories modules are named from in a workspace
// whose folders are roots: each root and its src/ (a src layout), then
// extra (absolute, or relative to the first root), longest first so that
// the innermost names a file.
func ImportPaths(roots, extra []string) []string {
	var out []string
	for _, r := range roots {
		out = append(out, r)
		if st, err := os.Stat(filepath.Join(r, "src")); err == nil && st.IsDir() {
			out = append(out, filepath.Join(r, "src"))
		}
	}
	for _, e := range extra {
		if !filepath.IsAbs(e) && len(roots) > 0 {
			e = filepath.Join(roots[0], e)
		}
		out = append(out, filepath.Clean(e))
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// ModuleOf names the module of a Python file from the import paths: the
// innermost path holding it, with each directory a valid Python name;
// "" when none does.
func ModuleOf(paths []string, file string) string {
	for _, p := range paths {
		rel, err := filepath.Rel(p, file)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") || !strings.HasSuffix(rel, ".py") {
			continue
		}
		parts := strings.Split(filepath.ToSlash(strings.TrimSuffix(rel, ".py")), "/")
		if parts[len(parts)-1] == "__init__" {
			parts = parts[:len(parts)-1]
		}
		ok := len(parts) > 0
		for _, part := range parts {
			ok = ok && syntax.IsIdentifier(part)
		}
		if ok {
			return strings.Join(parts, ".")
		}
	}
	return ""
}

// FileOf reads the facts of a parsed file (an open document's version,
// or a file read from disk).
func (ix *Indexer) FileOf(path string, buf *pybuf.Buffer) *File {
	return Extract(path, ModuleOf(ix.Paths, path), buf, ix.Facts(buf), ix.tops)
}

// topLevel are the module names the files of a build start with, under
// each import path: a package's directory, a module's name.
func (ix *Indexer) topLevel(files []string) map[string]bool {
	tops := map[string]bool{}
	for _, f := range files {
		if m := ModuleOf(ix.Paths, f); m != "" {
			top, _, _ := strings.Cut(m, ".")
			tops[top] = true
		}
	}
	return tops
}

// Build indexes every Python file under the roots, as the one walker of
// the workspace's own files finds them (environments, caches and hidden
// directories skipped; no link followed), each read through its limit.
// Files that cannot be read or parsed are left out and counted.
func (ix *Indexer) Build(ctx context.Context) (*Model, Stats, error) {
	var st Stats
	type rootFiles struct {
		root  string
		r     *os.Root
		paths []string
	}
	var walked []rootFiles
	defer func() {
		for _, w := range walked {
			w.r.Close()
		}
	}()
	var all []string
	for _, root := range ix.Roots {
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, st, fmt.Errorf("index the workspace %s: %w", root, err)
		}
		w := rootFiles{root: root, r: r}
		err = wswalk.Walk(ctx, r.FS(), ix.Limits.MaxEntries, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && ix.excluded(filepath.Join(root, filepath.FromSlash(p))) {
				return fs.SkipDir
			}
			if err != nil || d.IsDir() {
				return nil
			}
			if strings.HasSuffix(p, ".py") && d.Type().IsRegular() {
				w.paths = append(w.paths, p)
				all = append(all, filepath.Join(root, filepath.FromSlash(p)))
			}
			return nil
		})
		walked = append(walked, w)
		if err != nil && !errors.As(err, new(*wswalk.EntryLimitError)) {
			return nil, st, fmt.Errorf("index the workspace %s: %w", root, err)
		}
		if err != nil {
			st.Truncated = err.Error()
		}
	}
	ix.tops = ix.topLevel(all)
	tops := make([]string, 0, len(ix.tops))
	for t := range ix.tops {
		tops = append(tops, t)
	}
	sort.Strings(tops)
	// The facts depend on what they were read against, on how modules
	// are named, and on which names are the workspace's.
	key := ix.CacheKey + "\x00" + strings.Join(ix.Paths, "\x00") + "\x00" + strings.Join(tops, ",")
	cached := loadCache(ix.CacheFile, key)
	kept := map[string]diskEntry{}
	var files []*File
	for _, w := range walked {
		for _, p := range w.paths {
			if err := ctx.Err(); err != nil {
				return nil, st, err
			}
			if len(files) >= ix.Limits.MaxFiles {
				st.Truncated = fmt.Sprintf("past the %d files a model indexes", ix.Limits.MaxFiles)
				break
			}
			if ix.Limits.MaxBytes > 0 && st.Bytes >= ix.Limits.MaxBytes {
				st.Truncated = fmt.Sprintf("past the %d bytes of source a model reads", ix.Limits.MaxBytes)
				break
			}
			full := filepath.Join(w.root, filepath.FromSlash(p))
			fh, info, err := localfile.OpenIn(w.r, p)
			if err != nil {
				st.Skipped++
				continue
			}
			if e, ok := cached[full]; ok && e.fresh(info) {
				fh.Close()
				st.Cached++
				files = append(files, e.File)
				kept[full] = e
				continue
			}
			text, err := localfile.ReadOpen(fh, p, ix.Limits.MaxFileBytes)
			fh.Close()
			if err != nil {
				st.Skipped++
				continue
			}
			buf, err := ix.Parse(ctx, text)
			if err != nil {
				if ctx.Err() != nil {
					return nil, st, ctx.Err()
				}
				st.Skipped++
				continue
			}
			st.Bytes += int64(len(text))
			f := ix.FileOf(full, buf)
			files = append(files, f)
			kept[full] = diskEntry{Size: info.Size(), ModTime: info.ModTime().UnixNano(), File: f}
		}
	}
	st.Files = len(files)
	if st.Cached != st.Files || len(kept) != len(cached) {
		if err := saveCache(ix.CacheFile, key, kept); err != nil {
			st.CacheError = err.Error()
		}
	}
	return New(ix.Roots, files), st, nil
}

// excluded says whether dir is Exclude or under it.
func (ix *Indexer) excluded(dir string) bool {
	return Under(ix.Exclude, dir)
}

// Under says whether path is dir or lies under it.
func Under(dir, path string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Stats say what a build read.
type Stats struct {
	// Files were indexed, Cached of them from the cache; Skipped could
	// not be read or parsed.
	Files, Cached, Skipped int
	// CacheError says why the cache could not be written, if it could not.
	CacheError string
	Bytes      int64
	// Truncated says which limit stopped the walk, if one did.
	Truncated string
}
