package navigation

import (
	"context"
	"errors"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/session"
)

// at is what stands at a position of a document: a config flag, a
// definition with its package, or nothing (the zero at).
type at struct {
	flag     *flagTarget // a config flag, named in any spelling
	flagSpan pybuf.Span
	def      *session.Definition // else the definition the name leads to (wantDefinition)
	ref      pybuf.Ref           // and the name in the document: a hover's range
	sym      *xrefTarget         // or that definition as its package's index names it (wantSymbol)
	mirror   *mirrorSource       // the document as a file of a mirrored package; nil for the user's own
}

// want says what a request needs of a definition.
type want int

const (
	// wantDefinition: the definition as hover and definition show it.
	wantDefinition want = iota
	// wantSymbol: the index's symbol in the package's tree (its complete
	// mirror, or its on-demand tree while that loads), for the queries
	// over every file (references, the call hierarchy).
	wantSymbol
)

// resolve says what is at pos of doc, for every request: a config flag
// first (in any spelling), else the definition of the name there, found
// in a mirrored file from its package's index, in the user's own file
// through the dotted name and its imports.
func (n *Navigator) resolve(ctx context.Context, doc *api.Snapshot, pos api.Position, w want) (at, error) {
	ft, span, err := n.flagAt(ctx, doc, pos)
	switch {
	case err != nil && !errors.Is(err, session.ErrCatalog):
		return at{}, err // the target is unreachable: do not try it twice
	case err == nil && ft != nil:
		return at{flag: ft, flagSpan: span}, nil
	}
	ms, done, err := n.mirrorFile(ctx, doc)
	defer done()
	if err != nil {
		return at{}, err
	}
	if w == wantSymbol {
		x, err := n.symbolAt(ctx, ms, doc, pos)
		return at{sym: x, mirror: ms}, err
	}
	d, ref, err := n.lookup(ctx, ms, doc, pos)
	return at{def: d, ref: ref}, err
}

// DefinitionAt is the definition the name at pos of doc leads to, as
// hover renders it, and the name in the document; nil when torchlsp has
// nothing to say. A config flag is not a definition here.
func (n *Navigator) DefinitionAt(ctx context.Context, doc *api.Snapshot, pos api.Position) (*session.Definition, pybuf.Ref, error) {
	ms, done, err := n.mirrorFile(ctx, doc)
	defer done()
	if err != nil {
		return nil, pybuf.Ref{}, err
	}
	return n.lookup(ctx, ms, doc, pos)
}

// lookup resolves the name at pos in a document on the default target: the
// definition it names, and the name in the document (the hover's range).
// The definition is nil when torchlsp has nothing to say: the user's own
// names, the standard library, packages the target does not have. In a
// file of a mirrored package (ms) every name is answered from the
// package's index (navigate.go).
func (n *Navigator) lookup(ctx context.Context, ms *mirrorSource, doc *api.Snapshot, pos api.Position) (*session.Definition, pybuf.Ref, error) {
	if ms != nil {
		return n.navigate(ms, doc, pos)
	}
	ref, ok := refAt(doc, pos)
	kw := false
	if !ok {
		ref, kw = keywordAt(doc, pos)
	}
	if ok || kw {
		s, err := n.deps.Session("")
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
	return n.navigateWorkspace(ctx, doc, pos)
}

// keywordAt returns the keyword argument named at pos, with its callee
// alias-resolved (dim in F.softmax(x, dim=-1)).
func keywordAt(doc *api.Snapshot, pos api.Position) (pybuf.Ref, bool) {
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
func refAt(doc *api.Snapshot, pos api.Position) (pybuf.Ref, bool) {
	if doc == nil {
		return pybuf.Ref{}, false
	}
	ref, ok := doc.Buffer().RefAt(pybuf.Pos{Line: pos.Line, Col: pos.Column})
	if !ok || ref.Qualname == "" || ref.Kind == pybuf.KindKeyword {
		return pybuf.Ref{}, false
	}
	return ref, true
}
