// Package server is torchlsp's engine, shared by the LSP adapter (lsp/) and
// the command line (cmd/torchlsp): open documents, targets and their
// sessions, the mirrored and indexed packages, and the features (hover,
// definition) computed from them. It knows nothing of JSON-RPC.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/server/config"
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
	// config flag (its first reading imports torch there).
	ValueWait time.Duration
	// OpenTarget makes a remote.Target from a Spec. Defaults to local
	// targets for specs without ssh, and SSH targets otherwise.
	OpenTarget func(remote.Spec) (remote.Target, error)
}

// Engine is the editor-independent core. Its methods are safe for
// concurrent use.
type Engine struct {
	opts    Options
	dirs    config.Dirs
	notify  *notifierBox
	trust   *config.TrustStore
	parsers *parserPool

	// ctx lives as long as the engine; background work (mirroring,
	// indexing) runs under it and stops on Shutdown.
	ctx        context.Context
	cancel     context.CancelFunc
	background conc.WaitGroup
	bgMu       sync.Mutex // orders goBackground against Shutdown's Wait
	closed     bool

	mu        sync.Mutex
	folders   []string
	editor    config.Layer // settings sent by the editor
	resolved  config.Resolved
	confErr   error
	docs      map[string]*document
	sessions  map[string]*session
	lastState map[string]Status
	repros    reproNotes
	sites     siteState // site-packages views built for targets (site.go)
}

// New creates an engine. Call Configure (or Initialize) before queries.
func New(opts Options) *Engine {
	if opts.Notifier == nil {
		opts.Notifier = discardNotifier{}
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 60 * time.Second
	}
	if opts.InspectTimeout == 0 {
		opts.InspectTimeout = 60 * time.Second
	}
	if opts.ValueWait == 0 {
		opts.ValueWait = 1500 * time.Millisecond
	}
	if opts.OpenTarget == nil {
		opts.OpenTarget = TargetOpener(sshtarget.Options{})
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		opts:      opts,
		dirs:      opts.Dirs,
		notify:    &notifierBox{n: opts.Notifier},
		trust:     config.NewTrustStore(opts.Dirs),
		parsers:   newParserPool(),
		ctx:       ctx,
		cancel:    cancel,
		docs:      map[string]*document{},
		sessions:  map[string]*session{},
		lastState: map[string]Status{},
	}
	e.resolved, _ = config.Merge()
	return e
}

// SetNotifier changes where the engine's messages go; the LSP adapter sets
// it once the connection exists.
func (e *Engine) SetNotifier(n Notifier) {
	if n == nil {
		n = discardNotifier{}
	}
	e.notify.set(n)
}

// Initialize records the workspace and the editor's settings, reads the
// configuration and starts mirroring the default target's packages.
func (e *Engine) Initialize(ctx context.Context, p InitializeParams) error {
	e.mu.Lock()
	e.folders = append([]string(nil), p.WorkspaceFolders...)
	e.mu.Unlock()
	if len(p.InitializationOptions) > 0 {
		if err := e.setEditorSettings(p.InitializationOptions); err != nil {
			e.notify.ShowMessage(ctx, MessageError, "torchlsp: initializationOptions: "+err.Error())
		}
	}
	return e.Reconfigure(ctx)
}

// Initialized starts work that may talk to the client: the default
// target's eager packages.
func (e *Engine) Initialized(ctx context.Context) {
	if s, err := e.session(""); err == nil {
		s.eager()
		e.prepareSite()
	} else {
		e.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
	}
}

// DidChangeConfiguration takes new editor settings (the "torchlsp"
// section).
func (e *Engine) DidChangeConfiguration(ctx context.Context, settings []byte) {
	if trimmed := bytes.TrimSpace(settings); len(trimmed) == 0 || string(trimmed) == "null" {
		// No settings sent: keep the editor's last ones, read the files
		// again (a workspace torchlsp.toml may have been trusted since).
		if err := e.Reconfigure(ctx); err == nil {
			e.Initialized(ctx)
		}
		return
	}
	if err := e.setEditorSettings(settings); err != nil {
		e.notify.ShowMessage(ctx, MessageError, "torchlsp: settings: "+err.Error())
		return
	}
	if err := e.Reconfigure(ctx); err == nil {
		e.Initialized(ctx)
	}
}

func (e *Engine) setEditorSettings(raw []byte) error {
	f, err := config.ParseJSON(raw, "editor settings")
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.editor = config.Layer{Source: "editor settings", File: f}
	e.mu.Unlock()
	return nil
}

// Reconfigure reads the user config, the workspace config (if trusted)
// and the editor settings again. Sessions whose target changed are closed.
func (e *Engine) Reconfigure(ctx context.Context) error {
	var layers []config.Layer
	user, err := config.LoadUser(e.dirs)
	if err != nil {
		e.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
	} else {
		layers = append(layers, user)
	}
	e.mu.Lock()
	folders := e.folders
	editor := e.editor
	e.mu.Unlock()
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

	e.mu.Lock()
	e.resolved, e.confErr = resolved, err
	var stale []*session
	for name, s := range e.sessions {
		if spec, err := e.specLocked(name); err != nil || !sameSpec(spec, s.spec) {
			stale = append(stale, s)
			delete(e.sessions, name)
		}
	}
	e.mu.Unlock()
	for _, s := range stale {
		_ = s.close()
	}
	return err
}

func sameSpec(a, b remote.Spec) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// specLocked returns the spec of the named target (the default if empty),
// with the command line's overrides applied. e.mu must be held.
func (e *Engine) specLocked(name string) (remote.Spec, error) {
	if name == "" {
		name = e.opts.Target
	}
	if strings.HasPrefix(name, "ssh://") {
		return e.urlSpec(name)
	}
	spec, err := e.resolved.Target(name)
	if err != nil {
		return spec, err
	}
	if e.opts.Python != "" && (name == "" || name == e.opts.Target || name == e.resolved.Default) {
		spec.Python = e.opts.Python
	}
	return spec, nil
}

// urlSpec makes a target from `--target ssh://user@host:port`, which needs
// no configuration file.
func (e *Engine) urlSpec(raw string) (remote.Spec, error) {
	d, err := sshtarget.ParseURL(raw)
	if err != nil {
		return remote.Spec{}, fmt.Errorf("target %s: %w", raw, err)
	}
	dest := d.Host
	if strings.Contains(dest, ":") {
		dest = "[" + dest + "]"
	}
	if d.User != "" {
		dest = d.User + "@" + dest
	}
	if d.Port != 0 {
		dest = fmt.Sprintf("%s:%d", dest, d.Port)
	}
	spec := config.Complete(remote.Spec{Name: raw, SSH: dest, Python: e.opts.Python})
	return spec, nil
}

// Targets lists the configured targets and the default.
func (e *Engine) Targets() (names []string, def string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	def = e.resolved.Default
	if e.opts.Target != "" {
		def = e.opts.Target
	}
	return e.resolved.Names(), def
}

// Spec returns the resolved spec of a target (the default when name is
// empty).
func (e *Engine) Spec(name string) (remote.Spec, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.specLocked(name)
}

// session returns the session for a target, creating it on first use.
func (e *Engine) session(name string) (*session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	spec, err := e.specLocked(name)
	if err != nil {
		return nil, err
	}
	if s, ok := e.sessions[spec.Name]; ok {
		return s, nil
	}
	s, err := newSession(e, spec)
	if err != nil {
		return nil, err
	}
	e.sessions[spec.Name] = s
	return s, nil
}

func (e *Engine) openTarget(spec remote.Spec) (remote.Target, error) {
	return e.opts.OpenTarget(spec)
}

// status tells the client a target's state, once per change.
func (e *Engine) status(target, version, state, msg string) {
	sn, ok := e.notify.get().(StatusNotifier)
	if !ok {
		return
	}
	st := Status{Target: target, TorchVersion: version, State: state, Message: msg}
	e.mu.Lock()
	if def, err := e.specLocked(""); err == nil && def.Name != target {
		// Status bars show the default target; others (a repro on every
		// target) report through progress instead.
		e.mu.Unlock()
		return
	}
	if prev := e.lastState[target]; prev == st {
		e.mu.Unlock()
		return
	}
	if version == "" {
		st.TorchVersion = e.lastState[target].TorchVersion
	}
	e.lastState[target] = st
	e.mu.Unlock()
	sn.Status(e.ctx, st)
}

// DidOpen starts tracking a document.
func (e *Engine) DidOpen(uri string, version int32, text string) {
	e.mu.Lock()
	e.docs[uri] = &document{uri: uri, path: FilePath(uri), version: version, text: []byte(text)}
	e.mu.Unlock()
	e.scheduleDiagnostics(uri)
}

// DidChange replaces a document's text.
func (e *Engine) DidChange(uri string, version int32, text string) {
	e.mu.Lock()
	d, ok := e.docs[uri]
	if !ok {
		d = &document{uri: uri, path: FilePath(uri)}
		e.docs[uri] = d
	}
	e.mu.Unlock()
	d.set(version, []byte(text))
	e.scheduleDiagnostics(uri)
}

// DidClose stops tracking a document and clears its diagnostics.
func (e *Engine) DidClose(uri string) {
	e.mu.Lock()
	d := e.docs[uri]
	delete(e.docs, uri)
	e.mu.Unlock()
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
	if pub, ok := e.notify.get().(DiagnosticsPublisher); ok {
		e.goBackground(func() { _ = pub.PublishDiagnostics(e.ctx, uri, 0, nil) })
	}
}

// DidSave rereads the configuration when a torchlsp.toml is saved.
func (e *Engine) DidSave(ctx context.Context, uri string) {
	e.siteSaved(FilePath(uri))
	if filepath.Base(FilePath(uri)) == config.WorkspaceFile {
		if err := e.Reconfigure(ctx); err == nil {
			e.Initialized(ctx)
		}
	}
}

func (e *Engine) doc(uri string) *document {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.docs[uri]
}

// goBackground runs f in the engine's background group, unless the engine
// is shutting down (a WaitGroup must not grow while it is waited on).
func (e *Engine) goBackground(f func()) bool {
	e.bgMu.Lock()
	defer e.bgMu.Unlock()
	if e.closed {
		return false
	}
	e.background.Go(f)
	return true
}

// errShutDown fails work asked of an engine that is shutting down.
var errShutDown = errors.New("torchlsp is shutting down")

// Shutdown stops background work and closes every target connection.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.bgMu.Lock()
	e.closed = true
	e.bgMu.Unlock()
	e.cancel()
	e.mu.Lock()
	sessions := e.sessions
	e.sessions = map[string]*session{}
	e.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		errs = append(errs, s.close())
	}
	done := make(chan struct{})
	go func() { e.background.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("shutdown: background work still running: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// folderOf returns the workspace folder holding path, if any.
func (e *Engine) folderOf(path string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	best := ""
	for _, f := range e.folders {
		if (path == f || strings.HasPrefix(path, f+string(filepath.Separator))) && len(f) > len(best) {
			best = f
		}
	}
	return best
}

type discardNotifier struct{}

func (discardNotifier) ShowMessage(context.Context, MessageType, string) {}
func (discardNotifier) LogMessage(context.Context, MessageType, string)  {}
func (discardNotifier) StartProgress(context.Context, string, bool) Progress {
	return discardProgress{}
}

type discardProgress struct{}

func (discardProgress) Report(string, int) {}
func (discardProgress) End(string)         {}

// notifierBox lets the notifier be replaced while background work uses it.
type notifierBox struct {
	mu sync.RWMutex
	n  Notifier
}

func (b *notifierBox) set(n Notifier) {
	b.mu.Lock()
	b.n = n
	b.mu.Unlock()
}

func (b *notifierBox) get() Notifier {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.n
}

func (b *notifierBox) ShowMessage(ctx context.Context, typ MessageType, msg string) {
	b.get().ShowMessage(ctx, typ, msg)
}

func (b *notifierBox) LogMessage(ctx context.Context, typ MessageType, msg string) {
	b.get().LogMessage(ctx, typ, msg)
}

func (b *notifierBox) StartProgress(ctx context.Context, title string, cancellable bool) Progress {
	return b.get().StartProgress(ctx, title, cancellable)
}
