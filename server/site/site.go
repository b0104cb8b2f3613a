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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
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
