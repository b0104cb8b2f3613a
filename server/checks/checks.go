// Package checks keeps every open document's diagnostics current: it
// checks each new version (diagnose's rules against the target's flag
// catalog, one check per document at a time), publishes the findings
// with the notes of every registered NoteProducer, and offers the quick
// fixes with the code actions of every registered ActionProducer. A new
// rule lives in server/diagnose; a feature that leaves notes registers
// here, and checks never names it. It knows of the rest of the engine
// only the Deps it was given.
package checks

import (
	"context"
	"sync"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/source"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Work is the engine's background group: checks run under its context,
// which ends at shutdown.
type Work interface {
	Go(f func()) bool
	Context() context.Context
}

// Deps is what checks ask of the engine.
type Deps struct {
	Notify api.Notifier
	Work   Work
	// Parses is the budget that background parsing shares; Parse the
	// engine's parse, with its pool of parsers.
	Parses *syntax.Budget
	Parse  source.ParseFunc
	// Session is the session of a target, the default one for "".
	Session func(name string) (*session.Session, error)
	// IsCurrent says whether a snapshot is its document's latest;
	// Documents are the open documents' latest snapshots.
	IsCurrent func(doc *source.Snapshot) bool
	Documents func() []*source.Snapshot
	// Folders are the workspace folders the workspace model indexes;
	// ImportPaths what the configuration adds to their sys.path.
	Folders     func() []string
	ImportPaths func() []string
	// CacheDir is where the workspace model keeps its cache.
	CacheDir string
	// WaitForModel makes a check wait for the workspace model's build
	// (the command line); editors check at once and republish when the
	// build ends.
	WaitForModel bool
}

// Checks holds the check in progress of each document and the features
// that add notes and actions.
type Checks struct {
	deps    Deps
	running docChecks        // the diagnostics check of each document (docchecks.go)
	models  models           // the workspace model (workspace.go)
	hellos  hellos           // the waits for the target's helper (diagnostics.go)
	notes   []NoteProducer   // set once, before the first check
	actions []ActionProducer // set once, before the first request
}

// hellos are the sessions whose helper's hello a background wait is
// under way for (awaitHello).
type hellos struct {
	mu      sync.Mutex // guards waiting
	waiting map[*session.Session]bool
}

// New makes the checks over deps, with the features that leave notes and
// offer actions.
func New(deps Deps, notes []NoteProducer, actions []ActionProducer) *Checks {
	return &Checks{deps: deps, notes: notes, actions: actions}
}
