// Package runs runs the user's compile calls on targets: the threaded
// repro, a hazard's repro, the repro of the user's own code and the
// compile explanation. Each is a Job handed to one runner (Run: an id,
// progress with a cancel button, the output streamed, the report opened),
// and what a run found stays on the document as notes (Notes) that the
// engine's diagnostics publish. It reads the targets' model
// (server/session) and the documents (server/source), and knows of the
// rest of the engine only the Deps it was given.
package runs

import (
	"context"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/repro"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/source"
)

// Work is the engine's background group: runs not waited for go on
// under its context, which ends at shutdown.
type Work interface {
	Go(f func()) bool
	Context() context.Context
}

// Deps is what runs ask of the engine.
type Deps struct {
	Notify   api.Notifier
	Work     Work
	CacheDir string // where a run keeps its files when the workspace cannot
	HomeDir  string // the user's home: its files travel only when allowed
	// Session is the session of a target, the default one for "";
	// DefaultTarget names the default, Configured every configured target.
	Session       func(name string) (*session.Session, error)
	DefaultTarget func() string
	Configured    func() []string
	// FolderOf is the workspace folder holding a path, "" for none.
	FolderOf func(path string) string
	// Document is an open document's latest snapshot, nil when closed.
	Document func(uri string) *source.Snapshot
	// Parse parses a local Python file's text (a module a run sends).
	Parse func(src []byte) *pybuf.Buffer
	// NotesChanged is told of a document whose notes changed (doc may be
	// nil: the document is not open), so that its diagnostics are
	// published again.
	NotesChanged func(doc *source.Snapshot)
	// RanIn is told where a run put the workspace on its target, so that
	// the tracebacks it printed map back.
	RanIn func(r repro.Report, workspace, workdir string)
}

// Runs holds the runs in progress and the notes the last ones left.
type Runs struct {
	deps  Deps
	table runTable   // runs in progress (runner.go)
	notes reproNotes // each compile call's last repro and the last explain's findings
}

// New makes the runner over deps.
func New(deps Deps) *Runs { return &Runs{deps: deps} }
