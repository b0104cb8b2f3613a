// Package server is torchlsp's engine, shared by the LSP adapter (lsp/) and
// the command line (cmd/torchlsp). It is a facade: it keeps the engine's
// lifecycle (open documents as immutable snapshots, server/source; the
// configuration; targets and their sessions, server/session; the status
// item; the part of the cache a server was started in) and delegates each
// request and command in one line to the feature package that answers it
// (server/navigation, checks, runs, links, site, doctor), which it makes
// and wires in New. It knows nothing of JSON-RPC, and nothing of SSH:
// targets are opened by the remote.Opener it is given.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/checks"
	"github.com/torchlsp/torchlsp/server/config"
	"github.com/torchlsp/torchlsp/server/doctor"
	"github.com/torchlsp/torchlsp/server/links"
	"github.com/torchlsp/torchlsp/server/navigation"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/runs"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/site"
	"github.com/torchlsp/torchlsp/server/source"
)

// Options configure an Engine.
type Options struct {
	Dirs     config.Dirs
	Notifier Notifier
	// Target, when set, overrides the configured default target (the
	// command line's --target).
	Target string
	// Python, when set, overrides the interpreter of the chosen target (the
	// command line's --python).
	Python string
	// ValidateCache makes a cached mirror wait for the target to confirm
	// it is current before it answers (the command line's one-shot runs);
	// otherwise the cache answers at once and is checked in the background.
	ValidateCache bool
	// ConnectTimeout bounds reaching a target and starting its helper.
	ConnectTimeout time.Duration
	// InspectTimeout bounds a runtime question to the helper (it may
	// import torch, which takes seconds on a GPU host).
	InspectTimeout time.Duration
	// ValueWait bounds how long a hover waits for the target's value of a
	// config flag (its first reading imports torch there, seconds on a GPU
	// host). 0, for editors, never waits: the read starts in the
	// background when a document that names flags is checked, and a hover
	// shows the value once it is known. The command line waits.
	ValueWait time.Duration
	// ModelWait bounds how long a references or incoming-calls query
	// waits for the workspace model's build (the names the workspace's
	// own modules re-export from torch); 0 means 5 s.
	ModelWait time.Duration
	// Opener makes targets from specs and reads target names that are
	// addresses. Default: local targets only (remote.LocalOpener); the
	// command line passes one that also reaches SSH targets.
	Opener remote.Opener
	// MaxDocumentBytes bounds the text analysed per document
	// (source.DefaultMaxBytes when 0).
	MaxDocumentBytes int
	// MirrorLimits and HelperLimits bound what a target may send (files,
	// bytes, stalls; reply frames and fields); zero fields take remote's
	// defaults (docs/RELIABILITY.md lists them).
	MirrorLimits remote.MirrorLimits
	HelperLimits remote.HelperLimits
	// WaitForModel makes the first check wait for the workspace model
	// (server/wsmodel), as the command line's check does; editors get the
	// file's own findings at once and the workspace's when it is built.
	WaitForModel bool
}

// Engine is the editor-independent core. Its methods are safe for
// concurrent use. Its state lives in parts that each guard their own:
// the documents (source.Store), the configuration (workspaceConfig), the
// targets' sessions (session.Set), the status shown (statusBoard), the
// cache a server was started in (homeState), and each feature's own.
type Engine struct {
	opts   Options
	notify *notifierBox
	trust  *config.TrustStore
	bg     *background

	parse    source.ParseFunc // the engine's pool of parsers
	docs     *source.Store
	cfg      *workspaceConfig
	sessions *session.Set
	statuses *statusBoard
	// started is set by Initialized: from then on the front end hears of
	// changes to the default target.
	started atomic.Bool

	// home is the part of the cache a server was started in
	// (mirrorhome.go).
	home *homeState

	nav    *navigation.Navigator // hover, definition, references, symbols, calls, implementation
	runs   *runs.Runs            // repro and explain runs, their cancel and their notes
	links  *links.Links          // document links, path mapping, tracebacks
	site   *site.Sites           // the site-packages views built for targets
	checks *checks.Checks        // each open document's diagnostics, with the notes and actions of runs and links
	doctor *doctor.Doctor        // the checks of a target, where its torch is mirrored
}

// New creates an engine. Call Initialize before queries.
func New(opts Options) *Engine {
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 60 * time.Second
	}
	if opts.InspectTimeout == 0 {
		opts.InspectTimeout = 60 * time.Second
	}
	if opts.Opener == nil {
		opts.Opener = remote.LocalOpener{}
	}
	e := &Engine{
		opts:   opts,
		notify: &notifierBox{},
		trust:  config.NewTrustStore(opts.Dirs),
		bg:     newBackground(),
	}
	e.notify.set(opts.Notifier)
	e.parse = newParse()
	e.docs = source.NewStore(opts.MaxDocumentBytes, e.parse)
	e.cfg = newWorkspaceConfig(opts.Target, opts.Python, opts.Opener)
	e.sessions = session.NewSet()
	e.statuses = &statusBoard{ctx: e.bg.ctx, notify: e.notify, last: map[string]Status{}, isDefault: e.cfg.isDefault,
		becameReady: func() {
			if e.started.Load() {
				e.checks.RepublishAll() // its torch, or the connection, changed
			}
		}}
	e.home = &homeState{
		cache: opts.Dirs.Cache, cfg: e.cfg, notify: e.notify, session: e.session,
		newReadOnly: func(spec remote.Spec, dir string) *session.Session {
			return session.NewReadOnly(sessionEnv{e}, sessionOptions(e.opts, e.bg), spec, dir)
		},
	}
	e.site = site.New(site.Deps{
		Notify:         e.notify,
		Work:           e.bg,
		CacheDir:       opts.Dirs.Cache,
		ConnectTimeout: opts.ConnectTimeout,
		Spec:           e.cfg.spec,
		Session:        e.session,
		Settings: func() site.Settings {
			r := e.cfg.resolvedSnapshot()
			return site.Settings{Packages: r.SitePackages, Hover: r.SiteHover}
		},
		Folders:   e.cfg.workspaceFolders,
		FolderOf:  e.cfg.folderOf,
		Documents: e.docs.All,
		Parse:     parseFile(e.parse),
	})
	// The workspace's files on disk, for references and symbols (the
	// workspace model may stand in); a walk cut at a limit is logged.
	wsFiles := navigation.NewDiskWorkspace(e.cfg.workspaceFolders, opts.Dirs.Cache, e.bg.parses, navigation.DefaultWorkspaceLimits(),
		func(msg string) { e.notify.LogMessage(e.bg.ctx, MessageWarning, msg) })
	e.nav = navigation.New(navigation.Deps{
		Notify:    e.notify,
		CacheDir:  opts.Dirs.Cache,
		ValueWait: opts.ValueWait,
		ModelWait: opts.ModelWait,
		Session:   e.session,
		Folders:   e.cfg.workspaceFolders,
		Documents: e.docs.All,
		Workspace: wsFiles,
		Reexports: func(ctx context.Context, wait time.Duration) pyindex.Reexports {
			if r := e.checks.Reexports(ctx, wait); r != nil {
				return r
			}
			return nil
		},
		SitePath:    e.site.PathFor,
		SiteCompact: e.site.Compact,
	})
	e.links = links.New(links.Deps{
		Notify:         e.notify,
		Session:        e.session,
		Sessions:       e.sessions.All,
		Folders:        e.cfg.workspaceFolders,
		Workdirs:       e.cfg.workdirs,
		Document:       e.docs.Get,
		DocumentByPath: e.docs.ByPath,
		NotesChanged:   func(doc *Snapshot) { e.checks.Schedule(doc) },
	})
	e.runs = runs.New(runs.Deps{
		Notify:        e.notify,
		Work:          e.bg,
		CacheDir:      opts.Dirs.Cache,
		HomeDir:       opts.Dirs.Home,
		Session:       e.session,
		DefaultTarget: func() string { _, def := e.cfg.targets(); return def },
		Configured:    e.cfg.configured,
		FolderOf:      e.cfg.folderOf,
		Document:      e.docs.Get,
		Parse:         parseFile(e.parse),
		NotesChanged:  func(doc *Snapshot) { e.checks.Schedule(doc) },
		RanIn:         e.links.RanIn,
	})
	e.doctor = doctor.New(doctor.Deps{Notify: e.notify, CacheDir: opts.Dirs.Cache, Session: e.session, Sources: e.cfg.sources})
	e.checks = checks.New(checks.Deps{
		Notify:    e.notify,
		Work:      e.bg,
		Parses:    e.bg.parses,
		Parse:     e.parse,
		Session:   e.session,
		IsCurrent: e.docs.IsCurrent,
		Documents: e.docs.All,
		Folders:   e.cfg.workspaceFolders,

		ImportPaths:  e.cfg.importPaths,
		CacheDir:     opts.Dirs.Cache,
		WaitForModel: opts.WaitForModel,
	}, []checks.NoteProducer{e.runs, e.links}, []checks.ActionProducer{e.runs, e.links})
	return e
}

// sessionOptions are what every target's session is given.
func sessionOptions(opts Options, bg *background) session.Options {
	return session.Options{
		Work:           bg,
		Parses:         bg.parses,
		CacheDir:       opts.Dirs.Cache,
		ConnectTimeout: opts.ConnectTimeout,
		InspectTimeout: opts.InspectTimeout,
		ValidateCache:  opts.ValidateCache,
		MirrorLimits:   opts.MirrorLimits,
		HelperLimits:   opts.HelperLimits,
		HoverText:      navigation.RenderHover,
	}
}

// sessionEnv carries what a target's session reports to the front end,
// the status item and the site view.
type sessionEnv struct{ e *Engine }

var _ session.Env = sessionEnv{}

func (v sessionEnv) Message(ctx context.Context, level session.Level, msg string) {
	v.e.notify.ShowMessage(ctx, messageType(level), msg)
}

func (v sessionEnv) Log(ctx context.Context, level session.Level, msg string) {
	v.e.notify.LogMessage(ctx, messageType(level), msg)
}

func (v sessionEnv) StartProgress(ctx context.Context, title string) session.Progress {
	return v.e.notify.StartProgress(ctx, title, false)
}

func (v sessionEnv) Status(target, version, state, msg string) {
	v.e.statuses.report(target, version, state, msg)
}

func (v sessionEnv) PackagesChanged(target string) { v.e.site.PackagesChanged(target) }

func messageType(l session.Level) MessageType {
	switch l {
	case session.LevelError:
		return MessageError
	case session.LevelWarning:
		return MessageWarning
	}
	return MessageInfo
}

// Initialize records the workspace and the editor's settings, reads the
// configuration and starts mirroring the default target's packages.
func (e *Engine) Initialize(ctx context.Context, p InitializeParams) error {
	if p.Notifier != nil {
		e.notify.set(p.Notifier) // the connection exists now
	}
	e.cfg.setFolders(p.WorkspaceFolders)
	if len(p.InitializationOptions) > 0 {
		if err := e.cfg.setEditorSettings(p.InitializationOptions); err != nil {
			e.notify.ShowMessage(ctx, MessageError, "torchlsp: initializationOptions: "+err.Error())
		}
	}
	return e.Reconfigure(ctx)
}

// Initialized starts work that may talk to the client: the default
// target's eager packages.
func (e *Engine) Initialized(ctx context.Context) {
	e.started.Store(true)
	if e.home.inCache() {
		return // the workspace's server mirrors and builds the site
	}
	if s, err := e.session(""); err == nil {
		s.Eager()
		e.site.Prepare()
	} else {
		e.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
	}
}

// DidChangeConfiguration takes new editor settings (the "torchlsp"
// section).
func (e *Engine) DidChangeConfiguration(ctx context.Context, settings []byte) {
	if trimmed := bytes.TrimSpace(settings); len(trimmed) != 0 && string(trimmed) != "null" {
		if err := e.cfg.setEditorSettings(settings); err != nil {
			e.notify.ShowMessage(ctx, MessageError, "torchlsp: settings: "+err.Error())
			return
		}
	}
	// With no settings sent the editor's last ones stay, and the files are
	// read again (a workspace torchlsp.toml may have been trusted since).
	if err := e.Reconfigure(ctx); err == nil {
		e.Initialized(ctx)
	}
}

// Reconfigure reads the user config, the workspace config (if trusted)
// and the editor settings again. Sessions whose target changed are closed.
func (e *Engine) Reconfigure(ctx context.Context) error {
	var layers []config.Layer
	user, err := config.LoadUser(e.opts.Dirs)
	if err != nil {
		e.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
	} else {
		layers = append(layers, user)
	}
	folders, editor := e.cfg.inputs()
	if len(folders) > 0 {
		ws, st := config.LoadWorkspace(folders[0], e.trust)
		if msg := st.Message(); msg != "" {
			typ := MessageWarning
			if st.Err != nil {
				typ = MessageError
			}
			e.notify.ShowMessage(ctx, typ, msg)
		}
		layers = append(layers, ws)
	}
	layers = append(layers, editor)
	resolved, err := config.Merge(layers...)
	if err != nil {
		e.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
	}
	before, beforeErr := e.cfg.spec("")
	if dropped := e.cfg.setResolved(resolved, err); dropped != "" {
		e.notify.ShowMessage(ctx, MessageWarning, fmt.Sprintf("torchlsp: target %s is no longer configured; back to the default target", dropped))
	}
	for _, s := range e.sessions.DropStale(e.cfg.spec) {
		_ = s.Close()
	}
	if len(folders) > 0 {
		e.home.place(ctx, folders[0])
	}
	e.home.settle(ctx)
	if after, afterErr := e.cfg.spec(""); afterErr == nil && (beforeErr != nil || !session.SameSpec(before, after)) {
		e.defaultChanged(after.Name)
	}
	return err
}

// defaultChanged follows a new default target (or a changed one): the
// editor's Python server loses the old target's site, the status item
// shows the new target, and every open document is checked against it.
func (e *Engine) defaultChanged(target string) {
	if !e.started.Load() {
		return // initialize has not been answered yet
	}
	e.site.Withdraw()
	e.statuses.defaultChanged(target)
	e.checks.RepublishAll()
}

// Spec returns the resolved spec of a target (the default when name is
// empty).
func (e *Engine) Spec(name string) (remote.Spec, error) { return e.cfg.spec(name) }

// session returns the session for a target (the default when name is
// empty), creating it on first use.
func (e *Engine) session(name string) (*session.Session, error) {
	if s := e.home.readOnlySession(name); s != nil {
		return s, nil
	}
	spec, err := e.cfg.spec(name)
	if err != nil {
		return nil, err
	}
	return e.sessions.Get(spec, func() (*session.Session, error) {
		t, err := e.opts.Opener.Open(spec)
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", spec.Name, err)
		}
		return session.New(sessionEnv{e}, sessionOptions(e.opts, e.bg), spec, t), nil
	})
}

// DidOpen starts tracking a document and returns its first snapshot.
// language is the client's languageId ("" when there is none, as on the
// command line): only Python is ever parsed (Snapshot.IsPython).
func (e *Engine) DidOpen(ctx context.Context, uri, language string, version int32, text string) *Snapshot {
	snap, err := e.docs.Open(uri, language, version, text)
	noteTooLarge(ctx, e.notify, err)
	if folders, _ := e.cfg.inputs(); len(folders) == 0 && snap != nil {
		// A server with no workspace folder is placed by its first
		// document: in a mirror, it serves that mirror's target.
		e.home.place(ctx, snap.Path())
	}
	e.checks.Schedule(snap)
	return snap
}

// DidChange applies edits to an open document and returns the new
// snapshot. An error (edits that do not fit the text) leaves the document
// as it was.
func (e *Engine) DidChange(ctx context.Context, uri string, version int32, changes []source.Change) (*Snapshot, error) {
	snap, err := e.docs.Change(uri, version, changes)
	if snap == nil {
		return nil, err
	}
	noteTooLarge(ctx, e.notify, err)
	e.checks.Schedule(snap)
	return snap, nil
}

// noteTooLarge tells the user once per change that a document is too
// large to analyse.
func noteTooLarge(ctx context.Context, notify Notifier, err error) {
	if errors.Is(err, source.ErrTooLarge) {
		notify.LogMessage(ctx, MessageWarning, "torchlsp: "+err.Error()+"; it gets no hovers, definitions or diagnostics")
	}
}

// DidClose stops tracking a document and clears its diagnostics.
func (e *Engine) DidClose(ctx context.Context, uri string) {
	snap := e.docs.Close(uri)
	e.checks.Closed(uri)
	if snap == nil || !e.notify.Capabilities().Diagnostics {
		return
	}
	e.bg.Go(func() { _ = e.notify.PublishDiagnostics(e.bg.ctx, snap, nil) })
}

// DidSave rereads the configuration when a torchlsp.toml is saved.
func (e *Engine) DidSave(ctx context.Context, uri string) {
	path, _ := source.FilePath(uri)
	e.site.Saved(path)
	if path != "" && filepath.Base(path) == config.WorkspaceFile {
		if err := e.Reconfigure(ctx); err == nil {
			e.Initialized(ctx)
		}
	}
}

// Snapshot returns the latest snapshot of an open document, or nil.
func (e *Engine) Snapshot(uri string) *Snapshot { return e.docs.Get(uri) }

// SnapshotByPath returns the latest snapshot of the open document for a
// local file, or nil.
func (e *Engine) SnapshotByPath(path string) *Snapshot { return e.docs.ByPath(path) }

// Shutdown stops background work and closes every target connection.
func (e *Engine) Shutdown(ctx context.Context) error {
	var errs []error
	e.bg.stop()
	for _, s := range e.sessions.Drain() {
		errs = append(errs, s.Close())
	}
	errs = append(errs, e.home.close())
	errs = append(errs, e.bg.wait(ctx))
	return errors.Join(errs...)
}
