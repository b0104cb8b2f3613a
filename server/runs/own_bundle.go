package runs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/repro"
)

// ErrHomeRefused is a run's error when it would send files of the user's
// home directory (or of a directory that holds it) and nobody allowed it.
var ErrHomeRefused = errors.New("files of your home directory are sent only when you allow it")

// runPlace is where a run's files come from and where its report goes.
type runPlace struct {
	// dir is the workspace root that holds the file, else the file's own
	// directory.
	dir string
	// rooted says dir is a workspace root the user chose (an editor's
	// workspace folder, the directory of a torchlsp.toml): its Python
	// files may travel, and its .torchlsp keeps the reports. Otherwise
	// only the file and the modules it imports travel, and reports go
	// under the cache.
	rooted bool
}

// placeOf finds where a run of the document works. A document whose path
// is no regular file (a device, a pipe: file:///dev/zero) is refused.
func (rn *Runs) placeOf(doc *api.Snapshot) (runPlace, error) {
	p := doc.Path()
	if p == "" {
		return runPlace{}, errors.New("the document has no file, where the run's files are kept")
	}
	if st, err := os.Stat(p); err == nil && !st.Mode().IsRegular() {
		return runPlace{}, fmt.Errorf("%s is %s, not a Python file: a run needs a regular file", p, localfile.Kind(st.Mode()))
	}
	if root := rn.deps.FolderOf(p); root != "" {
		return runPlace{dir: root, rooted: true}, nil
	}
	return runPlace{dir: filepath.Dir(p)}, nil
}

// runOptions says where the run keeps its files: under the workspace
// root's .torchlsp/repros when those directories are the user's
// (runStateOwned), else under the cache, and the user is told why.
func (rn *Runs) runOptions(place runPlace) repro.RunOptions {
	if place.rooted {
		err := runStateOwned(place.dir)
		if err == nil {
			return repro.RunOptions{Workspace: place.dir}
		}
		where := "keeps no files"
		if rn.deps.CacheDir != "" {
			where = "keeps its files under " + filepath.Join(rn.deps.CacheDir, "repros")
		}
		ctx, cancel := context.WithTimeout(context.Background(), showTimeout)
		defer cancel()
		rn.deps.Notify.ShowMessage(ctx, api.MessageWarning, fmt.Sprintf("torchlsp: the run %s, not in %s: %v; torchlsp never writes into a directory another user owns or can write",
			where, filepath.Join(place.dir, runStateDir, runReprosDir), err))
	}
	if rn.deps.CacheDir == "" {
		return repro.RunOptions{}
	}
	return repro.RunOptions{StateDir: rn.deps.CacheDir}
}

// runStateDir and runReprosDir are where repro keeps a run's files under a
// workspace root: <root>/.torchlsp/repros/<run>.
const (
	runStateDir  = ".torchlsp"
	runReprosDir = "repros"
)

// runStateOwned checks, before a run writes, that the workspace root, its
// .torchlsp and .torchlsp/repros (those that exist: repro creates the
// others, 0700, as the user) are directories, no links, that the current
// user owns and no other user can write. Another user's directory there
// (a .torchlsp/repros of theirs, 0777) would receive the run's scripts
// and results, and one that others can write could be swapped for theirs
// between this check and the write.
func runStateOwned(root string) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	check := func(name, shown string) (bool, error) {
		st, err := r.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist) && name != ".":
			return false, nil
		case err != nil:
			return false, err
		case !st.IsDir():
			return false, fmt.Errorf("%s is %s, not a directory", shown, localfile.Kind(st.Mode()))
		case !localfile.OwnedByMe(st):
			uid, _ := localfile.Owner(st)
			return false, fmt.Errorf("%s belongs to another user (uid %d)", shown, uid)
		case st.Mode().Perm()&0o002 != 0:
			return false, fmt.Errorf("%s is writable by every user (mode %04o)", shown, st.Mode().Perm())
		}
		return true, nil
	}
	state := filepath.Join(root, runStateDir)
	for _, d := range []struct{ name, shown string }{
		{".", root},
		{runStateDir, state},
		{path.Join(runStateDir, runReprosDir), filepath.Join(state, runReprosDir)},
	} {
		if there, err := check(d.name, d.shown); err != nil || !there {
			return err
		}
	}
	return nil
}

// ownBundle gathers the files a run of the user's code sends. The file
// under test, the entry point, the input factory's module and every
// workspace module they import, transitively, come first: the run refuses
// with a message if one cannot travel. Under a workspace root the root's
// other Python files follow, within repro's limits; without one nothing
// else travels, within the neighbours' limits. Files of a home directory
// travel only once the user allowed it (allowHome, or Confirm).
func (rn *Runs) ownBundle(ctx context.Context, place runPlace, oc ownCode, allowHome bool) (repro.Bundle, error) {
	lim := repro.BundleLimits{}
	if !place.rooted {
		lim = repro.BundleLimits{MaxFiles: repro.NeighbourMaxFiles, MaxBytes: repro.NeighbourMaxBytes}
	}
	c, err := repro.NewCollector(place.dir, lim)
	if err != nil {
		return repro.Bundle{}, err
	}
	defer c.Close()
	if err := rn.requireImported(c, oc); err != nil {
		return repro.Bundle{}, err
	}
	if place.rooted {
		if err := c.Walk(ctx); err != nil {
			return repro.Bundle{}, err
		}
	}
	b := c.Bundle()
	if !allowHome && rn.holdsHome(place.dir) {
		if err := rn.confirmHome(ctx, place, b); err != nil {
			return repro.Bundle{}, err
		}
	}
	return b, nil
}

// requireImported adds the files the run cannot do without, and the
// workspace modules each imports.
func (rn *Runs) requireImported(c *repro.Collector, oc ownCode) error {
	type need struct{ rel, why string }
	queue := []need{{oc.Rel, "the file under test"}}
	if oc.Entry != "" && oc.Entry != oc.Rel {
		queue = append(queue, need{path.Clean(oc.Entry), "the entry point"})
	}
	// Python puts the entry point's directory first on sys.path, then the
	// workspace root (repro.py does the same).
	search := []string{path.Dir(oc.Entry), "."}
	if mod, _, ok := strings.Cut(oc.Inputs, ":"); ok {
		for _, rel := range moduleFiles(search, mod, c.Lstat) {
			queue = append(queue, need{rel, "the module of the input factory " + oc.Inputs})
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if c.Has(n.rel) {
			continue
		}
		data, err := c.Require(n.rel)
		if err != nil {
			return fmt.Errorf("%s cannot be sent to the target, so the run is not started: %w", n.why, err)
		}
		for _, rel := range importedFiles(n.rel, rn.deps.Parse(data).Imports(), search, c.Lstat) {
			if !c.Has(rel) {
				queue = append(queue, need{rel, "a module imported by " + n.rel})
			}
		}
	}
	return nil
}

// importedFiles lists the workspace files that the imports of the module
// at rel load: each package's __init__.py on the way and the module's own
// file, found in the directories Python searches (absolute imports) or
// beside rel (relative ones). Imports that name no workspace file (torch,
// the standard library) add nothing.
func importedFiles(rel string, imports []pybuf.Import, search []string, lstat func(string) (fs.FileInfo, error)) []string {
	var out []string
	seen := map[string]bool{}
	add := func(files []string) {
		for _, f := range files {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	for _, im := range imports {
		mods := []string{im.Module}
		if im.Relative {
			level := len(im.Module) - len(strings.TrimLeft(im.Module, "."))
			base := path.Dir(rel)
			for range level - 1 {
				if base == "." {
					base = ""
					break
				}
				base = path.Dir(base)
			}
			if base == "" {
				continue // above the root: it cannot import on the target either
			}
			mods = []string{strings.TrimLeft(im.Module, ".")}
			if im.Imported != "" {
				mods = append(mods, strings.TrimPrefix(mods[0]+"."+im.Imported, "."))
			}
			for _, m := range mods {
				if m != "" {
					add(moduleFiles([]string{base}, m, lstat))
				}
			}
			continue
		}
		if im.Imported != "" {
			mods = append(mods, im.Module+"."+im.Imported)
		}
		for _, m := range mods {
			add(moduleFiles(search, m, lstat))
		}
	}
	return out
}

// moduleFiles lists the workspace files that importing mod loads, from
// the first directory of search that holds its top-level name, as Python
// finds them: a package (a directory with __init__.py) before a module
// file, a module file before a namespace directory.
func moduleFiles(search []string, mod string, lstat func(string) (fs.FileInfo, error)) []string {
	parts := strings.Split(mod, ".")
	for _, p := range parts {
		if !pyIdent.MatchString(p) {
			return nil
		}
	}
	exists := func(rel string) bool { _, err := lstat(rel); return err == nil }
	isDir := func(rel string) bool { st, err := lstat(rel); return err == nil && st.IsDir() }
	for _, dir := range search {
		var files []string
		cur, found := dir, false
	walk:
		for _, p := range parts {
			next := path.Join(cur, p)
			switch {
			case exists(path.Join(next, "__init__.py")):
				files = append(files, path.Join(next, "__init__.py"))
				cur, found = next, true
			case exists(next + ".py"):
				files = append(files, next+".py")
				found = true
				break walk // what follows is an attribute of the module
			case isDir(next):
				cur, found = next, true // a namespace package
			default:
				break walk
			}
		}
		if found {
			return files
		}
	}
	return nil
}

// holdsHome reports whether dir is the user's home directory or holds it.
func (rn *Runs) holdsHome(dir string) bool {
	home := rn.deps.HomeDir
	if home == "" {
		return false
	}
	rel, err := filepath.Rel(dir, home)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// confirmHome asks the user before files of their home directory travel;
// without a yes the run is refused with ErrHomeRefused.
func (rn *Runs) confirmHome(ctx context.Context, place runPlace, b repro.Bundle) error {
	what := "your home directory"
	if place.dir != rn.deps.HomeDir {
		what = "a directory that holds your home directory"
	}
	var files []string
	for i, f := range b.Files {
		if i == 5 {
			files = append(files, fmt.Sprintf("and %d more", len(b.Files)-i))
			break
		}
		files = append(files, f.Path)
	}
	question := fmt.Sprintf("torchlsp: the run would send %d Python file(s), %d bytes, from %s to the target: %s. Send them?",
		len(b.Files), b.Bytes(), place.dir, strings.Join(files, ", "))
	yes, err := rn.deps.Notify.Confirm(ctx, question, "Send")
	if err != nil && !errors.Is(err, api.ErrCannotAsk) {
		return fmt.Errorf("%s is %s: %w (asking failed: %v)", place.dir, what, ErrHomeRefused, err)
	}
	if !yes {
		return fmt.Errorf("%s is %s, and the run would send %d file(s) from it: %w", place.dir, what, len(b.Files), ErrHomeRefused)
	}
	return nil
}
