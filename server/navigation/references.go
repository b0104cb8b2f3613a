package navigation

import (
	"context"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// References lists the places that name what is at pos. For a config
// flag: its definition (when asked), every place the target's torch reads
// it (the gate scan's sites) and its uses in the workspace's files, open
// or not. For any other name whose definition is in a mirrored package
// (a function, class, method, module-level name, module, parameter):
// every place in that package and in the workspace's files (the open
// documents as they are, the others from disk: workspacefiles.go) whose
// name lands on the same definition, through import aliases, re-exports
// and star imports. It returns nil for names torchlsp does not answer
// for.
func (n *Navigator) References(ctx context.Context, doc *api.Snapshot, pos api.Position, includeDecl bool) ([]api.Location, error) {
	a, err := n.resolve(ctx, doc, pos, wantSymbol)
	if err != nil {
		return nil, err
	}
	if ft := a.flag; ft != nil {
		var out []api.Location
		if includeDecl {
			out = append(out, n.flagLocation(ft))
		}
		out = append(out, n.siteLocations(ft)...)
		uses, err := n.workspaceUses(ctx, ft.cat, ft.flag)
		if err != nil {
			return nil, err
		}
		return append(out, uses...), nil
	}
	x := a.sym
	if x == nil {
		return nil, nil
	}
	reexports := n.reexports(ctx)
	var (
		res           pyindex.References
		byRel, byPath map[string]string
	)
	err = n.overTree(ctx, &x, func(x *xrefTarget) error {
		var srcs []pyindex.Source
		srcs, byRel, byPath = n.openSources(x.ps)
		opts := pyindex.ReferenceOptions{IncludeDeclaration: includeDecl, Sources: srcs, Files: n.workspaceFiles(), Reexports: reexports}
		var err error
		res, err = x.ps.Index().References(ctx, x.sym, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	if res.Truncated {
		n.deps.Notify.LogMessage(ctx, api.MessageWarning, "torchlsp: references of "+x.sym.Qualname+": the answer is cut at its limit")
	}
	out := make([]api.Location, 0, len(res.Refs))
	for _, r := range res.Refs {
		out = append(out, n.xrefLocation(x, r.File, r.Path, r.Span, byRel, byPath))
	}
	return out, nil
}
