package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/pybuf"
)

// diagnosticsDelay lets a burst of keystrokes settle before checking.
const diagnosticsDelay = 150 * time.Millisecond

// checked is a document's diagnostics for one version, kept for code
// actions.
type checked struct {
	version int32
	diags   []Diagnostic
	fixes   [][]diagnose.Fix // parallel to diags
}

// Diagnostics checks a document against the target's torch: config flags,
// compile modes and options, and the threading hazards they create. It
// returns nil for documents that do not use torch.
func (e *Engine) Diagnostics(ctx context.Context, uri string) ([]Diagnostic, error) {
	c, err := e.check(ctx, uri)
	if err != nil || c == nil {
		return nil, err
	}
	return c.diags, nil
}

func (e *Engine) check(ctx context.Context, uri string) (*checked, error) {
	d := e.doc(uri)
	if d == nil {
		return nil, nil
	}
	buf, version := d.buffer(e.parsers)
	text, _ := d.snapshot()
	if !usesTorch(buf) {
		return &checked{version: version}, nil
	}
	s, err := e.session("")
	if err != nil {
		return nil, err
	}
	cat, ps, err := s.catalog(ctx)
	if errors.Is(err, ErrNotOnTarget) {
		return &checked{version: version}, nil
	}
	if err != nil {
		return nil, err
	}
	found := diagnose.Check(buf, text, cat, diagnose.Options{SiteDir: ps.mirror.SiteDir, Env: s.spec.Env})
	c := &checked{version: version}
	for _, fd := range found {
		diag := Diagnostic{
			Range:    spanRange(fd.Span),
			Severity: severityOf(fd.Severity),
			Code:     fd.Code,
			Source:   "torchlsp",
			Message:  fd.Message,
		}
		for _, rel := range fd.Related {
			local := filepath.Join(ps.mirror.SiteDir, filepath.FromSlash(rel.File))
			diag.Related = append(diag.Related, RelatedInfo{
				Location: Location{Path: local, TargetPath: ps.mirror.TargetPath(local),
					Range: Range{Start: Position{Line: rel.Line}, End: Position{Line: rel.Line}}},
				Message: fmt.Sprintf("%s:%d: %s", rel.File, rel.Line+1, rel.Message),
			})
		}
		c.diags = append(c.diags, diag)
		c.fixes = append(c.fixes, fd.Fixes)
	}
	d.mu.Lock()
	if d.version == version {
		d.checked = c
	}
	d.mu.Unlock()
	return c, nil
}

// usesTorch reports whether a buffer imports torch at all; others get no
// diagnostics and cost nothing.
func usesTorch(buf *pybuf.Buffer) bool {
	for _, imp := range buf.Imports() {
		if topPackage(imp.Qualname) == "torch" {
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

// scheduleDiagnostics checks a document shortly after it changed and
// publishes the result, if the client can show diagnostics.
func (e *Engine) scheduleDiagnostics(uri string) {
	pub, ok := e.notify.get().(DiagnosticsPublisher)
	if !ok {
		return
	}
	d := e.doc(uri)
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
	}
	version := d.version
	d.timer = time.AfterFunc(diagnosticsDelay, func() {
		e.goBackground(func() {
			ctx, cancel := context.WithTimeout(e.ctx, 5*time.Minute)
			defer cancel()
			c, err := e.check(ctx, uri)
			if err != nil {
				if e.ctx.Err() == nil {
					e.notify.LogMessage(ctx, MessageWarning, fmt.Sprintf("diagnostics for %s: %v", uri, err))
				}
				return
			}
			if c == nil || c.version != version || e.doc(uri) != d {
				return // a newer version is on its way
			}
			diags := append(append([]Diagnostic(nil), c.diags...), e.reproNotesFor(uri)...)
			if err := pub.PublishDiagnostics(ctx, uri, version, diags); err != nil && e.ctx.Err() == nil {
				e.notify.LogMessage(ctx, MessageWarning, err.Error())
			}
		})
	})
	d.mu.Unlock()
}

// CodeActions offers the quick fixes of the diagnostics at rng, and the
// repro commands on torch.compile calls and threading diagnostics.
func (e *Engine) CodeActions(ctx context.Context, uri string, rng Range, only []string) ([]CodeAction, error) {
	d := e.doc(uri)
	if d == nil {
		return nil, nil
	}
	d.mu.Lock()
	c := d.checked
	current := c != nil && c.version == d.version
	d.mu.Unlock()
	if !current {
		var err error
		if c, err = e.check(ctx, uri); err != nil || c == nil {
			return nil, err
		}
	}
	var actions []CodeAction
	wantQuickFix := kindWanted(only, "quickfix")
	for i, diag := range c.diags {
		if !overlaps(diag.Range, rng) || !wantQuickFix {
			continue
		}
		for _, fix := range c.fixes[i] {
			edits := make([]TextEdit, 0, len(fix.Edits))
			for _, ed := range fix.Edits {
				edits = append(edits, TextEdit{Range: spanRange(ed.Span), NewText: ed.NewText})
			}
			actions = append(actions, CodeAction{
				Title:       fix.Title,
				Kind:        "quickfix",
				Diagnostics: []Diagnostic{diag},
				Edits:       map[string][]TextEdit{uri: edits},
				Preferred:   fix.Preferred,
			})
		}
	}
	actions = append(actions, e.reproActions(uri, d, rng, c, only)...)
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
