package server

import (
	"context"
	"fmt"
	"sort"

	"github.com/torchlsp/torchlsp/server/session"
)

// The commands of workspace/executeCommand (and the command line's
// doctor and gates), one method each, delegated to the feature that runs
// it. Their names and argument types are in server/api/commands.go;
// lsp/commands.go decodes each argument and calls the method.

// ReproCommand runs torchlsp.repro: the threaded repro, through the runner.
func (e *Engine) ReproCommand(ctx context.Context, args RunArgs) (*RunResult, error) {
	return e.runs.ReproCommand(ctx, args)
}

// ExplainCommand runs torchlsp.explain, through the runner.
func (e *Engine) ExplainCommand(ctx context.Context, args RunArgs) (*RunResult, error) {
	return e.runs.ExplainCommand(ctx, args)
}

// CancelRunCommand runs torchlsp.cancelRun: it cancels a run by its id,
// or every run in progress when the id is empty.
func (e *Engine) CancelRunCommand(ctx context.Context, args CancelArgs) (*CancelResult, error) {
	return e.runs.CancelRun(ctx, args)
}

// Doctor runs torchlsp.doctor and `torchlsp doctor`: the doctor's checks
// of a target, and the table an editor shows of them.
func (e *Engine) Doctor(ctx context.Context, args DoctorArgs) (*DoctorResult, error) {
	return e.doctor.Run(ctx, args)
}

// OpenMirrorCommand runs torchlsp.openMirror: where the target's torch is
// mirrored, its __init__.py opened.
func (e *Engine) OpenMirrorCommand(ctx context.Context, args TargetArgs) (*CommandResult, error) {
	return e.doctor.OpenMirror(ctx, args)
}

// Gates runs torchlsp.gates and `torchlsp gates`: where the target's
// torch reads a config flag.
func (e *Engine) Gates(ctx context.Context, args GatesArgs) (*CommandResult, error) {
	return e.nav.Gates(ctx, args)
}

// SiteCommand runs torchlsp.site: the site an editor asks for, which its
// Python server then reads (hovers and definitions point into it).
func (e *Engine) SiteCommand(ctx context.Context, args TargetArgs) (*SiteResult, error) {
	return e.site.Command(ctx, args)
}

// TracebackCommand runs torchlsp.traceback.
func (e *Engine) TracebackCommand(ctx context.Context, args TracebackArgs) (*TracebackCommandResult, error) {
	return e.links.TracebackCommand(ctx, args)
}

// LinksCommand runs torchlsp.links.
func (e *Engine) LinksCommand(ctx context.Context, args LinksArgs) (*LinksResult, error) {
	return e.links.LinksCommand(ctx, args)
}

// SelectTargetCommand runs torchlsp.selectTarget: it makes a configured
// target the default for this session; with no name it lists the
// targets.
func (e *Engine) SelectTargetCommand(ctx context.Context, args TargetArgs) (*CommandResult, error) {
	names, def := e.cfg.targets()
	if args.Target == "" {
		sort.Strings(names)
		return &CommandResult{Targets: names, Default: def}, nil
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
	return &CommandResult{Targets: names, Default: args.Target}, nil
}
