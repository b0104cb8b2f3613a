package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/session"
)

// noteProducer is a feature that leaves diagnostics of its own on a
// document (a run's summary, a traceback's exception); every check
// publishes them beside the rules' findings.
type noteProducer interface {
	Notes(doc *Snapshot) []Diagnostic
}

// diagnosticsDelay lets a burst of keystrokes settle before checking.
const diagnosticsDelay = 150 * time.Millisecond

// checked is a snapshot's diagnostics for one target's torch, kept on the
// snapshot for code actions.
type checked struct {
	diags []Diagnostic
	fixes [][]diagnose.Fix // parallel to diags
}

// checkKey memoizes a snapshot's diagnostics per flag catalog (one per
// mirrored torch) and target (whose env the rules read).
type checkKey struct {
	cat    *gates.Catalog
	target string
}

// Diagnostics checks a document against the target's torch: config flags,
// compile modes and options, and the threading hazards they create. It
// returns nil for documents that do not use torch.
func (e *Engine) Diagnostics(ctx context.Context, doc *Snapshot) ([]Diagnostic, error) {
	c, err := e.check(ctx, doc)
	if err != nil || c == nil {
		return nil, err
	}
	return c.diags, nil
}

// check computes a snapshot's diagnostics, once per snapshot and target.
func (e *Engine) check(ctx context.Context, doc *Snapshot) (*checked, error) {
	if doc == nil {
		return nil, nil
	}
	if doc.TooLarge() || !doc.IsPython() {
		return &checked{}, nil
	}
	buf, err := e.parseDoc(ctx, doc)
	if err != nil {
		return nil, err
	}
	if !usesTorch(buf) {
		return &checked{}, nil
	}
	s, err := e.session("")
	if err != nil {
		return nil, err
	}
	cat, ps, err := s.Catalog(ctx)
	if errors.Is(err, ErrNotOnTarget) {
		return &checked{}, nil
	}
	if err != nil {
		return nil, err
	}
	spec := s.Spec()
	return doc.Memo(checkKey{cat, spec.Name}, func() any {
		return checkWith(doc, cat, ps.Mirror(), spec)
	}).(*checked), nil
}

func checkWith(doc *Snapshot, cat *gates.Catalog, m *remote.MirrorTree, spec remote.Spec) *checked {
	found := diagnose.Check(doc.Buffer(), cat, diagnose.Options{SiteDir: m.SiteDir, Env: spec.Env})
	c := &checked{}
	for _, fd := range found {
		diag := Diagnostic{
			Range:    api.RangeOf(fd.Span),
			Severity: severityOf(fd.Severity),
			Code:     fd.Code,
			Source:   "torchlsp",
			Message:  fd.Message,
		}
		for _, rel := range fd.Related {
			local := filepath.Join(m.SiteDir, filepath.FromSlash(rel.File))
			diag.Related = append(diag.Related, RelatedInfo{
				Location: Location{Path: local, TargetPath: m.TargetPath(local),
					Range: Range{Start: Position{Line: rel.Line}, End: Position{Line: rel.Line}}},
				Message: fmt.Sprintf("%s:%d: %s", rel.File, rel.Line+1, rel.Message),
			})
		}
		c.diags = append(c.diags, diag)
		c.fixes = append(c.fixes, fd.Fixes)
	}
	return c
}

// parseDoc parses a document version for its check under the budget that
// background parsing shares, so that checks of large documents and index
// builds never hold more trees at once than it allows; the parse stops
// when ctx is done (a newer version cancels its check).
func (e *Engine) parseDoc(ctx context.Context, doc *Snapshot) (*pybuf.Buffer, error) {
	release := e.bg.parses.Take(len(doc.Text()))
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

func severityOf(s diagnose.Severity) Severity {
	switch s {
	case diagnose.SeverityError:
		return SeverityError
	case diagnose.SeverityWarning:
		return SeverityWarning
	case diagnose.SeverityInfo:
		return SeverityInfo
	}
	return SeverityHint
}

// scheduleDiagnostics checks a snapshot shortly after it was made and
// publishes the result, if the front end shows diagnostics and the
// snapshot is still the document's latest by then. The check of an older
// version still running stops at once: its answer could only be dropped.
func (e *Engine) scheduleDiagnostics(doc *Snapshot) {
	if doc == nil || !e.notify.Capabilities().Diagnostics {
		return
	}
	e.checks.supersede(doc.URI())
	time.AfterFunc(diagnosticsDelay, func() {
		if !e.docs.IsCurrent(doc) {
			return // a newer version has its own run
		}
		e.bg.Go(func() { e.publishDiagnostics(doc) })
	})
}

// publishDiagnostics checks a snapshot and publishes the result, unless a
// newer version arrived meanwhile. It is the document's one check: the
// check it replaces is cancelled and has stopped before this one starts.
func (e *Engine) publishDiagnostics(doc *Snapshot) {
	ctx, end := e.checks.begin(e.bg.ctx, doc.URI())
	defer end()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if !e.docs.IsCurrent(doc) {
		return // a newer version has its own check, or the document closed
	}
	c, err := e.check(ctx, doc)
	if err != nil {
		if ctx.Err() == nil && !e.bg.Done() {
			e.notify.LogMessage(ctx, MessageWarning, fmt.Sprintf("diagnostics for %s: %v", doc.URI(), err))
		}
		return
	}
	if c == nil || !e.docs.IsCurrent(doc) {
		return
	}
	if doc.IsPython() {
		e.prefetchValues(ctx, doc)
	}
	diags := append([]Diagnostic(nil), c.diags...)
	for _, p := range e.notes {
		diags = append(diags, p.Notes(doc)...)
	}
	diags = boundPublished(diags, MaxPublishedDiagnostics, doc.Path())
	if err := e.notify.PublishDiagnostics(ctx, doc, diags); err != nil && !e.bg.Done() {
		e.notify.LogMessage(ctx, MessageWarning, err.Error())
	}
}

// prefetchValues starts reading, on the default target, the values of
// the config modules a document's flags belong to, so that hovers on them
// never wait for the target to import torch.
func (e *Engine) prefetchValues(ctx context.Context, doc *Snapshot) {
	s, err := e.session("")
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

// republishDiagnostics checks every open document again and publishes the
// results: the target, its torch, trust or the connection changed.
func (e *Engine) republishDiagnostics() {
	if !e.notify.Capabilities().Diagnostics {
		return
	}
	for _, doc := range e.docs.All() {
		e.bg.Go(func() { e.publishDiagnostics(doc) })
	}
}

// CodeActions offers the quick fixes of the diagnostics at rng, and the
// repro commands on torch.compile calls and threading diagnostics.
func (e *Engine) CodeActions(ctx context.Context, doc *Snapshot, rng Range, only []string) ([]CodeAction, error) {
	c, err := e.check(ctx, doc)
	if err != nil || c == nil {
		return nil, err
	}
	var actions []CodeAction
	wantQuickFix := kindWanted(only, KindQuickFix)
	for i, diag := range c.diags {
		if !overlaps(diag.Range, rng) || !wantQuickFix {
			continue
		}
		for _, fix := range c.fixes[i] {
			edits := make([]TextEdit, 0, len(fix.Edits))
			for _, ed := range fix.Edits {
				edits = append(edits, TextEdit{Range: api.RangeOf(ed.Span), NewText: ed.NewText})
			}
			actions = append(actions, CodeAction{
				Title:       fix.Title,
				Kind:        KindQuickFix,
				Diagnostics: []Diagnostic{diag},
				Edits:       map[string][]TextEdit{doc.URI(): edits},
				Preferred:   fix.Preferred,
			})
		}
	}
	if doc.IsPython() {
		actions = append(actions, e.runs.CodeActions(doc, rng, c.diags, only)...)
	}
	actions = append(actions, e.links.CodeActions(doc, rng, only)...)
	return actions, nil
}

func kindWanted(only []string, kind string) bool {
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

// overlaps reports whether two ranges share a position (touching counts,
// so a cursor at either end of a diagnostic gets its fixes).
func overlaps(a, b Range) bool {
	return !before(a.End, b.Start) && !before(b.End, a.Start)
}

func before(p, q Position) bool {
	return p.Line < q.Line || (p.Line == q.Line && p.Column < q.Column)
}

// MaxPublishedDiagnostics is the most diagnostics published for one
// document version. A generated or pasted file can hold a finding on every
// line: 150,000 of them made one 37.6 MB publishDiagnostics, sent again on
// every edit. torchlsp check lists them all.
const MaxPublishedDiagnostics = 1000

// boundPublished keeps at most limit diagnostics, the most severe first
// and then in document order, and adds a note at the top of the document
// that says how many were left out and where to see them all.
func boundPublished(diags []Diagnostic, limit int, path string) []Diagnostic {
	if len(diags) <= limit {
		return diags
	}
	kept := slices.Clone(diags)
	slices.SortStableFunc(kept, func(a, b Diagnostic) int {
		if c := cmp.Compare(a.Severity, b.Severity); c != 0 {
			return c // SeverityError is the smallest
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
	note := Diagnostic{
		Severity: SeverityInfo,
		Source:   "torchlsp",
		Message: fmt.Sprintf("%d more findings in this file are not shown: at most %d are published for a file, the most severe first; `torchlsp check %s` lists them all",
			len(diags)-len(kept), limit, name),
	}
	return append(kept, note)
}
