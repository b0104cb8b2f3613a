package checks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/source"
	"github.com/torchlsp/torchlsp/server/wsmodel"
)

// models keeps the workspace model (server/wsmodel) of the default
// target's torch: built once from the files on disk in the background,
// then each open document's checked version replaces its file. A check
// reads the version current when it starts.
type models struct {
	mu sync.Mutex // guards the fields below
	// cat is the catalog the model was built against, and paths the
	// import paths it named modules from; a new one (another target, a
	// new mirror, a new [workspace] paths) starts a new build.
	cat      *gates.Catalog
	paths    []string
	model    *wsmodel.Model // nil until the build ends
	building chan struct{}  // closed when the build under way ends
	ix       *wsmodel.Indexer
	versions map[string]int32  // path → the open version the model holds
	prints   map[string]string // path → the verdicts its last check used
}

// modelFor returns the model for cat, starting its build when there is
// none; nil while it builds, unless wait is set, when it waits for the
// build within ctx.
func (ch *Checks) modelFor(ctx context.Context, cat *gates.Catalog, siteDir string, env map[string]string, wait bool) *wsmodel.Model {
	m := &ch.models
	// A folder in torchlsp's cache is a server started in a mirror: torch's
	// files, not the user's, and the cache is never written from there.
	folders := ch.ownFolders()
	if len(folders) == 0 {
		return nil
	}
	paths := wsmodel.ImportPaths(folders, ch.deps.ImportPaths())
	m.mu.Lock()
	if m.cat != cat || !slices.Equal(m.paths, paths) {
		m.cat, m.paths, m.model, m.versions, m.prints = cat, paths, nil, map[string]int32{}, map[string]string{}
		m.ix = &wsmodel.Indexer{
			Roots: folders, Paths: paths,
			Parse: ch.parseBudgeted,
			Facts: func(b *pybuf.Buffer) diagnose.Facts {
				return diagnose.FactsOf(b, cat, diagnose.Options{SiteDir: siteDir, Env: env})
			},
			Limits:  wsmodel.DefaultLimits(),
			Exclude: ch.deps.CacheDir,
		}
		if ch.deps.CacheDir != "" {
			m.ix.CacheKey = modelKey(cat, siteDir, env)
			sum := sha256.Sum256([]byte(strings.Join(folders, "\x00")))
			m.ix.CacheFile = filepath.Join(ch.deps.CacheDir, "workspace", hex.EncodeToString(sum[:8])+".gob")
		}
		done := make(chan struct{})
		m.building = done
		ix := m.ix
		started := ch.deps.Work.Go(func() {
			defer close(done)
			ctx := ch.deps.Work.Context()
			start := time.Now()
			built, st, err := ix.Build(ctx)
			switch {
			case err != nil:
				ch.deps.Notify.LogMessage(ctx, api.MessageWarning, fmt.Sprintf("workspace model: %v", err))
				built = wsmodel.New(folders, nil)
			default:
				msg := fmt.Sprintf("workspace model: %d files (%d from the cache, %d unreadable) in %v", st.Files, st.Cached, st.Skipped, time.Since(start).Round(time.Millisecond))
				if st.Truncated != "" {
					msg += "; the rest left out: " + st.Truncated
				}
				ch.deps.Notify.LogMessage(ctx, api.MessageInfo, msg)
			}
			// The open documents' versions win over the disk.
			versions := map[string]int32{}
			for _, doc := range ch.deps.Documents() {
				if f, ok := fileOfOpen(ctx, ix, doc); ok {
					built = built.With(f)
					versions[f.Path] = doc.Version()
				}
			}
			m.mu.Lock()
			if m.cat == cat {
				m.model = built
				for p, v := range versions {
					m.versions[p] = v
				}
			}
			m.mu.Unlock()
			ch.RepublishAll()
		})
		if !started {
			close(done)
		}
	}
	model, building := m.model, m.building
	m.mu.Unlock()
	if model != nil || !wait {
		return model
	}
	select {
	case <-building:
	case <-ctx.Done():
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.model
}

// Model is the workspace model of the default target's torch, with the
// open documents' checked versions: it starts the build when there is
// none and waits for it within ctx; nil when there is no target, no
// workspace folder, or ctx ends first.
func (ch *Checks) Model(ctx context.Context) *wsmodel.Model {
	s, err := ch.deps.Session("")
	if err != nil {
		return nil
	}
	cat, ps, err := s.Catalog(ctx)
	if err != nil {
		return nil
	}
	if ch.modelFor(ctx, cat, ps.Mirror().SiteDir, s.Spec().Env, true) == nil {
		return nil
	}
	m := &ch.models
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.model // open documents' versions may have replaced files since
}

// Reexporter follows the names a workspace's modules import onward
// (pyindex.Reexports).
type Reexporter interface {
	Reexport(module, name string) (qualname string, ok bool)
}

// Reexports is what a references query running within ctx follows the
// workspace's re-exports through: the model (its build waited for at most
// wait) once torch's mirror is complete, when the flag catalog its build
// needs is at hand; before that, the workspace's imports alone, read as
// the query asks (wsmodel.ImportsOnly), so that a cold start's first
// references do not wait for the bulk mirror. nil when there is no
// workspace, or the model was not built within wait.
func (ch *Checks) Reexports(ctx context.Context, wait time.Duration) Reexporter {
	s, err := ch.deps.Session("")
	if err != nil {
		return nil
	}
	if s.Mirrored("torch") {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		if m := ch.Model(wctx); m != nil {
			return m
		}
		return nil
	}
	folders := ch.ownFolders()
	if len(folders) == 0 {
		return nil
	}
	ix := &wsmodel.Indexer{
		Roots: folders, Paths: wsmodel.ImportPaths(folders, ch.deps.ImportPaths()),
		Parse: ch.parseBudgeted, Limits: wsmodel.DefaultLimits(), Exclude: ch.deps.CacheDir,
	}
	return ix.ImportsOnly(ctx)
}

// ownFolders are the workspace folders outside torchlsp's cache: a server
// started in a mirror has torch's files there, not the user's.
func (ch *Checks) ownFolders() []string {
	var folders []string
	for _, f := range ch.deps.Folders() {
		if !wsmodel.Under(ch.deps.CacheDir, f) {
			folders = append(folders, f)
		}
	}
	return folders
}

// parseBudgeted parses a workspace file under the parse budget the
// background work shares.
func (ch *Checks) parseBudgeted(ctx context.Context, src []byte) (*pybuf.Buffer, error) {
	release, err := ch.deps.Parses.TakeContext(ctx, len(src))
	if err != nil {
		return nil, err
	}
	defer release()
	return ch.deps.Parse(ctx, src)
}

// fileOfOpen is the facts of an open document's version.
func fileOfOpen(ctx context.Context, ix *wsmodel.Indexer, doc *source.Snapshot) (*wsmodel.File, bool) {
	if doc.Path() == "" || !doc.IsPython() || doc.TooLarge() {
		return nil, false
	}
	buf, err := doc.BufferContext(ctx)
	if err != nil {
		return nil, false
	}
	return ix.FileOf(doc.Path(), buf), true
}

// withDocument puts a document's version into the model and returns the
// model that holds it, and the open documents whose verdicts that
// changed.
func (ch *Checks) withDocument(doc *source.Snapshot, buf *pybuf.Buffer, cat *gates.Catalog) (*wsmodel.Model, []*source.Snapshot) {
	m := &ch.models
	path := doc.Path()
	m.mu.Lock()
	ix, model, current := m.ix, m.model, m.cat == cat
	v, seen := m.versions[path]
	m.mu.Unlock()
	if model == nil || !current || path == "" {
		return model, nil
	}
	// The facts are read outside the lock: a large file's take time. A
	// version whose text is the model's already (a file opened as it is
	// on disk, as the command line opens every file) changes nothing.
	var f *wsmodel.File
	if !seen || v != doc.Version() {
		if have, ok := model.File(path); !ok || have.Hash != sha256.Sum256([]byte(doc.Text())) {
			f = ix.FileOf(path, buf)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cat != cat || m.model == nil {
		return m.model, nil
	}
	m.versions[path] = doc.Version()
	if f != nil {
		m.model = m.model.With(f)
	}
	verdicts := m.model.Verdicts()
	m.prints[path] = printOf(verdicts, path)
	var changed []*source.Snapshot
	for _, other := range ch.deps.Documents() {
		p := other.Path()
		if p == "" || p == path {
			continue
		}
		if pr, seen := m.prints[p]; seen && pr != printOf(verdicts, p) {
			changed = append(changed, other)
		}
	}
	return m.model, changed
}

// modelKey is what a workspace model's facts were read against: the
// target's torch (its catalog), the site its lines are read from and the
// environment its rules read.
func modelKey(cat *gates.Catalog, siteDir string, env map[string]string) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00%s", cat.Version, cat.Fingerprint, siteDir)
	for _, k := range keys {
		fmt.Fprintf(&b, "\x00%s=%s", k, env[k])
	}
	return b.String()
}

// inWorkspace says whether path lies in a workspace folder.
func (ch *Checks) inWorkspace(path string) bool {
	if path == "" {
		return false
	}
	for _, f := range ch.deps.Folders() {
		if wsmodel.Under(f, path) {
			return true
		}
	}
	return false
}

// printOf is what a file's check reads of the verdicts, as text: its
// diagnostics change when it does.
func printOf(v *wsmodel.Verdicts, path string) string {
	var b strings.Builder
	for _, e := range v.External[path] {
		fmt.Fprintf(&b, "%v %s %v %d;", e.Compile, e.How, e.Many, len(e.Path))
		for _, r := range e.Path {
			b.WriteString(r.Message)
		}
	}
	for _, f := range v.Funcs[path] {
		fmt.Fprintf(&b, "%s %d %s;", f.Name, f.Line, f.How)
	}
	for _, t := range v.Threads[path] {
		fmt.Fprintf(&b, "%s %q %d;", t.How, t.Sets, len(t.Path))
	}
	for _, d := range v.Findings[path] {
		fmt.Fprintf(&b, "%v %s;", d.Span, d.Message)
	}
	for _, c := range v.CallsOf(path) {
		fmt.Fprintf(&b, "%v %s %v %s %v %v %s %v %s %v;", c.Span, c.Name, c.CUDAGraphs, c.Why, c.Module, c.Forward,
			c.CompilePath, c.Compile, c.At, c.CalledElsewhere)
		for _, r := range c.Path {
			b.WriteString(r.Message)
		}
	}
	return b.String()
}
