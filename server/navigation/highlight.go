package navigation

import (
	"context"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// HighlightKind says what a place does with the name, in words: "write"
// (a binding, the definition's own name, a flag the code sets), "read",
// or "text" where that is not known (an import's name, a keyword).
type HighlightKind string

const (
	HighlightText  HighlightKind = "text"
	HighlightRead  HighlightKind = "read"
	HighlightWrite HighlightKind = "write"
)

// Highlight is a place of a document that names what the cursor is on.
type Highlight struct {
	Range api.Range
	Kind  HighlightKind
}

// DocumentHighlights lists the places of doc that name what is at pos,
// as the resolver finds it: for a config flag, each of its spellings in
// the document; for a name whose definition is in a mirrored package,
// each name of the document that lands on that definition (a reference
// query over the document alone), in a user's file as in a mirrored one.
// nil for the names torchlsp does not answer for: the editor's Python
// server highlights the user's own.
func (n *Navigator) DocumentHighlights(ctx context.Context, doc *api.Snapshot, pos api.Position) ([]Highlight, error) {
	if doc == nil || !doc.IsPython() {
		return nil, nil
	}
	a, err := n.resolve(ctx, doc, pos, wantSymbol)
	if err != nil {
		return nil, err
	}
	if ft := a.flag; ft != nil {
		var out []Highlight
		for _, r := range doc.FlagRefs(ft.cat) {
			if r.Flag != ft.flag {
				continue
			}
			kind := HighlightRead
			if r.Write {
				kind = HighlightWrite
			}
			out = append(out, Highlight{Range: api.RangeOf(r.Span), Kind: kind})
		}
		return out, nil
	}
	x := a.sym
	if x == nil {
		return nil, nil
	}
	src := n.highlightSource(doc, x, a.mirror)
	refs := x.ps.Index().ReferencesIn(x.sym, src, identAt(doc.Buffer(), pos))
	return highlights(src.Table, refs), nil
}

// highlightSource is the document as the source of a query over x's
// package: a file of that package's mirror stands for the index's file
// (its own definitions are the index's); any other file is the user's,
// its module named from the workspace folder that holds it.
func (n *Navigator) highlightSource(doc *api.Snapshot, x *xrefTarget, ms *mirrorSource) pyindex.Source {
	if ms != nil {
		src := ms.src
		if ms.ps.Name() != x.ps.Name() {
			src.Rel = "" // a file of another package: none of this index's
		}
		return src
	}
	src := pyindex.Source{Path: doc.Path(), Table: doc.Buffer().Scopes()}
	if doc.Path() == "" {
		return src
	}
	for _, root := range n.deps.Folders() {
		if m, pkg := pyindex.ModuleName(root, doc.Path()); m != "" {
			src.Module, src.Package = m, pkg
			break
		}
	}
	return src
}

// identAt is the identifier at pos, the spelling the document reaches
// the definition by there; "" when none.
func identAt(buf *pybuf.Buffer, pos api.Position) string {
	tr := buf.Tree()
	off, ok := buf.Lines().Offset(tr.Src(), pybuf.Pos{Line: pos.Line, Col: pos.Column})
	if !ok {
		return ""
	}
	occ, ok := buf.Scopes().OccurrenceAt(off)
	if !ok {
		return ""
	}
	return tr.Text(occ.Node)
}

// highlights are the places of refs in the file tab holds, each with
// what it does with the name where its role in the file says.
func highlights(tab *pyscope.Table, refs []pyindex.Reference) []Highlight {
	if len(refs) == 0 {
		return nil
	}
	tr := tab.Tree()
	want := make(map[syntax.Pos]bool, len(refs))
	for _, r := range refs {
		want[r.Span.Start] = true
	}
	role := make(map[syntax.Pos]pyscope.Occurrence, len(refs))
	for _, occ := range tab.Occurrences() {
		if p := tr.StartPos(occ.Node); want[p] {
			role[p] = occ
		}
	}
	out := make([]Highlight, 0, len(refs))
	for _, r := range refs {
		kind := HighlightText
		occ := role[r.Span.Start]
		switch {
		case r.Declaration || occ.Role == pyscope.RoleBind:
			kind = HighlightWrite
		case occ.Role == pyscope.RoleRead:
			kind = HighlightRead
		case occ.Role == pyscope.RoleAttribute:
			kind = HighlightRead
			if assignedAttribute(tr, occ.Node) {
				kind = HighlightWrite
			}
		}
		out = append(out, Highlight{Range: api.RangeOf(r.Span), Kind: kind})
	}
	return out
}

// assignedAttribute says whether the attribute name id (y of x.y) is
// assigned: x.y = …, x.y += …, or one target of a, x.y = ….
func assignedAttribute(tr *syntax.Tree, id int32) bool {
	attr := tr.Parent(id)
	if attr < 0 || tr.Kind(attr) != syntax.KindAttribute || tr.Field(id) != syntax.FieldAttribute {
		return false
	}
	target := attr
	if p := tr.Parent(attr); p >= 0 && (tr.Kind(p) == syntax.KindPatternList || tr.Kind(p) == syntax.KindTuplePattern) {
		target = p
	}
	stmt := tr.Parent(target)
	return stmt >= 0 && (tr.Kind(stmt) == syntax.KindAssignment || tr.Kind(stmt) == syntax.KindAugmentedAssignment) && tr.Field(target) == syntax.FieldLeft
}
