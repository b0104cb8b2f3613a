package pyindex

import (
	"context"
	"fmt"
	"sort"

	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// The call hierarchy over the index: who calls a definition is its
// references that are calls, grouped by the function around each; what a
// function calls is every call in its body whose callee DefinitionAt
// resolves (f(), self.method() through the class, mod.f() through a
// module alias).

// maxCallees bounds the calls Callees resolves in one body: a
// 200,000-line function answers with its first ones.
const maxCallees = 20000

// IncomingCall is a function (or class body, or module) that calls a
// definition, with the places it does.
type IncomingCall struct {
	From  Caller
	Spans []syntax.Span // the callee's name at each call, in From's file
}

// Callers finds the calls of a definition (a function, or a class:
// instantiations) among its references, grouped by the function, class
// body or module each stands in, in the order of the references.
func (ix *Index) Callers(ctx context.Context, def Symbol, opts ReferenceOptions) ([]IncomingCall, bool, error) {
	opts.IncludeDeclaration = false
	refs, err := ix.References(ctx, def, opts)
	if err != nil {
		return nil, false, err
	}
	var out []IncomingCall
	byCaller := map[callerKey]int{}
	for _, r := range refs.Refs {
		if !r.Call {
			continue
		}
		k := callerKey{r.Caller.Path, r.Caller.Span.Start, r.Caller.NameSpan.Start}
		i, ok := byCaller[k]
		if !ok {
			i = len(out)
			byCaller[k] = i
			out = append(out, IncomingCall{From: r.Caller})
		}
		out[i].Spans = append(out[i].Spans, r.Span)
	}
	return out, refs.Truncated, nil
}

type callerKey struct {
	path        string
	start, name syntax.Pos
}

// OutgoingCall is a function or class a definition's body calls, with the
// places it does.
type OutgoingCall struct {
	// To is the callee, described without its full docstring.
	To    Symbol
	Spans []syntax.Span // the callee's name at each call, in the caller's file
}

// Callees lists what the body of def (a function, or a class body)
// calls, each callee once with every place, in order of first call.
// Calls inside nested functions and classes are theirs, not def's; a
// decorator is a call. def is in a file of the index (then a Source among
// sources whose Rel is that file is used as it is, else the file is read
// and parsed), or in one of sources (File "", Path set). Callees whose
// definition the text does not settle are left out.
func (ix *Index) Callees(ctx context.Context, def Symbol, sources []Source) ([]OutgoingCall, error) {
	var src *Source
	for i := range sources {
		s := &sources[i]
		if s.Table != nil && (def.File != "" && s.Rel == def.File || def.File == "" && s.Path == def.Path) {
			src = s
			break
		}
	}
	if src != nil {
		return ix.calleesIn(ctx, *src, def)
	}
	f := ix.fileByRel(def.File)
	if f == nil {
		return nil, fmt.Errorf("pyindex: callees of %s: %w: its file is not in the index", def.Qualname, ErrNotFound)
	}
	text, err := ix.source(f)
	if err != nil {
		return nil, fmt.Errorf("pyindex: callees of %s: %w", def.Qualname, err)
	}
	defer ix.budget.Take(len(text))()
	p, err := ix.parsers.Get()
	if err != nil {
		return nil, fmt.Errorf("pyindex: callees of %s: %w", def.Qualname, err)
	}
	defer ix.parsers.Put(p)
	var out []OutgoingCall
	p.Visit(text, func(t *syntax.Tree) {
		out, err = ix.calleesIn(ctx, ix.fileSource(f, pyscope.New(t)), def)
	})
	return out, err
}

// fileByRel is the file of the index at rel, or nil.
func (ix *Index) fileByRel(rel string) *fileState {
	i := sort.Search(len(ix.files), func(i int) bool { return ix.files[i].rel >= rel })
	if i < len(ix.files) && ix.files[i].rel == rel {
		return ix.files[i]
	}
	return nil
}

// calleesIn walks the body of def in src.
func (ix *Index) calleesIn(ctx context.Context, src Source, def Symbol) ([]OutgoingCall, error) {
	tr := src.Table.Tree()
	stmt := defAt(src.Table, def.Line, def.Col)
	if stmt < 0 {
		return nil, fmt.Errorf("pyindex: callees of %s: %w", def.Qualname, ErrNotCallable)
	}
	body := tr.Child(stmt, syntax.FieldBody)
	if body < 0 {
		return nil, nil
	}
	n := ix.navigator(src)
	var out []OutgoingCall
	byKey := map[siteKey]int{}
	calls := 0
	end := tr.End(body)
	for i := body; int(i) < tr.Len() && tr.Start(i) < end; i++ {
		switch tr.Kind(i) {
		case syntax.KindFunctionDefinition, syntax.KindClassDefinition:
			// A nested def or class: its body calls for it.
			i = subtreeEnd(tr, i) - 1
			continue
		case syntax.KindCall, syntax.KindDecorator:
		default:
			continue
		}
		id := calleeName(tr, i)
		if id < 0 {
			continue
		}
		if calls++; calls > maxCallees {
			break
		}
		if calls%256 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("pyindex: callees of %s: %w", def.Qualname, ctx.Err())
		}
		occ, ok := src.Table.OccurrenceOf(id)
		if !ok {
			continue
		}
		n.reset()
		e, err := n.definition(occ)
		if err != nil {
			continue
		}
		k, _ := n.keyOf(e)
		if k == (siteKey{}) {
			// A place outside the index: the source's own function.
			p := syntax.Pos{}
			if e.node >= 0 {
				p = tr.StartPos(e.node)
			}
			k = siteKey{rel: "\x00" + src.Path, line: p.Line, col: p.Col}
		}
		j, seen := byKey[k]
		if !seen {
			d, ok := n.describeWith(e, false)
			if !ok || d.Symbol.Kind != KindFunction && d.Symbol.Kind != KindClass {
				byKey[k] = -1
				continue
			}
			j = len(out)
			byKey[k] = j
			out = append(out, OutgoingCall{To: d.Symbol})
		}
		if j >= 0 {
			out[j].Spans = append(out[j].Spans, tr.Span(id))
		}
	}
	return out, nil
}

// defAt is the def or class statement whose name starts at line and
// col of the source, or -1.
func defAt(tab *pyscope.Table, line, col int) int32 {
	tr := tab.Tree()
	off, ok := syntax.NewLines(tr.Src()).Offset(tr.Src(), syntax.Pos{Line: line, Col: col})
	if !ok {
		return -1
	}
	occ, ok := tab.OccurrenceAt(off)
	if !ok || tr.Start(occ.Node) != off || tr.Field(occ.Node) != syntax.FieldName {
		return -1
	}
	if p := tr.Parent(occ.Node); tr.Kind(p) == syntax.KindFunctionDefinition || tr.Kind(p) == syntax.KindClassDefinition {
		return p
	}
	return -1
}

// subtreeEnd is the first node after n's subtree, in pre-order.
func subtreeEnd(tr *syntax.Tree, n int32) int32 {
	for x := n; x >= 0; x = tr.Parent(x) {
		if s := tr.NextSibling(x); s >= 0 {
			return s
		}
	}
	return int32(tr.Len())
}

// calleeName is the identifier naming what call (or decorator) n calls:
// f of f(...), the attribute of x.f(...); -1 for anything else (a call's
// result called, a subscript).
func calleeName(tr *syntax.Tree, n int32) int32 {
	var x int32
	if tr.Kind(n) == syntax.KindCall {
		x = tr.Child(n, syntax.FieldFunction)
	} else {
		x = tr.FirstChild(n)
		if tr.Kind(x) == syntax.KindCall {
			return -1 // @f(...): the call itself is visited
		}
	}
	switch tr.Kind(x) {
	case syntax.KindIdentifier:
		return x
	case syntax.KindAttribute:
		if a := tr.Child(x, syntax.FieldAttribute); a >= 0 && tr.Kind(a) == syntax.KindIdentifier {
			return a
		}
	}
	return -1
}
