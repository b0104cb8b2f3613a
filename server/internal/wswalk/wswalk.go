// Package wswalk is the one walk of a workspace's own files: the site's
// import scan and the files a run sends to the target both walk through
// it, so they agree on what is workspace code and what is an environment,
// a cache or version control.
package wswalk

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// skippedNames are directories that never hold the workspace's own code,
// whatever they contain: caches, installed packages, build outputs.
// Hidden directories (.git, .venv, .torchlsp, .tox, .mypy_cache …) are
// skipped by their leading dot.
var skippedNames = map[string]bool{
	"__pycache__": true, "node_modules": true, "site-packages": true, "dist-packages": true,
	"venv": true, "build": true, "dist": true,
}

// envMarkers are entries whose presence makes a directory an environment
// under any name: a virtual environment (venv, virtualenv, uv) writes
// pyvenv.cfg at its top, a conda environment conda-meta/.
var envMarkers = []string{"pyvenv.cfg", "conda-meta"}

// Skip reports whether the directory p (slash-separated, relative to
// fsys's root) holds no code of the workspace's own: hidden, a cache or
// build output by its name, or an environment by what it holds.
func Skip(fsys fs.FS, p string) bool {
	name := path.Base(p)
	if strings.HasPrefix(name, ".") || skippedNames[name] {
		return true
	}
	for _, m := range envMarkers {
		if _, err := fs.Stat(fsys, path.Join(p, m)); err == nil {
			return true
		}
	}
	return false
}

// EntryLimitError is returned by Walk when a workspace has more entries
// than it visits: a home directory or a data set, not code.
type EntryLimitError struct {
	Limit int
	Path  string // the first entry not visited
}

func (e *EntryLimitError) Error() string {
	return fmt.Sprintf("past the %d directory entries a walk visits (at %s)", e.Limit, e.Path)
}

// Walk visits what lies under fsys's root (an os.Root's FS: no link is
// followed, none leads out) in lexical order, as fs.WalkDir does, but
// never the root itself nor a directory Skip names, nor anything under
// one. visit is called for the other directories (it may return
// fs.SkipDir), for files of every type, and for entries that cannot be
// read (err set; returning nil goes on). Walk stops when ctx ends, and
// with an *EntryLimitError after maxEntries entries (0: no limit).
func Walk(ctx context.Context, fsys fs.FS, maxEntries int, visit fs.WalkDirFunc) error {
	entries := 0
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if p == "." {
			if err != nil {
				return err
			}
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if entries++; maxEntries > 0 && entries > maxEntries {
			return &EntryLimitError{Limit: maxEntries, Path: p}
		}
		if err == nil && d.IsDir() && Skip(fsys, p) {
			return fs.SkipDir
		}
		return visit(p, d, err)
	})
}
