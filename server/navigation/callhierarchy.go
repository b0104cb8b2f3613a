package navigation

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/session"
)

// CallItem is a function, method or class (or a module, as a caller) of
// the call hierarchy.
type CallItem struct {
	Name   string
	Kind   SymbolKind
	Detail string // the qualified name
	// Location is the whole def or class statement; SelectionRange its
	// name. An editor sends the item back to ask for its calls: the path
	// and the name's start are what identify it.
	Location       api.Location
	SelectionRange api.Range
}

// CallLink is an item that calls, or is called by, another, with the
// places: for incoming calls in the caller's file, for outgoing ones in
// the file of the item asked about.
type CallLink struct {
	Item   CallItem
	Ranges []api.Range
}

// PrepareCallHierarchy is the function, method or class at pos (its
// definition, found as definition finds it) as a call hierarchy item; nil
// for anything else.
func (n *Navigator) PrepareCallHierarchy(ctx context.Context, doc *api.Snapshot, pos api.Position) ([]CallItem, error) {
	a, err := n.resolve(ctx, doc, pos, wantSymbol)
	x := a.sym
	if err != nil || x == nil {
		return nil, err
	}
	if x.sym.Kind != pyindex.KindFunction && x.sym.Kind != pyindex.KindClass {
		return nil, nil
	}
	_, byRel, _ := n.openSources(x.ps)
	return []CallItem{n.symbolItem(x, x.sym, byRel)}, nil
}

// IncomingCalls lists the functions (class bodies, modules) that call the
// item, in the package and the workspace's files (open or not), with the
// calls' places.
func (n *Navigator) IncomingCalls(ctx context.Context, item CallItem) ([]CallLink, error) {
	x, err := n.itemTarget(ctx, item)
	if err != nil || x == nil {
		return nil, err
	}
	reexports := n.reexports(ctx)
	var (
		calls         []pyindex.IncomingCall
		truncated     bool
		byRel, byPath map[string]string
	)
	err = n.overTree(ctx, &x, func(x *xrefTarget) error {
		var srcs []pyindex.Source
		srcs, byRel, byPath = n.openSources(x.ps)
		var err error
		calls, truncated, err = x.ps.Index().Callers(ctx, x.sym, pyindex.ReferenceOptions{Sources: srcs, Files: n.workspaceFiles(), Reexports: reexports})
		return err
	})
	if err != nil {
		return nil, err
	}
	if truncated {
		n.deps.Notify.LogMessage(ctx, api.MessageWarning, "torchlsp: callers of "+x.sym.Qualname+": the answer is cut at its limit")
	}
	out := make([]CallLink, 0, len(calls))
	for _, c := range calls {
		from := n.xrefLocation(x, c.From.File, c.From.Path, c.From.Span, byRel, byPath)
		it := CallItem{
			Name: c.From.Name, Kind: callerKind(c.From), Detail: c.From.Qualname,
			Location: from, SelectionRange: api.RangeOf(c.From.NameSpan),
		}
		link := CallLink{Item: it}
		for _, sp := range c.Spans {
			link.Ranges = append(link.Ranges, api.RangeOf(sp))
		}
		out = append(out, link)
	}
	return out, nil
}

// OutgoingCalls lists what the item's body calls (functions, methods
// through self and instances, classes; through module aliases too), each
// callee once, with the calls' places in the item's file.
func (n *Navigator) OutgoingCalls(ctx context.Context, item CallItem) ([]CallLink, error) {
	x, err := n.itemTarget(ctx, item)
	if err != nil || x == nil {
		return nil, err
	}
	srcs, byRel, _ := n.openSources(x.ps)
	calls, err := x.ps.Index().Callees(ctx, x.sym, srcs)
	if errors.Is(err, pyindex.ErrNotCallable) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]CallLink, 0, len(calls))
	for _, c := range calls {
		if c.To.File == "" {
			continue // a function of a user's file: the user's Python server's
		}
		link := CallLink{Item: n.symbolItem(x, c.To, byRel)}
		for _, sp := range c.Spans {
			link.Ranges = append(link.Ranges, api.RangeOf(sp))
		}
		out = append(out, link)
	}
	return out, nil
}

// itemTarget finds the definition an item the editor sent back stands
// for: a def or class of a mirrored file, by its file and its name's
// start. (nil, nil) for an item of the user's own files.
func (n *Navigator) itemTarget(ctx context.Context, item CallItem) (*xrefTarget, error) {
	path := item.Location.Path
	if path == "" {
		return nil, nil
	}
	rel, ok := remote.SiteRel(n.deps.CacheDir, path)
	if !ok {
		return nil, nil
	}
	top, _, _ := strings.Cut(rel, "/")
	top = strings.TrimSuffix(strings.TrimSuffix(top, ".pyi"), ".py")
	s, err := n.deps.Session("")
	if err != nil {
		return nil, err
	}
	// The package as it answers now: its on-demand tree while the bulk
	// mirror loads (symbolAt's rule).
	ps, answered, err := s.Answering(ctx, top, item.Detail)
	answered()
	if errors.Is(err, session.ErrNotOnTarget) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sel := item.SelectionRange.Start
	sym := pyindex.Symbol{
		Name: item.Name, Qualname: item.Detail, File: rel,
		Path: filepath.Join(ps.Mirror().SiteDir, filepath.FromSlash(rel)),
		Line: sel.Line, Col: sel.Column, Kind: pyindex.KindFunction,
	}
	if item.Kind == "class" {
		sym.Kind = pyindex.KindClass
	}
	return &xrefTarget{s: s, ps: ps, sym: sym}, nil
}

// symbolItem is a definition of the package as an item: its statement
// from its name's line to its last line.
func (n *Navigator) symbolItem(x *xrefTarget, sym pyindex.Symbol, byRel map[string]string) CallItem {
	sel := api.NameRange(sym.Line, sym.Col, sym.Name)
	whole := api.Range{Start: api.Position{Line: sym.Line}, End: sel.End}
	if sym.EndLine > sym.Line {
		whole.End = api.Position{Line: sym.EndLine}
	}
	loc := api.Location{URI: byRel[sym.File], Range: whole}
	if sym.File != "" {
		m := x.ps.Mirror()
		local := filepath.Join(m.SiteDir, filepath.FromSlash(sym.File))
		loc.Path = n.answerPath(x.s.Spec().Name, m, local)
		loc.TargetPath = m.TargetPath(local)
	}
	return CallItem{Name: sym.Name, Kind: symbolKind(sym), Detail: sym.Qualname, Location: loc, SelectionRange: sel}
}

func callerKind(c pyindex.Caller) SymbolKind {
	switch c.Kind {
	case pyindex.KindModule:
		return "module"
	case pyindex.KindClass:
		return "class"
	}
	if inClassBody(pyindex.Symbol{Qualname: c.Qualname, Module: moduleOfQualname(c)}) {
		return "method"
	}
	return "function"
}

// moduleOfQualname is the module part of a caller's qualified name: its
// qualified name less the path of scopes in it.
func moduleOfQualname(c pyindex.Caller) string {
	if c.File == "" {
		return ""
	}
	stem := strings.TrimSuffix(strings.TrimSuffix(c.File, ".pyi"), ".py")
	stem = strings.TrimSuffix(stem, "/__init__")
	return strings.ReplaceAll(stem, "/", ".")
}
