package api

// Commands the engine runs for workspace/executeCommand, each with its
// own argument type (the front end decodes them; lsp/commands.go). Every
// command's argument type is here, and the facade runs each command in
// one method (server/commands.go), which the command line calls too. What
// only the command line gives (a run's options, where a text was read) is
// a field the wire never carries (json:"-").
const (
	CommandRepro        = "torchlsp.repro"        // RunArgs
	CommandDoctor       = "torchlsp.doctor"       // DoctorArgs
	CommandSelectTarget = "torchlsp.selectTarget" // TargetArgs
	CommandOpenMirror   = "torchlsp.openMirror"   // TargetArgs
	CommandGates        = "torchlsp.gates"        // GatesArgs
	CommandSite         = "torchlsp.site"         // TargetArgs
	CommandExplain      = "torchlsp.explain"      // RunArgs
	CommandTraceback    = "torchlsp.traceback"    // TracebackArgs
	CommandLinks        = "torchlsp.links"        // LinksArgs
	CommandCancelRun    = "torchlsp.cancelRun"    // CancelArgs
)

// RunArgs are the arguments of torchlsp.repro and torchlsp.explain: the
// compile call at (or before) a line of an open document.
type RunArgs struct {
	URI    string `json:"uri"`
	Line   int    `json:"line"` // 0-based
	Target string `json:"target,omitempty"`
	// All runs the repro on every configured target.
	All bool `json:"all,omitempty"`
	// Own runs the repro on the user's own code only, failing when it
	// cannot; StandIn on the stand-in workload only. Neither: the user's
	// code when it can be run, else the stand-in, and the report says
	// which ran and why.
	Own     bool `json:"own,omitempty"`
	StandIn bool `json:"standIn,omitempty"`
	// Hazard names the diagnostic (e.g. "TL011") whose hazard the repro
	// shows, with its variants instead of the threading ones; torchlsp.repro
	// only.
	Hazard string `json:"hazard,omitempty"`
	// Wait answers when the run has ended, with its report, and a
	// $/cancelRequest of the command cancels the run; otherwise the
	// command answers at once with the run's id.
	Wait bool `json:"wait,omitempty"`

	// Caller is set by a caller that shows the run itself (the command
	// line), with what only it gives; nil for an editor.
	Caller *RunCaller `json:"-"`
}

// RunCaller is a run's caller that shows it itself: every line the run
// prints goes to Sink (when set), the run goes on under the request and
// answers when it ends, with its reports and its error together, and the
// engine shows no progress, log, message or report of it.
type RunCaller struct {
	Sink func(RunEvent)
	// Targets names more targets (the repeated --target); Threads is the
	// worker threads per variant and Devices the GPUs of the
	// one-thread-per-device variants (0: the default, the target's own
	// count); Workdir is a checkout on the target that the user's code
	// runs from instead of sending it; AllowHome lets the files of the
	// user's home directory travel without asking.
	Targets   []string
	Threads   int
	Devices   int
	Workdir   string
	AllowHome bool
}

// RunEvent is a line a run printed on a target: a variant's stdout or
// stderr, or a status line about the run ("status").
type RunEvent struct {
	Target  string
	Variant string
	Stream  string
	Line    string
}

// TargetArgs name a target; empty is the default target.
type TargetArgs struct {
	Target string `json:"target,omitempty"`
}

// DoctorArgs ask for the doctor's checks of a target (the default for
// ""); ImportTorch also times importing each package there.
type DoctorArgs struct {
	Target      string `json:"target,omitempty"`
	ImportTorch bool   `json:"importTorch,omitempty"`
}

// GatesArgs ask where torch reads a config flag.
type GatesArgs struct {
	Flag   string `json:"flag"`
	Target string `json:"target,omitempty"`
}

// TracebackArgs give a traceback: its text, or lines Line..EndLine
// (0-based, inclusive) of an open document.
type TracebackArgs struct {
	Text    string `json:"text,omitempty"`
	URI     string `json:"uri,omitempty"`
	Line    int    `json:"line,omitempty"`
	EndLine int    `json:"endLine,omitempty"`

	// From the command line only. Path is the local file Text was read
	// from (a run's output beside it says where the run put the
	// workspace). Quiet is set by a caller that gives the text itself,
	// even an empty one, and prints the answer: no document is read, no
	// message shown and no frame opened.
	Path  string `json:"-"`
	Quiet bool   `json:"-"`
}

// LinksArgs give a short text (a terminal's line) to link.
type LinksArgs struct {
	Text string `json:"text"`
}

// CancelArgs name the run to cancel; empty cancels every run.
type CancelArgs struct {
	Run string `json:"run,omitempty"`
}

// CommandResult is what a command returns to the editor: text to show,
// and a document it opened.
type CommandResult struct {
	Markdown string   `json:"markdown,omitempty"`
	Path     string   `json:"path,omitempty"`
	Targets  []string `json:"targets,omitempty"`
	Default  string   `json:"default,omitempty"`
	// Text is the answer as plain text, for the command line.
	Text string `json:"-"`
}
