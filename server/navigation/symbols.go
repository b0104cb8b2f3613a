package navigation

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/session"
)

// MaxWorkspaceSymbols bounds a workspace symbol answer.
const MaxWorkspaceSymbols = 100

// SymbolKind says what a symbol is, in words: "module", "class",
// "method", "function", "variable", "constant" or "field".
type SymbolKind string

// SymbolInfo is a symbol a workspace symbol query found.
type SymbolInfo struct {
	Name string
	Kind SymbolKind
	// Container is the qualified name around it ("torch._inductor.
	// cudagraph_trees" for get_obj); "" for a top-level module.
	Container string
	Location  api.Location // the symbol's name
}

// DocumentSymbol is an item of a document's outline.
type DocumentSymbol struct {
	Name string
	Kind SymbolKind
	// Range is the whole statement, SelectionRange the name.
	Range, SelectionRange api.Range
	Children              []DocumentSymbol
}

// WorkspaceSymbols finds the symbols whose names match query in the
// default target's mirrored packages (torch and the target's listed
// packages, from their on-demand trees while their mirrors load; the
// others already loaded) and in
// the workspace's own files, open or not (every definition of their
// outlines, as documentSymbol lists them): ranked exact, then prefix, then
// substring, then fuzzy (the query's letters in order), at most
// MaxWorkspaceSymbols.
func (n *Navigator) WorkspaceSymbols(ctx context.Context, query string) ([]SymbolInfo, error) {
	q := pyindex.NewSymbolQuery(query)
	type hit struct {
		pyindex.SymbolHit
		loc api.Location
	}
	var hits []hit
	s, err := n.deps.Session("")
	if err != nil {
		return nil, err
	}
	for _, ps := range n.symbolPackages(ctx, s) {
		found, err := ps.Index().Symbols(ctx, q, MaxWorkspaceSymbols)
		if err != nil && ps.Partial() && errors.Is(err, pyindex.ErrTextSearch) {
			// The target's search failed, or the query would read much
			// of the package on demand: the complete mirror answers.
			if ps, err = s.Package(ctx, ps.Name()); err == nil {
				found, err = ps.Index().Symbols(ctx, q, MaxWorkspaceSymbols)
			}
		}
		if err != nil {
			return nil, err
		}
		for _, h := range found {
			loc := api.Location{
				Path:       n.answerPath(s.Spec().Name, ps.Mirror(), h.Symbol.Path),
				TargetPath: ps.Mirror().TargetPath(h.Symbol.Path),
				Range:      api.NameRange(h.Symbol.Line, h.Symbol.Col, h.Symbol.Name),
			}
			hits = append(hits, hit{h, loc})
		}
	}
	// The workspace's own files: each open document as it is, the others
	// from disk.
	addOutline := func(items []pyscope.OutlineItem, module, path, uri string) {
		if module == "" {
			module = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
		walkOutline(items, module, func(it pyscope.OutlineItem, container string, inClass bool) {
			r, ok := q.Rank(it.Name)
			if !ok || !q.Container(container) {
				return
			}
			sym := pyindex.Symbol{Name: it.Name, Qualname: container + "." + it.Name, Module: module, Path: path, Line: it.NameSpan.Start.Line, Kind: outlineIndexKind(it.Kind)}
			hits = append(hits, hit{pyindex.SymbolHit{Symbol: sym, Rank: r}, api.Location{URI: uri, Path: path, Range: api.RangeOf(it.NameSpan)}})
		})
	}
	for _, d := range n.deps.Documents() {
		if d.Path() == "" || n.isMirrored(d) {
			continue // the mirror's files answer from their index
		}
		module, _ := n.workspaceModule(d.Path())
		addOutline(d.Buffer().Scopes().Outline(), module, d.Path(), d.URI())
	}
	if n.deps.Workspace != nil {
		match := func(name string) bool { _, ok := q.Rank(name); return ok }
		files, err := n.deps.Workspace.Outlines(ctx, match, n.openPaths())
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			addOutline(f.Items, f.Module, f.Path, "")
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return pyindex.CompareHits(a.SymbolHit, b.SymbolHit) })
	hits = hits[:min(len(hits), MaxWorkspaceSymbols)]
	out := make([]SymbolInfo, 0, len(hits))
	for _, h := range hits {
		sym := h.Symbol
		container := strings.TrimSuffix(strings.TrimSuffix(sym.Qualname, sym.Name), ".")
		out = append(out, SymbolInfo{Name: sym.Name, Kind: symbolKind(sym), Container: container, Location: h.loc})
	}
	return out, nil
}

// symbolPackages are the packages a workspace symbol query searches:
// torch and the target's listed packages, their complete mirrors waited
// for as long as ctx allows, and every other package already mirrored.
func (n *Navigator) symbolPackages(ctx context.Context, s *session.Session) []*session.Package {
	var out []*session.Package
	seen := map[string]bool{}
	for _, name := range append([]string{"torch"}, s.Spec().Packages...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		// The package as it answers now: its on-demand tree while the
		// bulk mirror loads, whose index asks the target which files
		// hold a word the query matches.
		ps, answered, err := s.Answering(ctx, name, name)
		answered()
		if err == nil && ps.Index() != nil {
			out = append(out, ps)
		} else if err != nil && !errors.Is(err, session.ErrNotOnTarget) {
			n.deps.Notify.LogMessage(ctx, api.MessageWarning, "torchlsp: symbols of "+name+": "+err.Error())
		}
	}
	for _, ps := range s.LoadedPackages() {
		if !seen[ps.Name()] && ps.Index() != nil {
			seen[ps.Name()] = true
			out = append(out, ps)
		}
	}
	slices.SortFunc(out, func(a, b *session.Package) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// isMirrored reports whether a document is a file of a mirror (or of the
// site view that links to them).
func (n *Navigator) isMirrored(d *api.Snapshot) bool {
	return d.Memo(mirrorRelKey{n.deps.CacheDir}, func() any {
		rel, _ := remote.SiteRel(n.deps.CacheDir, d.Path())
		return rel
	}).(string) != ""
}

// workspaceModule is the module a workspace file holds, from the first
// workspace folder it is in.
func (n *Navigator) workspaceModule(path string) (string, bool) {
	folders := n.deps.Folders()
	for _, root := range folders {
		if m, pkg := pyindex.ModuleName(root, path); m != "" {
			return m, pkg
		}
	}
	return "", false
}

// DocumentSymbols is the outline of a document: its classes, functions
// and methods, nested as they are, and the variables of the module and
// of class bodies. Any Python file has one; a mirrored file's is read
// from its one parse, as for any other.
func (n *Navigator) DocumentSymbols(_ context.Context, doc *api.Snapshot) ([]DocumentSymbol, error) {
	if doc == nil {
		return nil, nil
	}
	return outlineSymbols(doc.Buffer().Scopes().Outline(), false), nil
}

func outlineSymbols(items []pyscope.OutlineItem, inClass bool) []DocumentSymbol {
	out := make([]DocumentSymbol, 0, len(items))
	for _, it := range items {
		out = append(out, DocumentSymbol{
			Name: it.Name, Kind: outlineKind(it, inClass),
			Range: api.RangeOf(it.Span), SelectionRange: api.RangeOf(it.NameSpan),
			Children: outlineSymbols(it.Children, it.Kind == pyscope.BindClass),
		})
	}
	return out
}

// walkOutline calls f for every item of an outline with the qualified
// name around it.
func walkOutline(items []pyscope.OutlineItem, container string, f func(it pyscope.OutlineItem, container string, inClass bool)) {
	var walk func(items []pyscope.OutlineItem, container string, inClass bool)
	walk = func(items []pyscope.OutlineItem, container string, inClass bool) {
		for _, it := range items {
			f(it, container, inClass)
			walk(it.Children, container+"."+it.Name, it.Kind == pyscope.BindClass)
		}
	}
	walk(items, container, false)
}

func outlineKind(it pyscope.OutlineItem, inClass bool) SymbolKind {
	switch {
	case it.Kind == pyscope.BindClass:
		return "class"
	case it.Kind == pyscope.BindDef && inClass:
		return "method"
	case it.Kind == pyscope.BindDef:
		return "function"
	case inClass:
		return "field"
	case isConstantCase(it.Name):
		return "constant"
	}
	return "variable"
}

func outlineIndexKind(k pyscope.BindKind) pyindex.Kind {
	switch k {
	case pyscope.BindClass:
		return pyindex.KindClass
	case pyscope.BindDef:
		return pyindex.KindFunction
	}
	return pyindex.KindVariable
}

// symbolKind is what an index symbol is, in words: a function defined in
// a class body is a method.
func symbolKind(sym pyindex.Symbol) SymbolKind {
	switch sym.Kind {
	case pyindex.KindModule:
		return "module"
	case pyindex.KindClass:
		return "class"
	case pyindex.KindFunction:
		if inClassBody(sym) {
			return "method"
		}
		return "function"
	case pyindex.KindParameter:
		return "variable"
	}
	if inClassBody(sym) {
		return "field"
	}
	if isConstantCase(sym.Name) {
		return "constant"
	}
	return "variable"
}

// inClassBody says whether a symbol's qualified name puts it in a class
// body (the index keeps module and class bodies; a function's locals are
// "f.<locals>.x").
func inClassBody(sym pyindex.Symbol) bool {
	path := strings.TrimPrefix(sym.Qualname, sym.Module+".")
	if sym.Module == "" || path == sym.Qualname {
		return false
	}
	i := strings.LastIndexByte(path, '.')
	return i > 0 && !strings.HasSuffix(path[:i], "<locals>")
}

func isConstantCase(name string) bool {
	letters := false
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z':
			return false
		case c >= 'A' && c <= 'Z':
			letters = true
		}
	}
	return letters && len(name) > 1
}
