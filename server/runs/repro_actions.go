package runs

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/repro"
	"github.com/torchlsp/torchlsp/server/source"
)

// Codes of the threading diagnostics that offer a repro run.
var reproCodes = map[string]bool{
	diagnose.CodeCudagraphsInThreads: true,
	diagnose.CodeTreesOffInThreads:   true,
	diagnose.CodeConfigInThread:      true,
	diagnose.CodeSharedCallable:      true,
}

// CodeActions offers the runs on a torch.compile call at rng and on the
// threading diagnostics: the threaded repro (api.KindRepro) and the compile
// explanation (api.KindExplain); on a diagnostic whose hazard has repro
// variants (TL011, TL013, TL016, TL017), that hazard's repro of the compile call before
// it. They resolve no diagnostic, so they carry none.
func (rn *Runs) CodeActions(doc *api.Snapshot, rng api.Range, diags []api.Diagnostic, only []string) []api.CodeAction {
	if !doc.IsPython() {
		return nil
	}
	wantRepro, wantExplain := api.KindWanted(only, api.KindRepro), api.KindWanted(only, api.KindExplain)
	if !wantRepro && !wantExplain {
		return nil
	}
	call, ok := compileCallNear(doc.Buffer(), rng.Start.Line)
	if !ok {
		return nil
	}
	callRange := api.RangeOf(call.Span)
	var related []api.Diagnostic
	var hazards []repro.Hazard
	for _, diag := range diags {
		if reproCodes[diag.Code] {
			related = append(related, diag)
		}
		if h, ok := repro.HazardFor(diag.Code); ok && api.Overlaps(diag.Range, rng) && !containsHazard(hazards, h) {
			hazards = append(hazards, h)
		}
	}
	threading := api.Overlaps(callRange, rng) || anyOverlaps(related, rng)
	if !threading && len(hazards) == 0 {
		return nil
	}
	def := rn.deps.DefaultTarget()
	names := rn.deps.Configured()
	args := api.RunArgs{URI: doc.URI(), Line: call.Span.Start.Line}
	var actions []api.CodeAction
	if wantRepro {
		for _, h := range hazards {
			actions = append(actions, hazardActions(h, args, def, len(names) > 1)...)
		}
	}
	if !threading {
		return actions
	}
	if wantRepro {
		own := args
		own.Own = true
		actions = append(actions, api.CodeAction{
			Title:   fmt.Sprintf("Run threaded repro on %s", def),
			Kind:    api.KindRepro,
			Command: &api.Command{Title: "Run threaded repro", Name: api.CommandRepro, Arguments: []any{args}},
		}, api.CodeAction{
			Title:   "Run threaded repro with this code",
			Kind:    api.KindRepro,
			Command: &api.Command{Title: "Run threaded repro with this code", Name: api.CommandRepro, Arguments: []any{own}},
		})
	}
	if wantExplain {
		actions = append(actions, api.CodeAction{
			Title:   fmt.Sprintf("Explain compile on %s", def),
			Kind:    api.KindExplain,
			Command: &api.Command{Title: "Explain compile", Name: api.CommandExplain, Arguments: []any{args}},
		})
	}
	if wantRepro && len(names) > 1 {
		all := args
		all.All = true
		actions = append(actions, api.CodeAction{
			Title:   "Run threaded repro on every target",
			Kind:    api.KindRepro,
			Command: &api.Command{Title: "Run threaded repro on every target", Name: api.CommandRepro, Arguments: []any{all}},
		})
	}
	return actions
}

// hazardActions offers a hazard's repro of the compile call args names:
// on the default target, with the user's own code, and on every target
// when there are several.
func hazardActions(h repro.Hazard, args api.RunArgs, def string, several bool) []api.CodeAction {
	args.Hazard = h.Code
	own, all := args, args
	own.Own, all.All = true, true
	action := func(title string, a api.RunArgs) api.CodeAction {
		return api.CodeAction{Title: title, Kind: api.KindRepro, Command: &api.Command{Title: title, Name: api.CommandRepro, Arguments: []any{a}}}
	}
	out := []api.CodeAction{
		action(fmt.Sprintf("Run %s repro on %s", h.Name, def), args),
		action(fmt.Sprintf("Run %s repro with this code", h.Name), own),
	}
	if several {
		out = append(out, action(fmt.Sprintf("Run %s repro on every target", h.Name), all))
	}
	return out
}

func containsHazard(list []repro.Hazard, h repro.Hazard) bool {
	for _, x := range list {
		if x.Code == h.Code {
			return true
		}
	}
	return false
}

func anyOverlaps(diags []api.Diagnostic, rng api.Range) bool {
	for _, d := range diags {
		if api.Overlaps(d.Range, rng) {
			return true
		}
	}
	return false
}

// compileCallIn finds, in a document, the torch.compile call on a line (or
// the nearest before it) and the place a run of it works from.
func (rn *Runs) compileCallIn(doc *api.Snapshot, line int) (pybuf.Call, runPlace, error) {
	if doc == nil {
		return pybuf.Call{}, runPlace{}, errors.New("the document is not open")
	}
	call, ok := compileCallNear(doc.Buffer(), line)
	if !ok {
		return pybuf.Call{}, runPlace{}, fmt.Errorf("no torch.compile call at or before line %d", line+1)
	}
	place, err := rn.placeOf(doc)
	if err != nil {
		return pybuf.Call{}, runPlace{}, err
	}
	return call, place, nil
}

// compileCallNear finds the torch.compile call on a line, or else the
// nearest one before it (the call a thread diagnostic is about); never one
// after it.
func compileCallNear(buf *pybuf.Buffer, line int) (pybuf.Call, bool) {
	calls := buf.Calls("torch.compile")
	best, found := pybuf.Call{}, false
	for _, c := range calls {
		if c.Span.Start.Line <= line && line <= c.Span.End.Line {
			return c, true
		}
		if c.Span.Start.Line <= line && (!found || c.Span.Start.Line > best.Span.Start.Line) {
			best, found = c, true
		}
	}
	return best, found
}

// Repro runs torchlsp.repro and `torchlsp repro`: the repro of the
// torch.compile call at a line, as a job of the runner (Run). It builds
// the repro from the call's settings and the config changes in its file,
// runs every variant (the threading ones, or a hazard's) on each target,
// and reports what happened, with torch frames linked to the mirror.
func (rn *Runs) Repro(ctx context.Context, args api.RunArgs) (*RunResult, error) {
	hazard, err := hazardNamed(args.Hazard)
	if err != nil {
		return nil, err
	}
	doc := rn.deps.Document(args.URI)
	if doc == nil {
		return nil, fmt.Errorf("repro: %s: %w", args.URI, errNoDocument)
	}
	kind := reportKind(hazard)
	job := Job{
		name: "repro", kind: kind, report: kind + " report",
		title: runTitle(kind, doc, args, rn.runTargets(args)),
		status: func(ev repro.Event) string {
			if ev.Variant == "" {
				return ev.Line // about the whole run
			}
			return fmt.Sprintf("%s: %s", ev.Variant, ev.Line)
		},
		work: func(ctx context.Context, sink func(repro.Event)) (*runOutput, error) {
			return rn.repro(ctx, doc, args, hazard, sink)
		},
	}
	return rn.Run(ctx, job, args)
}

// repro is a repro run's work; a nil output means nothing ran.
func (rn *Runs) repro(ctx context.Context, doc *api.Snapshot, args api.RunArgs, hazard *repro.Hazard, sink func(repro.Event)) (*runOutput, error) {
	call, place, err := rn.compileCallIn(doc, args.Line)
	if err != nil {
		return nil, fmt.Errorf("repro: %w", err)
	}
	var (
		runs   []repro.TargetRun
		mirror []*remote.MirrorTree
		errs   []error
	)
	w, err := rn.reproWorkload(ctx, args, place, doc, call, sink)
	if err != nil {
		return nil, fmt.Errorf("repro: %w", err)
	}
	c := callerOf(args)
	for _, name := range rn.targetNames(args) {
		s, err := rn.deps.Session(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cat, ps, err := s.Catalog(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("target %s: %w", s.Spec().Name, err))
			continue
		}
		spec := reproSpec(doc.FlagRefs(cat), call, cat, c.Threads)
		spec.Devices = c.Devices
		if spec.Devices == 0 {
			spec.Devices = repro.AutoDevices
		}
		if w.own {
			w.code.apply(&spec, call, w.files, c.Workdir)
		}
		if hazard != nil {
			spec.Variants = hazard.Variants
		}
		variants, err := repro.Generate(spec)
		if err != nil {
			return nil, fmt.Errorf("repro: %w", err)
		}
		runs = append(runs, repro.TargetRun{Target: s.Target(), Interpreter: s.Spec().Interpreter(), Variants: variants})
		mirror = append(mirror, ps.Mirror())
	}
	if len(runs) == 0 {
		return nil, errors.Join(errs...)
	}
	mapFrame := func(targetPath string, line int) (string, bool) {
		for _, m := range mirror {
			if local, ok := m.LocalPath(targetPath); ok {
				u := url.URL{Scheme: "file", Path: local, Fragment: fmt.Sprintf("L%d", line)}
				return u.String(), true
			}
		}
		return "", false
	}
	opts := rn.runOptions(place)
	opts.MapFrame = mapFrame
	opts.WorkloadReason = w.reason
	reports, err := repro.RunMany(ctx, runs, opts, sink)
	errs = append(errs, err)
	var b strings.Builder
	for i, r := range reports {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(r.Markdown(mapFrame))
	}
	for _, r := range reports {
		rn.deps.RanIn(r, place.dir, c.Workdir)
	}
	rn.noteRepro(doc.URI(), call, reportKind(hazard), reports)
	return &runOutput{markdown: b.String(), reports: reports}, errors.Join(errs...)
}

// reproSpec reads a compile call's settings, and the config assignments
// and patches in its file, into a repro spec.
func reproSpec(refs []diagnose.FlagRef, call pybuf.Call, cat *gates.Catalog, threads int) repro.Spec {
	// Without torch.compile on the target (Debian's torch 1.13), the
	// stand-in backend shows how the pattern fails.
	spec := repro.Spec{Threads: threads, StandIn: !cat.HasCompile, CompileInThreads: true}
	for _, r := range refs {
		switch r.Spelling {
		case diagnose.SpellAttribute, diagnose.SpellPatchString, diagnose.SpellPatchDict, diagnose.SpellPatchKwarg:
		default:
			continue // options keys travel with the call; env vars are the target's
		}
		if r.Flag == nil || !r.Write || r.Value == "" {
			continue
		}
		spec.Config = append(spec.Config, repro.ConfigSetting{Module: r.Flag.Module, Key: r.Flag.Key, Value: r.Value})
	}
	for _, kw := range call.Keywords {
		switch kw.Name {
		case "mode":
			spec.Mode = kw.Value.Str
		case "backend":
			spec.Backend = kw.Value.Str
		case "fullgraph":
			spec.Fullgraph = kw.Value.Text == "True"
		case "dynamic":
			if kw.Value.Text == "True" || kw.Value.Text == "False" {
				v := kw.Value.Text == "True"
				spec.Dynamic = &v
			}
		case "options":
			spec.Options = map[string]string{}
			for _, en := range kw.Value.Entries {
				spec.Options[en.Key] = en.Value.Text
			}
		}
	}
	return spec
}

// reproNotes keeps the last repro summary of each compile call, shown as a
// diagnostic on it.
type reproNotes struct {
	mu      sync.Mutex                  // guards notes and explain
	notes   map[string][]api.Diagnostic // by document URI
	explain map[string][]api.Diagnostic // the last explain's findings, by document URI
}

// hazardNamed is the hazard of a diagnostic code; nil for none.
func hazardNamed(code string) (*repro.Hazard, error) {
	if code == "" {
		return nil, nil
	}
	h, ok := repro.HazardFor(code)
	if !ok {
		return nil, fmt.Errorf("repro: no repro variants for %q: the hazards with them are %s", code, strings.Join(repro.HazardCodes(), ", "))
	}
	return &h, nil
}

// reportKind names a run in titles and notes: "threaded repro", or the
// hazard's, "kept-outputs repro".
func reportKind(h *repro.Hazard) string {
	if h == nil {
		return "threaded repro"
	}
	return h.Name + " repro"
}

func (rn *Runs) noteRepro(uri string, call pybuf.Call, kind string, reports []repro.Report) {
	var parts []string
	failed := false
	for _, r := range reports {
		parts = append(parts, r.Summary())
		for _, v := range r.Variants {
			if !v.OK {
				failed = true
			}
		}
	}
	sort.Strings(parts)
	sev := api.SeverityInfo
	if failed {
		sev = api.SeverityWarning
	}
	diag := api.Diagnostic{
		Range: api.RangeOf(call.CalleeSpan), Severity: sev, Code: "TL100 repro", Source: "torchlsp",
		Message: strings.ToUpper(kind[:1]) + kind[1:] + ": " + strings.Join(parts, "; "),
	}
	rn.notes.mu.Lock()
	if rn.notes.notes == nil {
		rn.notes.notes = map[string][]api.Diagnostic{}
	}
	rn.notes.notes[uri] = []api.Diagnostic{diag}
	rn.notes.mu.Unlock()
	rn.deps.NotesChanged(rn.deps.Document(uri))
}

// Notes are the diagnostics the last runs left on a document: each
// compile call's last repro summary and the last explain's findings.
func (rn *Runs) Notes(doc *source.Snapshot) []api.Diagnostic { return rn.notesFor(doc.URI()) }

func (rn *Runs) notesFor(uri string) []api.Diagnostic {
	rn.notes.mu.Lock()
	defer rn.notes.mu.Unlock()
	return append(append([]api.Diagnostic(nil), rn.notes.notes[uri]...), rn.notes.explain[uri]...)
}

// reproWorkload is what a repro runs: the user's own code (with the
// files that carry it) or the stand-in, and why.
type reproWorkload struct {
	own    bool
	code   ownCode
	files  []repro.File
	reason string // for the report; empty for a plain stand-in request
}

// reproWorkload decides what a repro runs. Own insists on the user's
// code, StandIn on the stand-in; neither takes the user's code when the
// file can be run as the workspace's code and its files can be sent,
// else falls back to the stand-in, saying why.
func (rn *Runs) reproWorkload(ctx context.Context, args api.RunArgs, place runPlace, doc *api.Snapshot, call pybuf.Call, sink func(repro.Event)) (reproWorkload, error) {
	if !args.Own && args.StandIn {
		return reproWorkload{}, nil
	}
	code, err := ownCodeOf(place.dir, doc.Path(), doc.Text(), call)
	var files []repro.File
	if err == nil {
		c := callerOf(args)
		files, err = rn.runFiles(ctx, place, code, c.Workdir, c.AllowHome, sink)
	}
	switch {
	case err == nil:
		return reproWorkload{own: true, code: code, files: files, reason: code.describe()}, nil
	case args.Own || ctx.Err() != nil:
		return reproWorkload{}, err
	}
	reason := "the stand-in model ran because your code could not be run: " + err.Error()
	sink(repro.Event{Stream: "status", Line: reason})
	return reproWorkload{reason: reason}, nil
}

// targetNames are the targets a repro runs on; "" is the default.
func (rn *Runs) targetNames(args api.RunArgs) []string {
	names := callerOf(args).Targets
	if args.Target != "" {
		names = append(slices.Clip(names), args.Target)
	}
	if args.All {
		names = rn.deps.Configured()
	}
	if len(names) == 0 {
		names = []string{""}
	}
	return names
}

// runTargets names the targets a run goes to, for its title.
func (rn *Runs) runTargets(args api.RunArgs) []string {
	switch {
	case args.All:
		return rn.deps.Configured()
	case args.Target != "" || len(callerOf(args).Targets) > 0:
		return rn.targetNames(args)
	}
	def := rn.deps.DefaultTarget()
	return []string{def}
}

// runTitle says what a run does: "threaded repro of train.py:12 on debian".
func runTitle(kind string, doc *api.Snapshot, args api.RunArgs, targets []string) string {
	name := filepath.Base(doc.Path())
	if doc.Path() == "" {
		name = doc.URI()
	}
	t := fmt.Sprintf("%s of %s:%d", kind, name, args.Line+1)
	if len(targets) > 0 && targets[0] != "" {
		t += " on " + strings.Join(targets, ", ")
	}
	return t
}
