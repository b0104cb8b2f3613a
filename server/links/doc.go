// Package links maps what a target printed back to local files: the
// document links of logs and tracebacks, the links of a terminal's text,
// and the traceback command, which also leaves the exception on the
// user's innermost frame as a note. Target paths lead to a local file only
// through the prefixes a pathMap knows (the mirrors, the workdirs, where
// repro runs put the workspace, the workspace folders). It reads the
// targets' model (server/session) and the documents (server/source), and
// knows of the rest of the engine only the Deps it was given.
package links

import (
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/source"
)

// Deps is what links ask of the engine.
type Deps struct {
	Notify api.Notifier
	// Session is the session of a target, the default one for "";
	// Sessions every session open now.
	Session  func(name string) (*session.Session, error)
	Sessions func() []*session.Session
	// Folders are the workspace folders; Workdirs the configured
	// targets' workdirs, by target name.
	Folders  func() []string
	Workdirs func() map[string]string
	// Document and DocumentByPath find an open document's latest
	// snapshot, nil when it is not open.
	Document       func(uri string) *source.Snapshot
	DocumentByPath func(path string) *source.Snapshot
	// NotesChanged is told of a document whose notes changed.
	NotesChanged func(doc *source.Snapshot)
}

// Links keeps what the traceback command learned: its note on the user's
// code and where repro runs put the workspace on targets.
type Links struct {
	deps   Deps
	traces traceState
}

// New makes the links feature over deps.
func New(deps Deps) *Links { return &Links{deps: deps} }

// Notes are the traceback's diagnostic on a document, while its text is
// the one the traceback was mapped against.
func (l *Links) Notes(doc *source.Snapshot) []api.Diagnostic { return l.traces.noteOn(doc) }
