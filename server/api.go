package server

import (
	"context"

	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/source"
)

// ErrNotOnTarget marks names whose package is not installed on the target,
// or is not a third-party package torchlsp answers for.
var ErrNotOnTarget = session.ErrNotOnTarget

// Position is a place in a text document: 0-based line, and 0-based column
// counted in UTF-8 bytes within the line. Editor units (UTF-16 code units,
// characters) convert to it in one place, source.Mapper.
type Position = source.Position

// Range is a half-open span of a document.
type Range = source.Range

// Snapshot is one version of one open document; every request works on
// the snapshot it was given.
type Snapshot = source.Snapshot

// Location is a place in a file on this machine. For torch sources it is a
// file in the read-only local mirror, and TargetPath names the same file on
// the target.
type Location struct {
	URI        string // set for places in open documents (which may have no file)
	Path       string // absolute local path
	Range      Range
	TargetPath string // path on the target; empty for workspace files
}

// Hover is the answer to a hover request.
type Hover struct {
	Markdown string
	Range    *Range // the span of the name hovered, if known
	// Missing says, in plain words, that the name hovered does not exist
	// in the target's package (a torch too old for it); empty otherwise.
	Missing string
}

// MessageType grades messages sent to the user, as in LSP.
type MessageType int

const (
	MessageError MessageType = iota + 1
	MessageWarning
	MessageInfo
	MessageLog
)

// Notifier carries what the engine has to say to the user, whichever
// front end (editor or command line) drives it. Every capability is a
// method; Capabilities says which of them reach a person, so the engine
// skips work nobody would see. Embed NopNotifier to implement only some.
type Notifier interface {
	// ShowMessage shows a message a person should read.
	ShowMessage(ctx context.Context, typ MessageType, msg string)
	// LogMessage records a line in the client's log.
	LogMessage(ctx context.Context, typ MessageType, msg string)
	// StartProgress begins a unit of work-done progress.
	StartProgress(ctx context.Context, title string, cancellable bool) Progress
	// Status shows a target's state (the torchlsp/status notification).
	Status(ctx context.Context, s Status)
	// PublishDiagnostics replaces the diagnostics of a document; ranges
	// are in the snapshot's text. A nil diags clears them.
	PublishDiagnostics(ctx context.Context, doc *Snapshot, diags []Diagnostic) error
	// ShowDocument opens a file in the editor (window/showDocument) and
	// reports whether it did.
	ShowDocument(ctx context.Context, loc Location, takeFocus bool) (bool, error)
	// Site tells the editor where the default target's site-packages view
	// is (torchlsp/site), so that it points its Python server there.
	Site(ctx context.Context, s SiteInfo)
	// Confirm asks the user a question before the engine does something
	// they may not want (window/showMessageRequest with yes and a way
	// out) and reports whether they chose yes. A front end that cannot ask
	// answers false with an error wrapping ErrCannotAsk.
	Confirm(ctx context.Context, question, yes string) (bool, error)
	// Capabilities says which of the calls above reach the user.
	Capabilities() Capabilities
}

// Capabilities are what a front end can show.
type Capabilities struct {
	Status       bool // a status item for the default target
	Diagnostics  bool // diagnostics in open documents
	ShowDocument bool // opening a file in the editor
	Site         bool // hearing where the default target's site is
	Confirm      bool // asking the user a question
}

// Progress reports one unit of work. Percent is 0..100, or -1 when unknown.
type Progress interface {
	Report(message string, percent int)
	End(message string)
	// Cancelled is closed when the user cancels the work; nil when the
	// progress was not cancellable or the front end cannot cancel.
	Cancelled() <-chan struct{}
}

// InitializeParams is what the engine needs from an editor's initialize
// request.
type InitializeParams struct {
	// WorkspaceFolders are local directories; the first is the root.
	WorkspaceFolders []string
	// InitializationOptions is the client's "torchlsp" settings, raw JSON.
	InitializationOptions []byte
	ClientName            string
}

// Status is the engine's state for one target, for editors' status bars
// (the torchlsp/status notification).
type Status struct {
	Target       string `json:"target"`
	TorchVersion string `json:"torchVersion,omitempty"`
	State        string `json:"state"` // connecting, indexing, ready, error
	Message      string `json:"message,omitempty"`
}

// Severity grades a diagnostic, as in LSP.
type Severity int

const (
	SeverityError Severity = iota + 1
	SeverityWarning
	SeverityInfo
	SeverityHint
)

// RelatedInfo points a diagnostic at a place it rests on, such as the line
// of torch that reads a flag.
type RelatedInfo struct {
	Location Location
	Message  string
}

// Diagnostic is a problem found in a document.
type Diagnostic struct {
	Range    Range
	Severity Severity
	Code     string // stable, e.g. "TL001"
	Source   string // "torchlsp"
	Message  string
	Related  []RelatedInfo
}

// TextEdit replaces a range of a document.
type TextEdit struct {
	Range   Range
	NewText string
}

// Command is something a client can ask the server to run
// (workspace/executeCommand).
type Command struct {
	Title     string
	Name      string
	Arguments []any
}

// CodeAction is a quick fix or a command offered at a range.
type CodeAction struct {
	Title       string
	Kind        string // KindQuickFix, KindRepro, KindExplain
	Diagnostics []Diagnostic
	Edits       map[string][]TextEdit // by document URI
	Command     *Command
	Preferred   bool
}

// Code action kinds, hierarchical as in LSP: only actions that edit are
// quick fixes; a run is a source action of its own kind, so that a client
// asking for quick fixes (or for one kind of run) gets only those.
const (
	KindQuickFix = "quickfix"
	KindRepro    = "source.torchlsp.repro"
	KindExplain  = "source.torchlsp.explain"
)

// SiteInfo is where the default target's site-packages view lives (the
// torchlsp/site notification): Path is "" while the target has none.
type SiteInfo struct {
	Target string `json:"target"`
	Path   string `json:"path"`
}
