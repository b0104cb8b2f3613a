package site

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/internal/wswalk"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/session"
)

// workspaceImports returns the top-level modules the workspace imports:
// its .py files (bounded, symlinks not followed, virtual environments and
// hidden directories skipped) and the open documents, without the
// workspace's own top-level modules. Files are parsed again only when they
// changed since the last scan.
func (ss *Sites) workspaceImports(ctx context.Context) ([]string, error) {
	folders := ss.deps.Folders()
	docs := ss.deps.Documents()

	names := map[string]bool{}
	own := map[string]bool{}
	st := &ss.state
	st.mu.Lock()
	prev := st.scan
	st.mu.Unlock()
	next := map[string]scanEntry{}
	files, total := 0, int64(0)
	for _, root := range folders {
		for _, dir := range []string{root, filepath.Join(root, "src")} {
			for _, m := range ownModules(dir) {
				own[m] = true
			}
		}
		err := ss.scanFolder(ctx, root, prev, next, names, &files, &total)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("workspace %s: %w", root, err)
		}
	}
	for _, d := range docs {
		for _, n := range topImports(d.Buffer().Imports()) {
			names[n] = true
		}
	}
	st.mu.Lock()
	st.scan = next
	st.mu.Unlock()
	var out []string
	for n := range names {
		if !own[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// scanFolder adds the imports of one folder's .py and .pyi files to
// names, through an os.Root of the folder (a file swapped since the walk
// saw it, a pipe, a link out, a grown file, is skipped) and the one
// workspace walk (wswalk: environments under any name, hidden
// directories, caches skipped). files and total count across folders.
func (ss *Sites) scanFolder(ctx context.Context, root string, prev, next map[string]scanEntry, names map[string]bool, files *int, total *int64) error {
	dir, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer dir.Close()
	err = wswalk.Walk(ctx, dir.FS(), scanMaxEntries, func(rel string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // unreadable corners of a workspace are not fatal
		}
		if !d.Type().IsRegular() || !(strings.HasSuffix(rel, ".py") || strings.HasSuffix(rel, ".pyi")) {
			return nil
		}
		if *files >= scanMaxFiles || *total >= scanMaxBytes {
			return fs.SkipAll
		}
		info, err := d.Info()
		if err != nil || info.Size() > scanMaxFileBytes {
			return nil
		}
		*files++
		*total += info.Size()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if old, ok := prev[p]; ok && old.mod.Equal(info.ModTime()) && old.size == info.Size() {
			next[p] = old
		} else {
			src, err := localfile.ReadIn(dir, filepath.FromSlash(rel), scanMaxFileBytes)
			if err != nil {
				return nil
			}
			next[p] = scanEntry{mod: info.ModTime(), size: info.Size(), names: topImports(ss.deps.Parse(src).Imports())}
		}
		for _, n := range next[p].names {
			names[n] = true
		}
		return nil
	})
	if _, ok := errors.AsType[*wswalk.EntryLimitError](err); ok {
		return nil // a data directory, not code: what was read counts
	}
	return err
}

// ownModules lists the top-level modules a directory defines: its .py
// files and its packages.
func ownModules(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, en := range entries {
		name := en.Name()
		switch {
		case en.Type().IsRegular() && strings.HasSuffix(name, ".py"):
			out = append(out, strings.TrimSuffix(name, ".py"))
		case en.IsDir():
			if _, err := os.Lstat(filepath.Join(dir, name, "__init__.py")); err == nil {
				out = append(out, name)
			}
		}
	}
	return out
}

// topImports returns the top-level modules of absolute imports.
func topImports(imports []pybuf.Import) []string {
	var out []string
	seen := map[string]bool{}
	for _, im := range imports {
		if im.Relative || im.Module == "" {
			continue
		}
		top := session.TopPackage(im.Module)
		if remote.ValidTopLevelName(top) && !seen[top] {
			seen[top] = true
			out = append(out, top)
		}
	}
	return out
}
