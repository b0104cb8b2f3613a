package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/jsonrpc2"

	"github.com/torchlsp/torchlsp/server"
)

// Commands are the engine's commands for workspace/executeCommand, one
// typed method each; the table below decodes their arguments.
type Commands interface {
	Repro(ctx context.Context, args server.RunArgs) (*server.RunResult, error)
	Explain(ctx context.Context, args server.RunArgs) (*server.RunResult, error)
	CancelRunCommand(ctx context.Context, args server.CancelArgs) (*server.CancelResult, error)
	Doctor(ctx context.Context, args server.DoctorArgs) (*server.DoctorResult, error)
	SelectTargetCommand(ctx context.Context, args server.TargetArgs) (*server.CommandResult, error)
	OpenMirrorCommand(ctx context.Context, args server.TargetArgs) (*server.CommandResult, error)
	Gates(ctx context.Context, args server.GatesArgs) (*server.CommandResult, error)
	Site(ctx context.Context, args server.TargetArgs) (*server.SiteResult, error)
	Traceback(ctx context.Context, args server.TracebackArgs) (*server.TracebackResult, error)
	LinksCommand(ctx context.Context, args server.LinksArgs) (*server.LinksResult, error)
}

// commandRunner runs a command whose arguments were decoded.
type commandRunner func(ctx context.Context, e Commands) (any, error)

// command is one row of the table: the name, the form of the argument
// (for errors), and how to decode it into the engine's call.
type command struct {
	name   string
	form   string
	decode func(arg json.RawMessage) (commandRunner, error)
}

// commands is every command the server runs. A bare string argument is
// the target's name (a flag's for torchlsp.gates, a run's id for
// torchlsp.cancelRun), as editors send it.
var commands = []command{
	row(server.CommandRepro, "{uri, line, target?, all?, own?, standIn?, hazard?, wait?}", nil, Commands.Repro),
	row(server.CommandExplain, "{uri, line, target?, wait?}", nil, Commands.Explain),
	row(server.CommandCancelRun, `{run?} or "RUN"`, func(s string) server.CancelArgs { return server.CancelArgs{Run: s} }, Commands.CancelRunCommand),
	row(server.CommandDoctor, `{target?, importTorch?} or "TARGET"`, func(s string) server.DoctorArgs { return server.DoctorArgs{Target: s} }, Commands.Doctor),
	row(server.CommandSelectTarget, `{target?} or "TARGET"`, targetArg, Commands.SelectTargetCommand),
	row(server.CommandOpenMirror, `{target?} or "TARGET"`, targetArg, Commands.OpenMirrorCommand),
	row(server.CommandGates, `{flag, target?} or "FLAG"`, func(s string) server.GatesArgs { return server.GatesArgs{Flag: s} }, Commands.Gates),
	row(server.CommandSite, `{target?} or "TARGET"`, targetArg, Commands.Site),
	row(server.CommandTraceback, "{text} or {uri, line, endLine}", nil, Commands.Traceback),
	row(server.CommandLinks, "{text}", nil, Commands.LinksCommand),
}

func targetArg(s string) server.TargetArgs { return server.TargetArgs{Target: s} }

// row makes a table row for a command taking A: a JSON object decoded
// into A, or (when bare is set) a JSON string; null or no argument is A's
// zero value.
func row[A, R any](name, form string, bare func(string) A, call func(Commands, context.Context, A) (R, error)) command {
	return command{name: name, form: form, decode: func(arg json.RawMessage) (commandRunner, error) {
		var a A
		if len(arg) > 0 && !bytes.Equal(bytes.TrimSpace(arg), []byte("null")) {
			var s string
			if bare != nil && json.Unmarshal(arg, &s) == nil {
				a = bare(s)
			} else if err := json.Unmarshal(arg, &a); err != nil {
				return nil, fmt.Errorf("want %s: %w", form, err)
			}
		}
		return func(ctx context.Context, e Commands) (any, error) { return call(e, ctx, a) }, nil
	}}
}

// commandNames lists the commands, for the server's capabilities.
func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

type executeCommandParams struct {
	Command   string            `json:"command"`
	Arguments []json.RawMessage `json:"arguments"`
}

// executeCommand decodes a command's argument on the read loop, so that a
// bad one is answered at once with what the command takes.
func (s *lspServer) executeCommand(_ context.Context, raw json.RawMessage) (callRunner, error) {
	var p executeCommandParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	for _, c := range commands {
		if c.name != p.Command {
			continue
		}
		var arg json.RawMessage
		if len(p.Arguments) > 0 {
			arg = p.Arguments[0]
		}
		run, err := c.decode(arg)
		if err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: arguments: %v", c.name, err)
		}
		return func(ctx context.Context) (any, error) { return run(ctx, s.engine) }, nil
	}
	return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "unknown command %q", p.Command)
}
