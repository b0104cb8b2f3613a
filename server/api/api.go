// Package api is the engine's vocabulary: the plain data its features
// take and answer (positions, locations, diagnostics, code actions, the
// commands' arguments) and the Notifier through which they speak to the
// user. The facade (package server) and every feature package share it;
// it imports only the document model (server/source) and the buffer's
// spans (server/pybuf), so that any feature can use it without importing
// another feature.
package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/source"
)

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

// NopNotifier shows nothing. Embed it in a notifier that implements only
// some capabilities; its Capabilities says none.
type NopNotifier struct{}

var _ Notifier = NopNotifier{}

func (NopNotifier) ShowMessage(context.Context, MessageType, string) {}
func (NopNotifier) LogMessage(context.Context, MessageType, string)  {}
func (NopNotifier) StartProgress(context.Context, string, bool) Progress {
	return NopProgress{}
}
func (NopNotifier) Status(context.Context, Status) {}
func (NopNotifier) PublishDiagnostics(context.Context, *Snapshot, []Diagnostic) error {
	return nil
}
func (NopNotifier) ShowDocument(context.Context, Location, bool) (bool, error) {
	return false, errors.New("this front end cannot show documents")
}
func (NopNotifier) Site(context.Context, SiteInfo) {}
func (NopNotifier) Confirm(_ context.Context, question, _ string) (bool, error) {
	return false, ErrCannotAsk
}
func (NopNotifier) Capabilities() Capabilities { return Capabilities{} }

// ErrCannotAsk is Confirm's answer from a front end that cannot ask the
// user anything: what needed the question is not done.
var ErrCannotAsk = errors.New("this front end cannot ask a question")

// NopProgress reports nowhere and is never cancelled.
type NopProgress struct{}

func (NopProgress) Report(string, int)         {}
func (NopProgress) End(string)                 {}
func (NopProgress) Cancelled() <-chan struct{} { return nil }

// RangeOf is a span of a buffer as a Range: the one conversion every
// feature uses.
func RangeOf(s pybuf.Span) Range {
	return Range{
		Start: Position{Line: s.Start.Line, Column: s.Start.Col},
		End:   Position{Line: s.End.Line, Column: s.End.Col},
	}
}

// NameRange is the range of a name at a line and byte column.
func NameRange(line, col int, name string) Range {
	return Range{Start: Position{Line: line, Column: col}, End: Position{Line: line, Column: col + len(name)}}
}

// Overlaps reports whether two ranges share a position (touching counts,
// so a cursor at either end of a diagnostic gets its fixes).
func Overlaps(a, b Range) bool {
	return !before(a.End, b.Start) && !before(b.End, a.Start)
}

func before(p, q Position) bool {
	return p.Line < q.Line || (p.Line == q.Line && p.Column < q.Column)
}

// KindWanted reports whether a code action of kind is among those a
// client asked for (all when only is empty; a kind asks for its
// sub-kinds).
func KindWanted(only []string, kind string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if o == kind || strings.HasPrefix(kind, o+".") {
			return true
		}
	}
	return false
}

// OpenResult opens a file the user asked for (a run's report, the
// mirror) in the editor; when the editor cannot open documents
// (window/showDocument) or did not, it names the file in a message
// instead, so that the result reaches the user either way.
func OpenResult(ctx context.Context, notify Notifier, what, path string) {
	if notify.Capabilities().ShowDocument {
		if shown, err := notify.ShowDocument(ctx, Location{Path: path}, true); shown && err == nil {
			return
		}
	}
	notify.ShowMessage(ctx, MessageInfo, fmt.Sprintf("torchlsp: %s: %s", what, path))
}
