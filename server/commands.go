package server

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/session"
)

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

// DoctorCommand runs torchlsp.doctor: the doctor's checks as a table.
func (e *Engine) DoctorCommand(ctx context.Context, args TargetArgs) (*CommandResult, error) {
	return e.doctorCommand(ctx, args)
}

// SelectTargetCommand runs torchlsp.selectTarget.
func (e *Engine) SelectTargetCommand(ctx context.Context, args TargetArgs) (*CommandResult, error) {
	return e.selectTarget(ctx, args)
}

// OpenMirrorCommand runs torchlsp.openMirror.
func (e *Engine) OpenMirrorCommand(ctx context.Context, args TargetArgs) (*CommandResult, error) {
	return e.openMirror(ctx, args)
}

// GatesCommand runs torchlsp.gates: where torch reads a flag.
func (e *Engine) GatesCommand(ctx context.Context, args GatesArgs) (*CommandResult, error) {
	var b strings.Builder
	if err := e.Gates(ctx, args.Target, args.Flag, &b); err != nil {
		return nil, err
	}
	return &CommandResult{Markdown: "```\n" + b.String() + "```\n"}, nil
}

// SiteCommand runs torchlsp.site.
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

func (e *Engine) doctorCommand(ctx context.Context, args TargetArgs) (*CommandResult, error) {
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
	return &CommandResult{Markdown: b.String()}, nil
}

// selectTarget makes a configured target the default for this session; with
// no name it lists the targets.
func (e *Engine) selectTarget(ctx context.Context, args TargetArgs) (*CommandResult, error) {
	names, def := e.Targets()
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

// openMirror shows where the target's torch is mirrored, and opens its
// __init__.py in the editor when it can.
func (e *Engine) openMirror(ctx context.Context, args TargetArgs) (*CommandResult, error) {
	s, err := e.session(args.Target)
	if err != nil {
		return nil, err
	}
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		return nil, err
	}
	path := ps.Mirror().SiteDir + "/torch/__init__.py"
	api.OpenResult(ctx, e.notify, fmt.Sprintf("torch %s of target %s, mirrored read-only", ps.Info().Version, s.Spec().Name), path)
	return &CommandResult{
		Path:     path,
		Markdown: fmt.Sprintf("torch %s of target **%s** is mirrored read-only at `%s` (from `%s` on the target)", ps.Info().Version, s.Spec().Name, ps.Mirror().SiteDir, ps.Mirror().TargetDir),
	}, nil
}
