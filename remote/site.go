package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// A site is a local directory laid out as the target's site-packages, for
// every Python tool the user runs (pyright, Pylance, basedpyright, jedi,
// mypy, a notebook kernel): one entry per package, each a symlink into the
// package's read-only mirror, plus the distributions' metadata directories
// and the packages' py.typed markers, which mirrors do not hold.
//
// Its path is stable per target and interpreter:
//
//	<cache>/site/<target>-<identity>            a symlink, switched atomically
//	<cache>/site/.gens/<target>-<identity>-<h>/ one generation, read-only
//
// A generation is named by the hash of its content, so an unchanged site is
// not rebuilt, and two processes building the same content agree. The link
// is replaced by renaming a new link over it; the previous generation is
// kept, so a tool that resolved the old link keeps reading a whole tree.
// A package whose mirror is made again in place switches on its own, when
// the mirror's directory is renamed over the old one.
const (
	sitesDir    = "site"
	siteGens    = ".gens"
	siteLockExt = ".lock"
)

// SiteEntry is one package of a site.
type SiteEntry struct {
	// Mirror is the package's mirror; its member (torch, six.py) is the
	// entry's name in the site.
	Mirror *MirrorTree
	// Markers are the package's py.typed files. A package with markers is
	// a real directory of symlinks in the site, so that the markers can
	// sit beside the mirrored sources.
	Markers []TypedMarker
}

// SiteDist is a distribution's metadata directory.
type SiteDist struct {
	Dir   string            // e.g. torch-2.11.0.dist-info
	Files map[string]string // by name, from siteMetadataFiles
}

// SiteLayout is what a site holds.
type SiteLayout struct {
	Packages []SiteEntry
	Dists    []SiteDist
	// TargetStdlib is the target interpreter's standard library (its
	// StdlibModules names). No package of such a name enters the site,
	// nor one of the embedded list's (see SiteNames), whatever this holds.
	TargetStdlib []string
	// TargetStartup are the modules the .pth files of the target's site
	// directories import at start-up (its StdlibModules Startup): none of
	// them enters the site, nor any StartupModule.
	TargetStartup []string
}

// SiteLeftOut is a package a site does not hold, and why.
type SiteLeftOut struct {
	Name   string
	Reason string
}

func (l SiteLeftOut) String() string { return l.Name + " (" + l.Reason + ")" }

// Site is a built site.
type Site struct {
	Path       string // the stable path: give this to tools
	Generation string // the directory Path points to now
	Members    []string
	Bytes      int64 // source and metadata bytes the site shows (mirrors included)
	Changed    bool  // this build moved the link
	// Left are the layout's packages the site does not hold: names it
	// must not shadow (SiteNames).
	Left []SiteLeftOut
}

// SitePath is the stable site path of a target under cacheRoot.
func SitePath(cacheRoot string, spec Spec) string {
	return filepath.Join(cacheRoot, sitesDir, siteKey(spec))
}

func siteKey(spec Spec) string {
	return sanitize(spec.Name) + "-" + TargetIdentity(spec)
}

// BuildSite makes the site for spec hold layout, atomically: the stable
// path shows either the previous site or the new one, never a mix. Every
// package passes SiteNames here, whoever made the layout: one that would
// shadow the standard library, or run when Python starts, is left out and
// listed in Site.Left.
func BuildSite(ctx context.Context, cacheRoot string, spec Spec, layout SiteLayout) (*Site, error) {
	if err := checkLayout(layout); err != nil {
		return nil, fmt.Errorf("site for target %q: %w", spec.Name, err)
	}
	layout, left := filterLayout(layout, NewSiteNames(layout.TargetStdlib, layout.TargetStartup...))
	key := siteKey(spec)
	root := filepath.Join(cacheRoot, sitesDir)
	gens := filepath.Join(root, siteGens)
	if err := os.MkdirAll(gens, 0o755); err != nil {
		return nil, fmt.Errorf("site for target %q: %w", spec.Name, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(root, "."+key+siteLockExt))
	if err != nil {
		return nil, fmt.Errorf("site for target %q: %w", spec.Name, err)
	}
	defer unlock()

	sum := layoutHash(layout)
	gen := filepath.Join(gens, key+"-"+sum)
	site := &Site{Path: filepath.Join(root, key), Generation: gen, Bytes: layoutBytes(layout), Left: left}
	for _, p := range layout.Packages {
		site.Members = append(site.Members, p.Mirror.Manifest.Member)
	}
	if _, err := os.Lstat(gen); err != nil {
		if err := writeGeneration(gens, gen, layout); err != nil {
			return nil, fmt.Errorf("site for target %q: %w", spec.Name, err)
		}
	}
	rel := filepath.Join(siteGens, filepath.Base(gen))
	prev, _ := os.Readlink(site.Path)
	if prev != rel {
		tmp := filepath.Join(root, fmt.Sprintf(".link-%s-%d-%s", key, os.Getpid(), randomSuffix()))
		if err := os.Symlink(rel, tmp); err != nil {
			return nil, fmt.Errorf("site for target %q: %w", spec.Name, err)
		}
		if err := os.Rename(tmp, site.Path); err != nil {
			os.Remove(tmp)
			return nil, fmt.Errorf("site for target %q: switch to the new generation: %w", spec.Name, err)
		}
		site.Changed = true
	}
	pruneGenerations(gens, key, filepath.Base(gen), filepath.Base(prev))
	return site, nil
}

// checkLayout refuses layouts whose names would collide or escape.
func checkLayout(layout SiteLayout) error {
	seen := map[string]bool{}
	for _, p := range layout.Packages {
		if p.Mirror == nil {
			return errors.New("package without a mirror")
		}
		m := p.Mirror.Manifest.Member
		name := strings.TrimSuffix(m, ".py")
		if !ValidTopLevelName(name) || (m != name && m != name+".py") {
			return fmt.Errorf("bad member %q", m)
		}
		if seen[name] {
			return fmt.Errorf("two packages named %s", name)
		}
		seen[name] = true
		if len(p.Markers) > 0 && m != name {
			return fmt.Errorf("py.typed markers for the module %s", m)
		}
		for _, mk := range p.Markers {
			if err := checkMarkerPath(mk.Path, name); err != nil {
				return err
			}
		}
	}
	for _, d := range layout.Dists {
		if !distDirName.MatchString(d.Dir) {
			return fmt.Errorf("bad metadata directory %q", d.Dir)
		}
		if seen[d.Dir] {
			return fmt.Errorf("two metadata directories named %s", d.Dir)
		}
		seen[d.Dir] = true
		for name := range d.Files {
			if !isMetadataFile(name) {
				return fmt.Errorf("%s: unexpected metadata file %q", d.Dir, name)
			}
		}
	}
	return nil
}

// filterLayout keeps the packages names accepts.
func filterLayout(layout SiteLayout, names *SiteNames) (SiteLayout, []SiteLeftOut) {
	var left []SiteLeftOut
	kept := make([]SiteEntry, 0, len(layout.Packages))
	for _, p := range layout.Packages {
		name := strings.TrimSuffix(p.Mirror.Manifest.Member, ".py")
		if reason, refused := names.Refuse(name); refused {
			left = append(left, SiteLeftOut{Name: name, Reason: reason})
			continue
		}
		kept = append(kept, p)
	}
	layout.Packages = kept
	return layout, left
}

// layoutHash names a generation by everything it holds.
func layoutHash(layout SiteLayout) string {
	h := sha256.New()
	pkgs := append([]SiteEntry(nil), layout.Packages...)
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Mirror.Manifest.Member < pkgs[j].Mirror.Manifest.Member })
	for _, p := range pkgs {
		// A mirror made again in place (the target's copy changed) is a
		// new generation too, though its links read the same.
		man := p.Mirror.Manifest
		fmt.Fprintf(h, "pkg %q %q %d %d %s\n", man.Member, p.Mirror.SiteDir, man.Files, man.Bytes, man.Created.Format(time.RFC3339Nano))
		marks := append([]TypedMarker(nil), p.Markers...)
		sort.Slice(marks, func(i, j int) bool { return marks[i].Path < marks[j].Path })
		for _, m := range marks {
			fmt.Fprintf(h, "typed %q %q\n", m.Path, m.Text)
		}
	}
	dists := append([]SiteDist(nil), layout.Dists...)
	sort.Slice(dists, func(i, j int) bool { return dists[i].Dir < dists[j].Dir })
	for _, d := range dists {
		fmt.Fprintf(h, "dist %q\n", d.Dir)
		for _, name := range sortedNames(d.Files) {
			fmt.Fprintf(h, "file %q %q\n", name, d.Files[name])
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func layoutBytes(layout SiteLayout) int64 {
	var n int64
	for _, p := range layout.Packages {
		n += p.Mirror.Manifest.Bytes
		for _, m := range p.Markers {
			n += int64(len(m.Text))
		}
	}
	for _, d := range layout.Dists {
		for _, f := range d.Files {
			n += int64(len(f))
		}
	}
	return n
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeGeneration writes a generation in a temporary directory, makes it
// read-only and renames it into place.
func writeGeneration(gens, gen string, layout SiteLayout) error {
	tmp, err := os.MkdirTemp(gens, fmt.Sprintf(".tmp-%d-", os.Getpid()))
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			removeTree(tmp)
		}
	}()
	for _, p := range layout.Packages {
		if err := writeSitePackage(tmp, p); err != nil {
			return fmt.Errorf("package %s: %w", p.Mirror.Manifest.Member, err)
		}
	}
	for _, d := range layout.Dists {
		dir := filepath.Join(tmp, d.Dir)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for _, name := range sortedNames(d.Files) {
			if err := writeReadOnly(filepath.Join(dir, name), d.Files[name]); err != nil {
				return err
			}
		}
	}
	if err := checkSiteTop(tmp); err != nil {
		return err
	}
	if err := readOnlyDirs(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, gen); err != nil {
		if _, statErr := os.Lstat(gen); statErr == nil {
			return nil // another process wrote the same generation
		}
		return err
	}
	done = true
	return nil
}

// checkSiteTop refuses a generation whose top level holds a .pth file:
// a tool that takes the site for a site directory (site.addsitedir) would
// run its import lines. checkLayout lets none through; this says so
// again where the files are.
func checkSiteTop(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasSuffix(strings.ToLower(e.Name()), ".pth") {
			return fmt.Errorf("%s: a .pth file in a site: refused", e.Name())
		}
	}
	return nil
}

// writeSitePackage links a package into the site. Without py.typed
// markers it is one symlink to the mirror's copy; with markers, every
// directory on the way to a marker is a real directory whose other entries
// are symlinks into the mirror.
func writeSitePackage(site string, p SiteEntry) error {
	member := p.Mirror.Manifest.Member
	src := filepath.Join(p.Mirror.SiteDir, member)
	if len(p.Markers) == 0 {
		return os.Symlink(src, filepath.Join(site, member))
	}
	real := map[string]bool{} // slash paths relative to the site
	for _, m := range p.Markers {
		for d := filepath.ToSlash(filepath.Dir(filepath.FromSlash(m.Path))); d != "."; d = filepath.ToSlash(filepath.Dir(filepath.FromSlash(d))) {
			real[d] = true
		}
	}
	var link func(rel string) error
	link = func(rel string) error {
		dst := filepath.Join(site, filepath.FromSlash(rel))
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		entries, err := readCacheDir(filepath.Join(p.Mirror.SiteDir, filepath.FromSlash(rel)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			child := rel + "/" + e.Name()
			if e.IsDir() && real[child] {
				if err := link(child); err != nil {
					return err
				}
				continue
			}
			if err := os.Symlink(filepath.Join(p.Mirror.SiteDir, filepath.FromSlash(child)), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
		// A marker's directory may hold no sources, so the mirror lacks it.
		for d := range real {
			if filepath.ToSlash(filepath.Dir(filepath.FromSlash(d))) == rel {
				if _, err := os.Lstat(filepath.Join(site, filepath.FromSlash(d))); errors.Is(err, fs.ErrNotExist) {
					if err := link(d); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := link(member); err != nil {
		return err
	}
	for _, m := range p.Markers {
		dst := filepath.Join(site, filepath.FromSlash(m.Path))
		if _, err := os.Lstat(dst); err == nil {
			continue // the mirror had one: it is a symlink already
		}
		if err := writeReadOnly(dst, m.Text); err != nil {
			return err
		}
	}
	return nil
}

func writeReadOnly(p, text string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readOnlyDirs makes every real directory under root 0555, deepest first.
func readOnlyDirs(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
}

// pruneGenerations removes this site's generations other than the current
// and the previous one, and temporary directories of builds that can no
// longer finish.
func pruneGenerations(gens, key, current, previous string) {
	entries, err := readCacheDir(gens)
	if err != nil {
		return
	}
	prefix := key + "-"
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".tmp-"):
			if tmpAbandoned(filepath.Join(gens, name), name) {
				removeTree(filepath.Join(gens, name))
			}
		case strings.HasPrefix(name, prefix) && name != current && name != previous:
			rest := strings.TrimPrefix(name, prefix)
			if len(rest) == 16 && !strings.Contains(rest, "-") {
				removeTree(filepath.Join(gens, name))
			}
		}
	}
}

// lockFile takes an exclusive lock on path, waiting until ctx ends. The
// lock file is a file of the cache: opened without following a link or
// blocking, and it must be a regular file.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is %s, %w", path, fileKind(st.Mode()), errCacheNotRegular)
		}
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
