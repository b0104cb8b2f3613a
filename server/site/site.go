// Package site builds the site: a target's packages as a local
// site-packages directory for the Python servers beside torchlsp, and
// decides which site the editor is handed (torchlsp/site) and whether it
// reads it (Handed, PathFor). It reads the targets' model
// (server/session), and knows of the rest of the engine only the Deps it
// was given.
package site

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/internal/wswalk"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/source"
)

// Deps is what the site asks of the engine.
type Deps struct {
	Notify         api.Notifier
	Work           Work
	CacheDir       string
	ConnectTimeout time.Duration // bounds each question to a target
	// Spec and Session are a target's resolved spec and session, the
	// default's for "".
	Spec    func(name string) (remote.Spec, error)
	Session func(name string) (*session.Session, error)
	// Settings are the site's settings as configured now.
	Settings func() Settings
	// Folders are the workspace folders, FolderOf the one holding a path
	// ("" for none), Documents the open documents' latest snapshots.
	Folders   func() []string
	FolderOf  func(path string) string
	Documents func() []*source.Snapshot
	// Parse parses a local Python file's text for its imports.
	Parse func(src []byte) *pybuf.Buffer
}

// Settings are the configuration's site table.
type Settings struct {
	Packages []string // site.packages: names to add, "-name" to leave out
	Hover    string   // site.hover: "compact", "full" or ""
}

// Work is the engine's background group: builds run under its context,
// which ends at shutdown.
type Work interface {
	Go(f func()) bool
	Context() context.Context
}

// Sites builds the site views of the targets and decides what the
// editor is handed.
type Sites struct {
	deps  Deps
	state siteState
}

// New makes the site feature over deps.
func New(deps Deps) *Sites { return &Sites{deps: deps} }

// The site: the target's packages as a local site-packages directory, for
// the Python servers and tools that run beside torchlsp (pyright, Pylance,
// basedpyright, jedi, mypy). It holds torch, every third-party package the
// workspace imports that the target has, and what those packages require:
// the Requires-Dist entries of their metadata that need no extra and that
// the target has installed, two levels down from the packages asked for,
// within a size budget. Each package is a symlink into its read-only
// mirror, so the site costs a few kilobytes beyond the mirrors themselves.
// No name of the standard library, nor a module Python imports when it
// starts, enters it (remote.SiteNames, which BuildSite applies), and a
// package whose metadata passes the helper's bounds is left out; both are
// listed with the reason.
const (
	siteMaxDepth    = 2         // levels of requirements below the packages asked for
	siteMaxPackages = 64        // packages in one site
	siteMaxDepBytes = 256 << 20 // source bytes of the requirements, mirrored over the link

	scanMaxEntries   = 200000   // directory entries a workspace scan visits
	scanMaxFiles     = 5000     // workspace .py files read for their imports
	scanMaxFileBytes = 1 << 20  // larger files are generated, not imports
	scanMaxBytes     = 64 << 20 // all of them together
	siteSaveDelay    = time.Second
)

// SiteResult is what the torchlsp.site command returns and `torchlsp site`
// prints.
type SiteResult struct {
	Target   string   `json:"target"`
	Python   string   `json:"python"` // the interpreter on the target
	Path     string   `json:"path"`   // the stable site directory
	Packages []string `json:"packages"`
	Bytes    int64    `json:"bytes"` // source and metadata bytes the site shows

	// Details describe each package, in the order of Packages.
	Details []SitePackageDetail `json:"-"`
	// Left names what was left out, and why.
	Left    []string      `json:"-"`
	Elapsed time.Duration `json:"-"`

	mirrors    map[string]string // member → the mirror's site dir it links to
	considered map[string]bool   // workspace names asked about
}

// SitePackageDetail is one package of a site.
type SitePackageDetail struct {
	Name    string
	Version string
	Bytes   int64
	Why     string // "torch", "target packages", "workspace", "site.packages", "required by X"
}

// siteState is the engine's record of the sites it built.
type siteState struct {
	mu        sync.Mutex            // guards the fields below
	inflight  map[string]*siteBuild // by target name
	last      map[string]*SiteResult
	asked     map[string]bool      // targets whose site the editor asked for (torchlsp.site)
	shown     map[string]bool      // targets whose site was announced (torchlsp/site)
	announced *api.SiteInfo        // the last torchlsp/site notification
	scan      map[string]scanEntry // workspace file → its top-level imports
	saveTimer *time.Timer          // a rebuild after saves, debounced

	savedPending map[string]bool // saved files not yet read for their imports
	savedReading bool            // a goroutine reads savedPending

	sendMu sync.Mutex // orders torchlsp/site notifications and what they say (sendSite)
}

// siteBuild is one build in progress; done closes when it ends.
type siteBuild struct {
	done chan struct{}
	res  *SiteResult
	err  error
}

type scanEntry struct {
	mod   time.Time
	size  int64
	names []string
}

// Build builds (or brings up to date) the site-packages view of a target,
// the default one when name is empty. Concurrent calls for one target
// share a build; the build runs under the engine's context, so a caller
// that gives up does not spoil it for the others.
func (ss *Sites) Build(ctx context.Context, name string) (*SiteResult, error) {
	spec, err := ss.deps.Spec(name)
	if err != nil {
		return nil, err
	}
	b := ss.startSiteBuild(spec)
	select {
	case <-b.done:
		return b.res, b.err
	case <-ctx.Done():
		return nil, fmt.Errorf("site for target %s: %w", spec.Name, ctx.Err())
	}
}

func (ss *Sites) startSiteBuild(spec remote.Spec) *siteBuild {
	st := &ss.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if b, ok := st.inflight[spec.Name]; ok {
		return b
	}
	if st.inflight == nil {
		st.inflight = map[string]*siteBuild{}
		st.last = map[string]*SiteResult{}
		st.asked = map[string]bool{}
		st.shown = map[string]bool{}
	}
	b := &siteBuild{done: make(chan struct{})}
	st.inflight[spec.Name] = b
	started := ss.deps.Work.Go(func() {
		defer close(b.done)
		b.res, b.err = ss.buildSite(ss.deps.Work.Context(), spec)
		st.mu.Lock()
		delete(st.inflight, spec.Name)
		if b.err == nil {
			st.last[spec.Name] = b.res
		}
		st.mu.Unlock()
	})
	if !started {
		delete(st.inflight, spec.Name)
		b.err = session.ErrShutDown
		close(b.done)
	}
	return b
}

// siteCandidate is a top-level name that may go into the site.
type siteCandidate struct {
	name   string
	why    string
	forced bool   // asked for by name (torch, the target's packages, site.packages): kept even outside site-packages
	dist   string // for requirements: the distribution that should provide it
	dep    bool
}

func (ss *Sites) buildSite(ctx context.Context, spec remote.Spec) (*SiteResult, error) {
	start := time.Now()
	s, err := ss.deps.Session(spec.Name)
	if err != nil {
		return nil, err
	}
	prog := ss.deps.Notify.StartProgress(ctx, "torchlsp: site for "+spec.Name, false)
	res, err := ss.buildSiteWith(ctx, s, prog)
	if err != nil {
		prog.End("failed: " + err.Error())
		return nil, fmt.Errorf("site for target %s: %w", spec.Name, err)
	}
	res.Elapsed = time.Since(start)
	prog.End(fmt.Sprintf("%d packages, %.1f MB", len(res.Packages), float64(res.Bytes)/1e6))
	return res, nil
}

func (ss *Sites) buildSiteWith(ctx context.Context, s *session.Session, prog api.Progress) (*SiteResult, error) {
	spec := s.Spec()
	entries := ss.deps.Settings().Packages
	add, leave := sitePackagesConfig(entries)

	prog.Report("reading the workspace's imports", -1)
	imported, err := ss.workspaceImports(ctx)
	if err != nil {
		return nil, err
	}

	var roots []siteCandidate
	seen := map[string]bool{}
	push := func(list *[]siteCandidate, c siteCandidate) {
		if seen[c.name] || leave[c.name] {
			return
		}
		seen[c.name] = true
		*list = append(*list, c)
	}
	push(&roots, siteCandidate{name: "torch", why: "torch", forced: true})
	for _, p := range spec.Packages {
		if remote.ValidTopLevelName(p) {
			push(&roots, siteCandidate{name: p, why: "target packages", forced: true})
		}
	}
	for _, p := range add {
		push(&roots, siteCandidate{name: p, why: "site.packages", forced: true})
	}
	considered := map[string]bool{}
	for _, p := range imported {
		considered[p] = true
		push(&roots, siteCandidate{name: p, why: "workspace"})
	}

	prog.Report("asking "+spec.Name+" for its standard library", -1)
	stdlib, err := ss.targetStdlib(ctx, s)
	if err != nil {
		return nil, err
	}
	// The same check BuildSite makes, early: a name refused there is not
	// worth mirroring, and its reason is listed with the others.
	names := remote.NewTargetSiteNames(stdlib)

	type chosen struct {
		c  siteCandidate
		sp remote.SitePackage
	}
	var picked []chosen
	var left []string
	level := roots
	for depth := 0; len(level) > 0; depth++ {
		prog.Report(fmt.Sprintf("asking %s about %d packages", spec.Name, len(level)), -1)
		answers, err := ss.askSitePackages(ctx, s, level)
		if err != nil {
			return nil, err
		}
		var next []siteCandidate
		for i, a := range answers {
			c := level[i]
			if !a.Found {
				if c.forced {
					left = append(left, c.name+" (not on the target)")
				}
				continue
			}
			if !a.ThirdParty && !c.forced && !c.dep {
				continue // the standard library, or the user's own code
			}
			if reason, refused := names.Refuse(c.name); refused {
				left = append(left, c.name+" ("+reason+")")
				continue
			}
			switch {
			case a.OverLimit != nil:
				left = append(left, fmt.Sprintf("%s (%s)", c.name, a.OverLimit))
				continue
			case c.dep && (a.Distribution == "" || normDist(a.Distribution) != normDist(c.dist)):
				// A requirement's import name counts only if the
				// requirement's own distribution installed it there.
				left = append(left, fmt.Sprintf("%s (%s, but %s did not install it on the target)", c.name, c.why, c.dist))
				continue
			case len(picked) >= siteMaxPackages:
				left = append(left, c.name+fmt.Sprintf(" (more than %d packages)", siteMaxPackages))
				continue
			}
			picked = append(picked, chosen{c, a})
			if depth >= siteMaxDepth {
				continue
			}
			for _, r := range a.Requires {
				if r.Extra || !r.Installed {
					continue
				}
				if r.OverLimit != nil {
					left = append(left, fmt.Sprintf("%s (required by %s: %s)", r.Distribution, a.Name, r.OverLimit))
					continue
				}
				for _, tl := range r.TopLevel {
					push(&next, siteCandidate{name: tl, why: "required by " + a.Name, dist: r.Distribution, dep: true})
				}
			}
		}
		level = next
	}

	res := &SiteResult{Target: spec.Name, Python: spec.Python, mirrors: map[string]string{}, considered: considered}
	if h, err := s.Client().Hello(ctx); err == nil && h.Executable != "" {
		res.Python = h.Executable
	}
	layout := remote.SiteLayout{TargetStdlib: stdlib.Names, TargetStartup: stdlib.Startup}
	var members []string // each package's entry in the site, as res.Packages
	dists := map[string]bool{}
	var depBytes int64
	for i, p := range picked {
		prog.Report(fmt.Sprintf("fetching %s (%d of %d)", p.c.name, i+1, len(picked)), i*100/len(picked))
		m, info, err := ss.siteMirror(ctx, s, p.c, &depBytes)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if p.c.name == "torch" && !errors.Is(err, session.ErrNotOnTarget) {
				return nil, err
			}
			left = append(left, fmt.Sprintf("%s (%v)", p.c.name, err))
			continue
		}
		entry := remote.SiteEntry{Mirror: m}
		if m.Manifest.Member == p.c.name {
			entry.Markers = p.sp.Typed
		}
		layout.Packages = append(layout.Packages, entry)
		if d := p.sp.DistDir; d != "" && !dists[d] && len(p.sp.Files) > 0 {
			dists[d] = true
			layout.Dists = append(layout.Dists, remote.SiteDist{Dir: d, Files: p.sp.Files})
		}
		res.Packages = append(res.Packages, p.c.name)
		members = append(members, m.Manifest.Member)
		res.Details = append(res.Details, SitePackageDetail{Name: p.c.name, Version: info.Version, Bytes: m.Manifest.Bytes, Why: p.c.why})
		res.mirrors[m.Manifest.Member] = m.SiteDir
	}
	if len(layout.Packages) == 0 {
		return nil, fmt.Errorf("%w: no package to put in a site (%s)", session.ErrNotOnTarget, strings.Join(left, "; "))
	}
	prog.Report("linking the site", 100)
	site, err := remote.BuildSite(ctx, ss.deps.CacheDir, spec, layout)
	if err != nil {
		return nil, err
	}
	for _, l := range site.Left {
		var asked string
		members, asked = res.drop(members, l.Name)
		if asked != "" && asked != l.Name {
			left = append(left, fmt.Sprintf("%s (it is %s on the target, %s)", asked, l.Name, l.Reason))
			continue
		}
		left = append(left, l.String())
	}
	res.Path, res.Bytes, res.Left = site.Path, site.Bytes, left
	return res, nil
}

// drop takes the package whose site entry BuildSite left out off the
// result (a package's entry is named by its directory on the target,
// which a symlink there may make differ from the name asked about).
// It returns members without it, and the name the package was asked by.
func (r *SiteResult) drop(members []string, name string) ([]string, string) {
	for i, m := range members {
		if strings.TrimSuffix(m, ".py") == name {
			asked := r.Packages[i]
			r.Packages = slices.Delete(r.Packages, i, i+1)
			r.Details = slices.Delete(r.Details, i, i+1)
			delete(r.mirrors, m)
			return slices.Delete(members, i, i+1), asked
		}
	}
	return members, ""
}

// targetStdlib asks the target's interpreter for its standard library.
func (ss *Sites) targetStdlib(ctx context.Context, s *session.Session) (remote.StdlibModules, error) {
	ctx, cancel := context.WithTimeout(ctx, ss.deps.ConnectTimeout)
	defer cancel()
	got, err := s.Client().StdlibModules(ctx)
	if err != nil {
		return remote.StdlibModules{}, fmt.Errorf("target %s: %w", s.Spec().Name, err)
	}
	return got, nil
}

// askSitePackages asks the helper about candidates, in batches it accepts.
func (ss *Sites) askSitePackages(ctx context.Context, s *session.Session, cands []siteCandidate) ([]remote.SitePackage, error) {
	ctx, cancel := context.WithTimeout(ctx, ss.deps.ConnectTimeout)
	defer cancel()
	var out []remote.SitePackage
	for start := 0; start < len(cands); start += 256 {
		end := min(start+256, len(cands))
		queries := make([]remote.SiteQuery, 0, end-start)
		for _, c := range cands[start:end] {
			queries = append(queries, remote.SiteQuery{Name: c.name, Owner: c.dist})
		}
		got, err := s.Client().SitePackages(ctx, queries)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", s.Spec().Name, err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// siteMirror makes a package's mirror current. The target's eager packages
// go through the session, which may be loading them already; others are
// located and mirrored directly (a mirror already in the cache with the
// same files is used as it is), without an index: the site needs files,
// not answers. Requirements count against the size budget.
func (ss *Sites) siteMirror(ctx context.Context, s *session.Session, c siteCandidate, depBytes *int64) (*remote.MirrorTree, remote.PackageInfo, error) {
	for _, p := range s.Spec().Packages {
		if p == c.name {
			ps, err := s.Package(ctx, c.name)
			if err != nil {
				return nil, remote.PackageInfo{}, err
			}
			return ps.Mirror(), ps.Info(), nil
		}
	}
	lctx, cancel := context.WithTimeout(ctx, ss.deps.ConnectTimeout)
	info, err := s.Client().PackageInfo(lctx, c.name)
	cancel()
	if remote.IsRemoteError(err, "ModuleNotFoundError") || (err == nil && info.Location == "") {
		return nil, info, session.ErrNotOnTarget
	}
	if err != nil {
		return nil, info, fmt.Errorf("locate %s: %w", c.name, err)
	}
	if c.dep {
		if *depBytes+info.Bytes > siteMaxDepBytes {
			return nil, info, fmt.Errorf("%d MB of requirements already, at most %d MB", *depBytes>>20, siteMaxDepBytes>>20)
		}
		*depBytes += info.Bytes
	}
	m, err := remote.Mirror(ctx, s.Target(), s.Spec(), info, ss.deps.CacheDir, nil)
	if err != nil {
		return nil, info, err
	}
	return m, info, nil
}

// sitePackagesConfig turns site.packages into names to add and to leave
// out; a later entry wins over an earlier one.
func sitePackagesConfig(entries []string) (add []string, leave map[string]bool) {
	leave = map[string]bool{}
	adding := map[string]bool{}
	for _, p := range entries {
		if name, ok := strings.CutPrefix(p, "-"); ok {
			leave[name] = true
			delete(adding, name)
			continue
		}
		delete(leave, p)
		if !adding[p] {
			adding[p] = true
			add = append(add, p)
		}
	}
	kept := add[:0]
	for _, p := range add {
		if adding[p] {
			kept = append(kept, p)
		}
	}
	return kept, leave
}

// normDist normalises a distribution name (PEP 503).
func normDist(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r == '-' || r == '_' || r == '.' {
			if !dash {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		dash = false
		b.WriteRune(r)
	}
	return b.String()
}

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

// Prepare builds the default target's site in the background once an
// editor is connected, and tells the editor where it is. A switch to
// another target withdraws the old site at once.
func (ss *Sites) Prepare() {
	if !ss.deps.Notify.Capabilities().Site {
		return // the command line asks for a site explicitly
	}
	ss.Withdraw()
	spec, err := ss.deps.Spec("")
	if err != nil {
		return
	}
	ss.deps.Work.Go(func() {
		res, err := ss.Build(ss.deps.Work.Context(), spec.Name)
		if err != nil {
			if cur, cerr := ss.deps.Spec(""); cerr == nil && cur.Name == spec.Name && !(ss.deps.Work.Context().Err() != nil) {
				ss.deps.Notify.LogMessage(ss.deps.Work.Context(), api.MessageWarning, "torchlsp: "+err.Error())
			}
			ss.announceSite(api.SiteInfo{Target: spec.Name})
			return
		}
		ss.announceSite(api.SiteInfo{Target: spec.Name, Path: res.Path})
	})
}

// announceSite tells the editor a target's site (torchlsp/site), if that
// target is still the default; sendSite decides.
func (ss *Sites) announceSite(info api.SiteInfo) { ss.sendSite(&info) }

// Withdraw takes an announced site out of the editor's hands once its
// target is no longer the default: the new default's entry, empty until
// its own site is ready, replaces it.
func (ss *Sites) Withdraw() { ss.sendSite(nil) }

// sendSite is the one place that decides what torchlsp/site says. It
// decides under sendMu, which orders the notifications, against the
// default target as it is then: a site of a target that is no longer the
// default (a build that ended after a switch, wherever it was started) is
// dropped, and an earlier announcement for another target is withdrawn.
// A notification that would repeat the last one is not sent.
func (ss *Sites) sendSite(info *api.SiteInfo) {
	if !ss.deps.Notify.Capabilities().Site {
		return
	}
	st := &ss.state
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	cur, err := ss.deps.Spec("")
	if err != nil {
		return // no default target to hand a site of
	}
	st.mu.Lock()
	last := st.announced
	st.mu.Unlock()
	if info == nil || info.Target != cur.Name {
		if info != nil && info.Path != "" {
			ss.deps.Notify.LogMessage(ss.deps.Work.Context(), api.MessageLog, fmt.Sprintf("torchlsp: the site of target %s is not handed to the editor: the default target is %s now", info.Target, cur.Name))
		}
		if last == nil || last.Target == cur.Name {
			return // nothing of another target to withdraw
		}
		info = &api.SiteInfo{Target: cur.Name}
	}
	if last != nil && *last == *info {
		return
	}
	sent := *info
	st.mu.Lock()
	st.announced = &sent
	if sent.Path != "" {
		if st.shown == nil {
			st.shown = map[string]bool{}
		}
		st.shown[sent.Target] = true
	}
	st.mu.Unlock()
	ss.deps.Notify.Site(ss.deps.Work.Context(), sent)
}

// Command runs torchlsp.site: the target's site, built or brought up
// to date. Without a target it is the default's as the answer goes out:
// when the default changed while the site was built, the new default's is
// built in turn.
func (ss *Sites) Command(ctx context.Context, args api.TargetArgs) (*SiteResult, error) {
	const tries = 3
	for try := 1; ; try++ {
		res, err := ss.Build(ctx, args.Target)
		if err != nil {
			return nil, err
		}
		cur, err := ss.deps.Spec("")
		if args.Target == "" && (err != nil || cur.Name != res.Target) {
			if try < tries {
				continue
			}
			return nil, fmt.Errorf("site of the default target: the default changed %d times while its site was built", tries)
		}
		st := &ss.state
		st.mu.Lock()
		st.asked[res.Target] = true
		st.mu.Unlock()
		return res, nil
	}
}

// PackagesChanged rebuilds a site after one of its packages was
// mirrored again (the target's copy changed).
func (ss *Sites) PackagesChanged(target string) {
	st := &ss.state
	st.mu.Lock()
	_, built := st.last[target]
	inflight := st.inflight[target]
	st.mu.Unlock()
	if !built && inflight == nil {
		return // nobody asked for this target's site
	}
	ss.deps.Work.Go(func() {
		if inflight != nil {
			// A build that started before the new mirror may link the old
			// one: let it end, then build again.
			select {
			case <-inflight.done:
			case <-ss.deps.Work.Context().Done():
				return
			}
		}
		res, err := ss.Build(ss.deps.Work.Context(), target)
		if err != nil {
			return
		}
		ss.announceSite(api.SiteInfo{Target: target, Path: res.Path})
	})
}

// Saved rebuilds the default target's site, shortly, when a saved file
// imports a top-level module the last build did not consider. It is called
// on the LSP read loop, so the file is read in the background: a saved
// path may be a named pipe or a link to a device, and no file on disk may
// hold up the answers to later requests.
func (ss *Sites) Saved(path string) {
	if !strings.HasSuffix(path, ".py") || ss.deps.FolderOf(path) == "" {
		return
	}
	st := &ss.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.savedPending == nil {
		st.savedPending = map[string]bool{}
	}
	st.savedPending[path] = true
	if !st.savedReading {
		st.savedReading = ss.deps.Work.Go(ss.readSaved)
	}
}

// readSaved reads the saved files one at a time until none is pending:
// however many saves arrive, one goroutine reads.
func (ss *Sites) readSaved() {
	st := &ss.state
	for {
		st.mu.Lock()
		path := ""
		for p := range st.savedPending {
			path = p
			break
		}
		if path == "" {
			st.savedReading = false
			st.mu.Unlock()
			return
		}
		delete(st.savedPending, path)
		st.mu.Unlock()
		ss.siteSavedRead(path)
	}
}

// siteSavedRead reads a saved file (a bounded regular file, or nothing)
// and schedules the rebuild when it imports something new.
func (ss *Sites) siteSavedRead(path string) {
	spec, err := ss.deps.Spec("")
	if err != nil {
		return
	}
	st := &ss.state
	st.mu.Lock()
	last := st.last[spec.Name]
	st.mu.Unlock()
	if last == nil {
		return
	}
	src, err := localfile.Read(path, scanMaxFileBytes)
	if err != nil {
		return
	}
	fresh := false
	for _, n := range topImports(ss.deps.Parse(src).Imports()) {
		if !last.considered[n] {
			fresh = true
		}
	}
	if !fresh {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.saveTimer != nil {
		st.saveTimer.Stop()
	}
	st.saveTimer = time.AfterFunc(siteSaveDelay, func() {
		ss.deps.Work.Go(func() {
			res, err := ss.Build(ss.deps.Work.Context(), spec.Name)
			if err == nil {
				ss.announceSite(api.SiteInfo{Target: spec.Name, Path: res.Path})
			}
		})
	})
}

// Handed returns a target's site when the editor's Python server reads
// it: the editor asked for it with torchlsp.site, or site.hover is
// "compact" and the site was announced. An editor that only receives
// torchlsp/site may ignore it, so that alone changes nothing. Definitions
// then point into the site, where both servers' answers coincide.
func (ss *Sites) Handed(target string) *SiteResult {
	hover := ss.deps.Settings().Hover
	st := &ss.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.asked[target] && !(hover == "compact" && st.shown[target]) {
		return nil
	}
	return st.last[target]
}

// Compact reports whether hovers on a target leave signatures and
// docstrings to the Python server that reads its site.
func (ss *Sites) Compact(target string) bool {
	full := ss.deps.Settings().Hover == "full"
	return !full && ss.Handed(target) != nil
}

// PathFor maps a file of a mirror to the same file seen through the
// site the editor's Python server reads for target, when it reads one:
// both servers then name the same file.
func (ss *Sites) PathFor(target string, m *remote.MirrorTree, local string) (string, bool) {
	return ss.Handed(target).sitePath(m, local)
}

// sitePath maps a file in a mirror to the same file seen through a site.
func (r *SiteResult) sitePath(m *remote.MirrorTree, local string) (string, bool) {
	if r == nil || m == nil || r.mirrors[m.Manifest.Member] != m.SiteDir {
		return "", false
	}
	rel, err := filepath.Rel(m.SiteDir, local)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.Join(r.Path, rel), true
}
