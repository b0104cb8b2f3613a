package server

import (
	"context"
	"fmt"
	"sort"

	"github.com/torchlsp/torchlsp/server/session"
)

// The commands of workspace/executeCommand, one method each, delegated to
// the feature that runs it; the command line calls the same methods
// (`torchlsp repro`, `explain`, `traceback`, `site`, `doctor`, `gates`).
// Their names and argument types are in server/api/commands.go;
// lsp/commands.go decodes each argument and calls the method.

// Repro runs torchlsp.repro and `torchlsp repro`: the threaded repro (or
// a hazard's) of a compile call on each target, through the runner.
func (e *Engine) Repro(ctx context.Context, args RunArgs) (*RunResult, error) {
	return e.runs.Repro(ctx, args)
}

// Explain runs torchlsp.explain and `torchlsp explain`: the compile
// call's object with Dynamo's own reporting, each graph break and
// recompile a diagnostic, through the runner.
func (e *Engine) Explain(ctx context.Context, args RunArgs) (*RunResult, error) {
	return e.runs.Explain(ctx, args)
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

// Site runs torchlsp.site and `torchlsp site`: the site-packages view of
// a target, built or brought up to date, and handed to its reader (the
// editor's Python server then reads it: hovers and definitions point into
// it).
func (e *Engine) Site(ctx context.Context, args TargetArgs) (*SiteResult, error) {
	return e.site.Command(ctx, args)
}

// Traceback runs torchlsp.traceback and `torchlsp traceback`: each
// reference of a traceback or log mapped to a local file, the exception
// put on the user's innermost frame.
func (e *Engine) Traceback(ctx context.Context, args TracebackArgs) (*TracebackResult, error) {
	return e.links.Traceback(ctx, args)
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
