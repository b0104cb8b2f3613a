package server

import (
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/session"
)

// The engine's vocabulary lives in server/api, where every feature
// package reads it; these names keep the facade's callers (lsp, the
// command line) speaking of server.Location and the like.

// ErrNotOnTarget marks names whose package is not installed on the target,
// or is not a third-party package torchlsp answers for.
var ErrNotOnTarget = session.ErrNotOnTarget

// ErrCannotAsk is Confirm's answer from a front end that cannot ask the
// user anything.
var ErrCannotAsk = api.ErrCannotAsk

type (
	Position     = api.Position
	Range        = api.Range
	Snapshot     = api.Snapshot
	Location     = api.Location
	Hover        = api.Hover
	MessageType  = api.MessageType
	Notifier     = api.Notifier
	Capabilities = api.Capabilities
	Progress     = api.Progress
	Status       = api.Status
	Severity     = api.Severity
	RelatedInfo  = api.RelatedInfo
	Diagnostic   = api.Diagnostic
	TextEdit     = api.TextEdit
	Command      = api.Command
	CodeAction   = api.CodeAction
	SiteInfo     = api.SiteInfo
	NopNotifier  = api.NopNotifier
	NopProgress  = api.NopProgress

	RunArgs       = api.RunArgs
	RunCaller     = api.RunCaller
	RunEvent      = api.RunEvent
	TargetArgs    = api.TargetArgs
	GatesArgs     = api.GatesArgs
	TracebackArgs = api.TracebackArgs
	LinksArgs     = api.LinksArgs
	CancelArgs    = api.CancelArgs
	CommandResult = api.CommandResult
)

const (
	MessageError   = api.MessageError
	MessageWarning = api.MessageWarning
	MessageInfo    = api.MessageInfo
	MessageLog     = api.MessageLog

	SeverityError   = api.SeverityError
	SeverityWarning = api.SeverityWarning
	SeverityInfo    = api.SeverityInfo
	SeverityHint    = api.SeverityHint

	KindQuickFix = api.KindQuickFix
	KindRepro    = api.KindRepro
	KindExplain  = api.KindExplain

	CommandRepro        = api.CommandRepro
	CommandDoctor       = api.CommandDoctor
	CommandSelectTarget = api.CommandSelectTarget
	CommandOpenMirror   = api.CommandOpenMirror
	CommandGates        = api.CommandGates
	CommandSite         = api.CommandSite
	CommandExplain      = api.CommandExplain
	CommandTraceback    = api.CommandTraceback
	CommandLinks        = api.CommandLinks
	CommandCancelRun    = api.CommandCancelRun
)

// InitializeParams is what the engine needs from an editor's initialize
// request.
type InitializeParams struct {
	// WorkspaceFolders are local directories; the first is the root.
	WorkspaceFolders []string
	// InitializationOptions is the client's "torchlsp" settings, raw JSON.
	InitializationOptions []byte
	ClientName            string
	// Notifier, when set, replaces the one the engine was made with: an
	// editor's connection exists only from initialize on.
	Notifier Notifier
}
