// Package navigation answers the requests that ask what a name is and
// where it leads: hover, definition, references, document and workspace
// symbols, the call hierarchy and implementation. Every request starts
// from one resolver (resolve.go) that says what stands at a position of
// a document: a config flag, a definition with its package, or nothing.
// It reads the targets' model (server/session) and the documents
// (server/source), and knows of the rest of the engine only the Deps it
// was given.
package navigation

import (
	"context"
	"time"

	"github.com/torchlsp/torchlsp/server/pyindex"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/source"
)

// Deps is what navigation asks of the engine.
type Deps struct {
	Notify   api.Notifier
	CacheDir string // torchlsp's cache, where the mirrors are
	// ValueWait bounds how long a hover waits for the target's value of a
	// config flag (Options.ValueWait).
	ValueWait time.Duration
	// ModelWait bounds how long a references query waits for the
	// workspace model (Options.ModelWait); 0 means reexportWait.
	ModelWait time.Duration
	// Session is the session of a target, the default one for "".
	Session func(name string) (*session.Session, error)
	// Folders are the workspace folders; Documents the open documents'
	// latest snapshots.
	Folders   func() []string
	Documents func() []*source.Snapshot
	// Workspace are the workspace's files, open or not (the open
	// documents' snapshots stand for theirs); nil for none.
	Workspace Workspace
	// Reexports is the view of the names the user's modules import from
	// torch (wsmodel.Model.Reexport), for a query that runs within ctx;
	// a model being built is waited for at most wait; nil for none:
	// references and callers follow them into files that import a torch
	// name from the user's own module.
	Reexports func(ctx context.Context, wait time.Duration) pyindex.Reexports
	// SitePath maps a file of a mirror to the same file seen through the
	// site the editor's Python server reads for target, when it reads one;
	// SiteCompact says that server shows signatures and docstrings, so a
	// hover says only what torchlsp alone knows.
	SitePath    func(target string, m *remote.MirrorTree, local string) (string, bool)
	SiteCompact func(target string) bool
}

// Navigator answers navigation requests; it keeps no state of its own
// beyond what each document's snapshot memoizes.
type Navigator struct {
	deps Deps
}

// New makes a Navigator over deps.
func New(deps Deps) *Navigator { return &Navigator{deps: deps} }
