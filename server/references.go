package server

import (
	"context"
	"errors"

	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/session"
)

// References lists the places that name what is at pos. For a config
// flag: its definition (when asked), every place the target's torch reads
// it (the gate scan's sites) and its uses in open documents. For any
// other name whose definition is in a mirrored package (a function,
// class, method, module-level name, module, parameter): every place in
// that package and in the open documents whose name lands on the same
// definition, through import aliases, re-exports and star imports. It
// returns nil for names torchlsp does not answer for.
func (e *Engine) References(ctx context.Context, doc *Snapshot, pos Position, includeDecl bool) ([]Location, error) {
	ft, _, err := e.flagAt(ctx, doc, pos)
	switch {
	case err != nil && !errors.Is(err, session.ErrCatalog):
		return nil, err
	case err == nil && ft != nil:
		var out []Location
		if includeDecl {
			out = append(out, e.flagLocation(ft))
		}
		out = append(out, e.siteLocations(ft)...)
		return append(out, e.workspaceUses(ft.cat, ft.flag)...), nil
	}
	x, err := e.xrefAt(ctx, doc, pos)
	if err != nil || x == nil {
		return nil, err
	}
	srcs, byRel, byPath := e.openSources(x.ps)
	res, err := x.ps.Index().References(ctx, x.sym, pyindex.ReferenceOptions{IncludeDeclaration: includeDecl, Sources: srcs})
	if err != nil {
		return nil, err
	}
	if res.Truncated {
		e.notify.LogMessage(ctx, MessageWarning, "torchlsp: references of "+x.sym.Qualname+": the answer is cut at its limit")
	}
	out := make([]Location, 0, len(res.Refs))
	for _, r := range res.Refs {
		out = append(out, e.xrefLocation(x, r.File, r.Path, r.Span, byRel, byPath))
	}
	return out, nil
}
