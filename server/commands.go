package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/server/session"
)

// Commands the engine runs for workspace/executeCommand.
const (
	CommandRepro        = "torchlsp.repro"        // args: {uri, line, target?, all?}
	CommandDoctor       = "torchlsp.doctor"       // args: {target?}
	CommandSelectTarget = "torchlsp.selectTarget" // args: {target}
	CommandOpenMirror   = "torchlsp.openMirror"   // args: {target?}
	CommandGates        = "torchlsp.gates"        // args: {flag, target?}
	CommandSite         = "torchlsp.site"         // args: {target?}
	CommandExplain      = "torchlsp.explain"      // args: {uri, line, target?}
	CommandTraceback    = "torchlsp.traceback"    // args: {text} or {uri, line, endLine}
	CommandLinks        = "torchlsp.links"        // args: {text}
)

// Commands names the commands ExecuteCommand runs.
func (e *Engine) Commands() []string {
	return []string{CommandRepro, CommandDoctor, CommandSelectTarget, CommandOpenMirror, CommandGates, CommandSite, CommandExplain,
		CommandTraceback, CommandLinks}
}

// commandArgs is the one argument object every command takes.
type commandArgs struct {
	URI    string `json:"uri"`
	Line   int    `json:"line"` // 0-based
	Target string `json:"target"`
	All    bool   `json:"all"`
	Flag   string `json:"flag"`
	Own    bool   `json:"own"` // repro: the user's own code and inputs
	// Text is a traceback or a terminal's line (traceback, links);
	// EndLine the last line (0-based, inclusive) of a document's
	// traceback from Line on.
	Text    string `json:"text,omitempty"`
	EndLine int    `json:"endLine,omitempty"`
}

// CommandResult is what a command returns to the editor: text to show,
// and a document it opened.
type CommandResult struct {
	Markdown string   `json:"markdown,omitempty"`
	Path     string   `json:"path,omitempty"`
	Targets  []string `json:"targets,omitempty"`
	Default  string   `json:"default,omitempty"`
}

// ExecuteCommand runs a command an editor asked for.
func (e *Engine) ExecuteCommand(ctx context.Context, name string, raw []json.RawMessage) (any, error) {
	var args commandArgs
	if len(raw) > 0 && len(raw[0]) > 0 && string(raw[0]) != "null" {
		if err := json.Unmarshal(raw[0], &args); err != nil {
			// Editors that pass a bare string mean the target's name.
			var s string
			if json.Unmarshal(raw[0], &s) != nil {
				return nil, fmt.Errorf("%s: arguments: %w", name, err)
			}
			args.Target, args.Flag = s, s
		}
	}
	switch name {
	case CommandDoctor:
		return e.doctorCommand(ctx, args)
	case CommandSelectTarget:
		return e.selectTarget(ctx, args)
	case CommandOpenMirror:
		return e.openMirror(ctx, args)
	case CommandGates:
		var b strings.Builder
		if err := e.Gates(ctx, args.Target, args.Flag, &b); err != nil {
			return nil, err
		}
		return CommandResult{Markdown: "```\n" + b.String() + "```\n"}, nil
	case CommandRepro:
		return e.reproCommand(ctx, args)
	case CommandSite:
		return e.siteCommand(ctx, args)
	case CommandExplain:
		return e.explainCommand(ctx, args)
	case CommandTraceback:
		return e.tracebackCommand(ctx, args)
	case CommandLinks:
		return e.linksCommand(ctx, args)
	}
	return nil, fmt.Errorf("unknown command %q", name)
}

func (e *Engine) doctorCommand(ctx context.Context, args commandArgs) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	steps, err := e.Doctor(ctx, args.Target, false)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("| | check | result | time |\n|---|---|---|---|\n")
	for _, st := range steps {
		mark := "✓"
		if !st.OK {
			mark = "✗"
		}
		detail := st.Detail
		if st.Hint != "" && !st.OK {
			detail += " — " + st.Hint
		}
		lat := ""
		if st.Latency > 0 {
			lat = st.Latency.Round(10 * time.Microsecond).String()
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mark, st.Name, strings.ReplaceAll(detail, "|", "\\|"), lat)
	}
	return CommandResult{Markdown: b.String()}, nil
}

// selectTarget makes a configured target the default for this session; with
// no name it lists the targets.
func (e *Engine) selectTarget(ctx context.Context, args commandArgs) (any, error) {
	names, def := e.Targets()
	if args.Target == "" {
		sort.Strings(names)
		return CommandResult{Targets: names, Default: def}, nil
	}
	if _, err := e.Spec(args.Target); err != nil {
		return nil, err
	}
	before, _ := e.cfg.spec("")
	e.cfg.selectTarget(args.Target)
	if after, err := e.cfg.spec(""); err == nil && !session.SameSpec(before, after) {
		e.defaultChanged(after.Name)
	}
	e.Initialized(ctx)
	e.notify.ShowMessage(ctx, MessageInfo, fmt.Sprintf("torchlsp: target %s", args.Target))
	return CommandResult{Targets: names, Default: args.Target}, nil
}

// openMirror shows where the target's torch is mirrored, and opens its
// __init__.py in the editor when it can.
func (e *Engine) openMirror(ctx context.Context, args commandArgs) (any, error) {
	s, err := e.session(args.Target)
	if err != nil {
		return nil, err
	}
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		return nil, err
	}
	path := ps.Mirror().SiteDir + "/torch/__init__.py"
	e.openResult(ctx, fmt.Sprintf("torch %s of target %s, mirrored read-only", ps.Info().Version, s.Spec().Name), path)
	return CommandResult{
		Path:     path,
		Markdown: fmt.Sprintf("torch %s of target **%s** is mirrored read-only at `%s` (from `%s` on the target)", ps.Info().Version, s.Spec().Name, ps.Mirror().SiteDir, ps.Mirror().TargetDir),
	}, nil
}

// openResult opens a file the user asked for (a run's report, the
// mirror) in the editor; when the editor cannot open documents
// (window/showDocument) or did not, it names the file in a message
// instead, so that the result reaches the user either way.
func (e *Engine) openResult(ctx context.Context, what, path string) {
	if e.notify.Capabilities().ShowDocument {
		if shown, err := e.notify.ShowDocument(ctx, Location{Path: path}, true); shown && err == nil {
			return
		}
	}
	e.notify.ShowMessage(ctx, MessageInfo, fmt.Sprintf("torchlsp: %s: %s", what, path))
}
