package server

import (
	"context"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/session"
)

// lookup resolves the name at pos in a document on the default target: the
// definition it names, and the name in the document (the hover's range).
// The definition is nil when torchlsp has nothing to say: the user's own
// names, the standard library, packages the target does not have. In a
// file of a mirrored package every name is answered from the package's
// index (navigate.go).
func (e *Engine) lookup(ctx context.Context, doc *Snapshot, pos Position) (*session.Definition, pybuf.Ref, error) {
	ms, done, err := e.mirrorFile(ctx, doc)
	defer done()
	if err != nil || ms != nil {
		if err != nil {
			return nil, pybuf.Ref{}, err
		}
		return e.navigate(ms, doc, pos)
	}
	ref, ok := refAt(doc, pos)
	kw := false
	if !ok {
		ref, kw = keywordAt(doc, pos)
	}
	if ok || kw {
		s, err := e.session("")
		if err != nil {
			return nil, ref, err
		}
		var d *session.Definition
		if kw {
			d, err = s.ResolveKeyword(ctx, ref.Qualname, ref.Keyword)
		} else {
			d, err = s.Resolve(ctx, ref.Qualname, ref.Module)
		}
		if err != nil || d != nil {
			return d, ref, err
		}
	}
	return e.navigateWorkspace(ctx, doc, pos)
}

// keywordAt returns the keyword argument named at pos, with its callee
// alias-resolved (dim in F.softmax(x, dim=-1)).
func keywordAt(doc *Snapshot, pos Position) (pybuf.Ref, bool) {
	if doc == nil {
		return pybuf.Ref{}, false
	}
	ref, ok := doc.Buffer().RefAt(pybuf.Pos{Line: pos.Line, Col: pos.Column})
	if !ok || ref.Kind != pybuf.KindKeyword || ref.Qualname == "" || ref.Keyword == "" {
		return pybuf.Ref{}, false
	}
	return ref, true
}

// refAt returns the alias-resolved name at pos in a document.
func refAt(doc *Snapshot, pos Position) (pybuf.Ref, bool) {
	if doc == nil {
		return pybuf.Ref{}, false
	}
	ref, ok := doc.Buffer().RefAt(pybuf.Pos{Line: pos.Line, Col: pos.Column})
	if !ok || ref.Qualname == "" || ref.Kind == pybuf.KindKeyword {
		return pybuf.Ref{}, false
	}
	return ref, true
}
