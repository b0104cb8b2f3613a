package checks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/source"
	"github.com/torchlsp/torchlsp/server/syntax"
	"github.com/torchlsp/torchlsp/server/wsmodel"
)

// NoteProducer is a feature that leaves diagnostics of its own on a
// document (a run's summary, a traceback's exception); every check
// publishes them beside the rules' findings.
type NoteProducer interface {
	Notes(doc *source.Snapshot) []api.Diagnostic
}

// ActionProducer is a feature that offers code actions of its own at a
// range (a run of the compile call, the mapping of a traceback), given
// the diagnostics the rules found in the document.
type ActionProducer interface {
	CodeActions(doc *source.Snapshot, rng api.Range, diags []api.Diagnostic, only []string) []api.CodeAction
}

// diagnosticsDelay lets a burst of keystrokes settle before checking.
const diagnosticsDelay = 150 * time.Millisecond

// checked is a snapshot's diagnostics for one target's torch, kept on the
// snapshot for code actions.
type checked struct {
	diags []api.Diagnostic
	fixes [][]diagnose.Fix // parallel to diags
}

// checkKey memoizes a snapshot's diagnostics per flag catalog (one per
// mirrored torch) and target (whose env the rules read).
type checkKey struct {
	cat    *gates.Catalog
	target string
	model  *wsmodel.Model // the workspace model's version the check read
	// freeThreaded: the target's interpreter runs threads without the GIL.
	freeThreaded bool
}

// Diagnostics checks a document against the target's torch: config flags,
// compile modes and options, and the threading hazards they create. It
// returns nil for documents that do not use torch.
func (ch *Checks) Diagnostics(ctx context.Context, doc *api.Snapshot) ([]api.Diagnostic, error) {
	c, err := ch.check(ctx, doc)
	if err != nil || c == nil {
		return nil, err
	}
	return c.diags, nil
}

// check computes a snapshot's diagnostics, once per snapshot and target.
func (ch *Checks) check(ctx context.Context, doc *api.Snapshot) (*checked, error) {
	if doc == nil {
		return nil, nil
	}
	if doc.TooLarge() || !doc.IsPython() {
		return &checked{}, nil
	}
	buf, err := ch.parseDoc(ctx, doc)
	if err != nil {
		return nil, err
	}
	if t := buf.Tree(); t.GaveUp() {
		return &checked{diags: []api.Diagnostic{notParsed(t)}}, nil
	}
	// A file that does not import torch may still call what another file
	// compiles: the workspace model's verdicts reach the workspace's own
	// files; others cost nothing.
	if !usesTorch(buf) && !ch.inWorkspace(doc.Path()) {
		return &checked{}, nil
	}
	s, err := ch.deps.Session("")
	if err != nil {
		return nil, err
	}
	cat, ps, err := s.Catalog(ctx)
	if errors.Is(err, session.ErrNotOnTarget) {
		return &checked{}, nil
	}
	if err != nil {
		return nil, err
	}
	spec := s.Spec()
	model := ch.modelFor(ctx, cat, ps.Mirror().SiteDir, spec.Env, ch.deps.WaitForModel)
	var changed []*source.Snapshot
	if model != nil {
		model, changed = ch.withDocument(doc, buf, cat)
	}
	// Another open file whose path the edit changed is checked again at
	// once: its own text did not change, so there is nothing to let
	// settle.
	for _, other := range changed {
		if ch.deps.Notify.Capabilities().Diagnostics {
			ch.deps.Work.Go(func() { ch.publishDiagnostics(other) })
		}
	}
	// The interpreter's facts come with the helper's hello. A check never
	// waits for it (a target that is down or stalled must not hold the
	// diagnostics back): until a helper has answered, the target counts
	// as having the GIL, and a free-threaded answer checks every open
	// document again.
	free, known := s.FreeThreadedKnown()
	if !known {
		ch.awaitHello(s)
	}
	return doc.Memo(checkKey{cat, spec.Name, model, free}, func() any {
		return checkWith(doc, cat, ps.Mirror(), spec, model, free)
	}).(*checked), nil
}

// helloWait bounds how long the background wait for the target's helper
// to say what its interpreter is lasts (the helper's own start is
// bounded at 60 s).
const helloWait = 90 * time.Second

// awaitHello waits in the background, once per session, for the target's
// helper to start, and checks the open documents again when it says the
// target runs without the GIL (TL018).
func (ch *Checks) awaitHello(s *session.Session) {
	ch.hellos.mu.Lock()
	if ch.hellos.waiting == nil {
		ch.hellos.waiting = map[*session.Session]bool{}
	}
	if ch.hellos.waiting[s] {
		ch.hellos.mu.Unlock()
		return
	}
	ch.hellos.waiting[s] = true
	ch.hellos.mu.Unlock()
	ch.deps.Work.Go(func() {
		ctx, cancel := context.WithTimeout(ch.deps.Work.Context(), helloWait)
		defer cancel()
		free := s.FreeThreaded(ctx)
		ch.hellos.mu.Lock()
		delete(ch.hellos.waiting, s) // a later check asks again if none answered
		ch.hellos.mu.Unlock()
		if free {
			ch.RepublishAll()
		}
	})
}

func checkWith(doc *api.Snapshot, cat *gates.Catalog, m *remote.MirrorTree, spec remote.Spec, model *wsmodel.Model, freeThreaded bool) *checked {
	opts := diagnose.Options{SiteDir: m.SiteDir, Env: spec.Env, FreeThreaded: freeThreaded}
	var calls []diagnose.Diagnostic
	if model != nil && doc.Path() != "" {
		v := model.Verdicts()
		opts, calls = v.For(doc.Path(), opts), v.Findings[doc.Path()]
	}
	found := append(diagnose.Check(doc.Buffer(), cat, opts), calls...)
	c := &checked{}
	for _, fd := range found {
		diag := api.Diagnostic{
			Range:    api.RangeOf(fd.Span),
			Severity: severityOf(fd.Severity),
			Code:     fd.Code,
			Source:   "torchlsp",
			Message:  fd.Message,
		}
		for _, rel := range fd.Related {
			if rel.Path != "" {
				// A line of the user's workspace: the message names it.
				diag.Related = append(diag.Related, api.RelatedInfo{
					Location: api.Location{Path: rel.Path, Range: api.Range{Start: api.Position{Line: rel.Line}, End: api.Position{Line: rel.Line}}},
					Message:  rel.Message,
				})
				continue
			}
			local := filepath.Join(m.SiteDir, filepath.FromSlash(rel.File))
			diag.Related = append(diag.Related, api.RelatedInfo{
				Location: api.Location{Path: local, TargetPath: m.TargetPath(local),
					Range: api.Range{Start: api.Position{Line: rel.Line}, End: api.Position{Line: rel.Line}}},
				Message: fmt.Sprintf("%s:%d: %s", rel.File, rel.Line+1, rel.Message),
			})
		}
		c.diags = append(c.diags, diag)
		c.fixes = append(c.fixes, fd.Fixes)
	}
	return c
}

// notParsed is the note on a document whose parse stopped at one of its
// bounds: without it the file would simply have no findings, hovers or
// definitions, and nothing would say why.
func notParsed(t *syntax.Tree) api.Diagnostic {
	n := len(t.Src())
	why := fmt.Sprintf("its CPU time (%s for a text of %s)", syntax.CPULimit(n).Round(time.Millisecond), humanBytes(int64(n)))
	if t.OverMemory() {
		why = fmt.Sprintf("its memory (%s for a text of %s: tree-sitter's tree of this text would be larger)", humanBytes(syntax.MemoryLimit(n)), humanBytes(int64(n)))
	}
	return api.Diagnostic{
		Severity: api.SeverityInfo,
		Source:   "torchlsp",
		Message:  "torchlsp did not analyse this file: the Python parser stopped at the bound of " + why + "; it has no findings, hovers or definitions from torchlsp",
	}
}

// humanBytes writes a size in KB or MB (decimal, as sizes are written in
// the docs).
func humanBytes(n int64) string {
	if n >= 1e6 {
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0f KB", float64(n)/1e3)
}

// parseDoc parses a document version for its check under the budget that
// background parsing shares, so that checks of large documents and index
// builds never hold more trees at once than it allows; the parse stops
// when ctx is done (a newer version, or the document's close, cancels its
// check), and so does its wait for the budget.
func (ch *Checks) parseDoc(ctx context.Context, doc *api.Snapshot) (*pybuf.Buffer, error) {
	release, err := ch.deps.Parses.TakeContext(ctx, len(doc.Text()))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", doc.URI(), err)
	}
	defer release()
	return doc.BufferContext(ctx)
}

// usesTorch reports whether a buffer imports torch at all; others get no
// diagnostics and cost nothing.
func usesTorch(buf *pybuf.Buffer) bool {
	for _, imp := range buf.Imports() {
		if session.TopPackage(imp.Qualname) == "torch" {
			return true
		}
	}
	return false
}

func severityOf(s diagnose.Severity) api.Severity {
	switch s {
	case diagnose.SeverityError:
		return api.SeverityError
	case diagnose.SeverityWarning:
		return api.SeverityWarning
	case diagnose.SeverityInfo:
		return api.SeverityInfo
	}
	return api.SeverityHint
}

// Schedule checks a snapshot shortly after it was made and
// publishes the result, if the front end shows diagnostics and the
// snapshot is still the document's latest by then. The check of an older
// version still running stops at once: its answer could only be dropped.
func (ch *Checks) Schedule(doc *api.Snapshot) {
	if doc == nil || !ch.deps.Notify.Capabilities().Diagnostics {
		return
	}
	ch.running.supersede(doc.URI())
	time.AfterFunc(diagnosticsDelay, func() {
		if !ch.deps.IsCurrent(doc) {
			return // a newer version has its own run
		}
		ch.deps.Work.Go(func() { ch.publishDiagnostics(doc) })
	})
}

// Closed stops the check of a document that was closed: its answer could
// only be dropped, and a large document's parse would go on for nothing.
func (ch *Checks) Closed(uri string) { ch.running.supersede(uri) }

// publishDiagnostics checks a snapshot and publishes the result, unless a
// newer version arrived meanwhile. It is the document's one check: the
// check it replaces is cancelled and has stopped before this one starts.
func (ch *Checks) publishDiagnostics(doc *api.Snapshot) {
	ctx, end := ch.running.begin(ch.deps.Work.Context(), doc.URI())
	defer end()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if !ch.deps.IsCurrent(doc) {
		return // a newer version has its own check, or the document closed
	}
	c, err := ch.check(ctx, doc)
	if err != nil {
		if ctx.Err() == nil && !(ch.deps.Work.Context().Err() != nil) {
			ch.deps.Notify.LogMessage(ctx, api.MessageWarning, fmt.Sprintf("diagnostics for %s: %v", doc.URI(), err))
		}
		return
	}
	if c == nil || !ch.deps.IsCurrent(doc) {
		return
	}
	if doc.IsPython() {
		ch.prefetchValues(ctx, doc)
	}
	diags := append([]api.Diagnostic(nil), c.diags...)
	for _, p := range ch.notes {
		diags = append(diags, p.Notes(doc)...)
	}
	diags = boundPublished(diags, MaxPublishedDiagnostics, doc.Path())
	if err := ch.deps.Notify.PublishDiagnostics(ctx, doc, diags); err != nil && !(ch.deps.Work.Context().Err() != nil) {
		ch.deps.Notify.LogMessage(ctx, api.MessageWarning, err.Error())
	}
}

// prefetchValues starts reading, on the default target, the values of
// the config modules a document's flags belong to, so that hovers on them
// never wait for the target to import torch.
func (ch *Checks) prefetchValues(ctx context.Context, doc *api.Snapshot) {
	s, err := ch.deps.Session("")
	if err != nil {
		return
	}
	cat, _, err := s.Catalog(ctx)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, r := range doc.FlagRefs(cat) {
		if r.Flag == nil || seen[r.Flag.Module] {
			continue
		}
		seen[r.Flag.Module] = true
		_, _, _ = s.FlagValue(ctx, r.Flag, 0) // starts the read; never waits
	}
}

// RepublishAll checks every open document again and publishes the
// results: the target, its torch, trust or the connection changed.
func (ch *Checks) RepublishAll() {
	if !ch.deps.Notify.Capabilities().Diagnostics {
		return
	}
	for _, doc := range ch.deps.Documents() {
		ch.deps.Work.Go(func() { ch.publishDiagnostics(doc) })
	}
}

// CodeActions offers the quick fixes of the diagnostics at rng, then what
// every registered ActionProducer offers there.
func (ch *Checks) CodeActions(ctx context.Context, doc *api.Snapshot, rng api.Range, only []string) ([]api.CodeAction, error) {
	c, err := ch.check(ctx, doc)
	if err != nil || c == nil {
		return nil, err
	}
	var actions []api.CodeAction
	wantQuickFix := api.KindWanted(only, api.KindQuickFix)
	for i, diag := range c.diags {
		if !api.Overlaps(diag.Range, rng) || !wantQuickFix {
			continue
		}
		for _, fix := range c.fixes[i] {
			edits := make([]api.TextEdit, 0, len(fix.Edits))
			for _, ed := range fix.Edits {
				edits = append(edits, api.TextEdit{Range: api.RangeOf(ed.Span), NewText: ed.NewText})
			}
			actions = append(actions, api.CodeAction{
				Title:       fix.Title,
				Kind:        api.KindQuickFix,
				Diagnostics: []api.Diagnostic{diag},
				Edits:       map[string][]api.TextEdit{doc.URI(): edits},
				Preferred:   fix.Preferred,
			})
		}
	}
	for _, p := range ch.actions {
		actions = append(actions, p.CodeActions(doc, rng, c.diags, only)...)
	}
	return actions, nil
}

// MaxPublishedDiagnostics is the most diagnostics published for one
// document version. A generated or pasted file can hold a finding on every
// line: 150,000 of them made one 37.6 MB publishDiagnostics, sent again on
// every edit. torchlsp check lists them all.
const MaxPublishedDiagnostics = 1000

// boundPublished keeps at most limit diagnostics, the most severe first
// and then in document order, and adds a note at the top of the document
// that says how many were left out and where to see them all.
func boundPublished(diags []api.Diagnostic, limit int, path string) []api.Diagnostic {
	if len(diags) <= limit {
		return diags
	}
	kept := slices.Clone(diags)
	slices.SortStableFunc(kept, func(a, b api.Diagnostic) int {
		if c := cmp.Compare(a.Severity, b.Severity); c != 0 {
			return c // api.SeverityError is the smallest
		}
		if c := cmp.Compare(a.Range.Start.Line, b.Range.Start.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Range.Start.Column, b.Range.Start.Column)
	})
	kept = kept[:limit]
	name := "FILE"
	if path != "" {
		name = filepath.Base(path)
	}
	note := api.Diagnostic{
		Severity: api.SeverityInfo,
		Source:   "torchlsp",
		Message: fmt.Sprintf("%d more findings in this file are not shown: at most %d are published for a file, the most severe first; `torchlsp check %s` lists them all",
			len(diags)-len(kept), limit, name),
	}
	return append(kept, note)
}
