package navigation

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Cross-references (references, call hierarchy) start from a definition
// in a file of a mirrored package, found the way definition finds it, and
// search the package's complete mirror (its index's postings say which
// files to parse) and the open documents.

// xrefTarget is the definition a cross-reference request is about.
type xrefTarget struct {
	s   *session.Session
	ps  *session.Package // the package's complete mirror
	sym pyindex.Symbol
}

// symbolAt finds the definition of the name at pos of a document as its
// package's index names it (resolve's wantSymbol): in a file of a
// mirrored package (ms) from the package's index, in the user's file
// through the lookup definition uses. The package is the one answering
// now: its on-demand tree while the bulk mirror loads, whose index asks
// the target which of its unread files name the definition. (nil, nil)
// when the name is not torchlsp's to answer.
func (n *Navigator) symbolAt(ctx context.Context, ms *mirrorSource, doc *api.Snapshot, pos api.Position) (*xrefTarget, error) {
	var (
		err error
		s   *session.Session
		ps  *session.Package
		sym pyindex.Symbol
	)
	if ms != nil {
		buf := doc.Buffer()
		off, ok := buf.Lines().Offset([]byte(doc.Text()), pybuf.Pos{Line: pos.Line, Col: pos.Column})
		if !ok {
			return nil, nil
		}
		var d pyindex.Definition
		d, err = ms.ps.Index().DefinitionAt(ms.src, off)
		if errors.Is(err, pyindex.ErrNotFound) || errors.Is(err, pyindex.ErrNoName) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("definition in %s: %w", ms.rel, err)
		}
		s, ps, sym = ms.s, ms.ps, d.Symbol
		if d.InSource && ms.src.Rel == "" {
			sym.File = ms.rel // the document is a copy of the mirror's file
		}
	} else {
		var d *session.Definition
		d, _, err = n.lookup(ctx, nil, doc, pos)
		if err != nil || d == nil || d.Missing || d.LocalPath == "" || d.DefName == "" {
			return nil, err
		}
		if s, err = n.deps.Session(d.Target); err != nil {
			return nil, err
		}
		ps = d.Package
		sym = pyindex.Symbol{Name: d.DefName, Qualname: d.Qualname, File: d.RelPath(), Path: d.LocalPath, Line: d.Line, Col: d.Col}
		sym.Kind = symbolKindOf(d.Kind)
	}
	if sym.File == "" || strings.HasPrefix(sym.File, "../") {
		return nil, nil
	}
	// An on-demand tree answers too: its index asks the target which of
	// the files it has not read name the definition (pyindex.TextSearch)
	// and reads those, so a cold start's first query does not wait for
	// the bulk mirror.
	return &xrefTarget{s: s, ps: ps, sym: sym}, nil
}

// overTree runs query over *x's tree; when an on-demand tree's text
// search fails (an old or failing helper), over the complete mirror,
// waited for, and *x becomes that.
func (n *Navigator) overTree(ctx context.Context, x **xrefTarget, query func(*xrefTarget) error) error {
	err := query(*x)
	if err == nil || !errors.Is(err, pyindex.ErrTextSearch) {
		return err
	}
	whole, cerr := n.complete(ctx, *x)
	if cerr != nil {
		return errors.Join(err, cerr)
	}
	*x = whole
	return query(whole)
}

// complete is x over its package's complete mirror, waited for: what a
// query over an on-demand tree falls back on when the target's text
// search fails (pyindex.ErrTextSearch). x itself when it is complete.
func (n *Navigator) complete(ctx context.Context, x *xrefTarget) (*xrefTarget, error) {
	if !x.ps.Partial() {
		return x, nil
	}
	ps, err := x.s.Package(ctx, x.ps.Name())
	if err != nil {
		return nil, err
	}
	sym := x.sym
	sym.Path = filepath.Join(ps.Mirror().SiteDir, filepath.FromSlash(sym.File))
	return &xrefTarget{s: x.s, ps: ps, sym: sym}, nil
}

// symbolKindOf is the index's kind of a target's kind.
func symbolKindOf(kind string) pyindex.Kind {
	switch kind {
	case "module":
		return pyindex.KindModule
	case "class", "type":
		return pyindex.KindClass
	case "function", "method", "builtin", "method_descriptor", "builtin_function_or_method":
		return pyindex.KindFunction
	case "parameter":
		return pyindex.KindParameter
	}
	return pyindex.KindVariable
}

// openSources are the open documents as sources of a query over package
// ps: its files (each standing for the mirror's file, which it is) and
// the user's own files; documents of other packages are left out. byRel
// maps the package's open files to their documents' URIs, byPath the
// user's.
func (n *Navigator) openSources(ps *session.Package) (srcs []pyindex.Source, byRel, byPath map[string]string) {
	byRel, byPath = map[string]string{}, map[string]string{}
	folders := n.deps.Folders()
	for _, d := range n.deps.Documents() {
		if d.Path() == "" {
			continue
		}
		rel := d.Memo(mirrorRelKey{n.deps.CacheDir}, func() any {
			rel, _ := remote.SiteRel(n.deps.CacheDir, d.Path())
			return rel
		}).(string)
		src := pyindex.Source{Path: d.Path(), Table: d.Buffer().Scopes()}
		if rel != "" {
			copyOf := filepath.Join(ps.Mirror().SiteDir, filepath.FromSlash(rel))
			if !d.Memo(sameFileKey{copyOf}, func() any { return sameFile(d.Path(), copyOf) }).(bool) {
				continue
			}
			src.Rel = rel
			src.Module, src.Package = pyindex.ModuleName(ps.Mirror().SiteDir, copyOf)
			byRel[rel] = d.URI()
		} else {
			for _, root := range folders {
				if m, pkg := pyindex.ModuleName(root, d.Path()); m != "" {
					src.Module, src.Package = m, pkg
					break
				}
			}
			byPath[d.Path()] = d.URI()
		}
		srcs = append(srcs, src)
	}
	return srcs, byRel, byPath
}

// workspaceFiles are the workspace's files that no editor has open, as a
// query's FileSource; nil when the engine gave none.
func (n *Navigator) workspaceFiles() pyindex.FileSource {
	if n.deps.Workspace == nil {
		return nil
	}
	return wsFiles{ws: n.deps.Workspace, skip: n.openPaths()}
}

// reexports is the workspace model's re-exports, nil when the engine
// has none. It waits for the model's build at most Deps.ModelWait
// (reexportWait by default): past that the answer goes without them, and
// the log says so.
func (n *Navigator) reexports(ctx context.Context) pyindex.Reexports {
	if n.deps.Reexports == nil {
		return nil
	}
	limit := n.deps.ModelWait
	if limit <= 0 {
		limit = reexportWait
	}
	start := time.Now()
	r := n.deps.Reexports(ctx, limit)
	if r == nil && time.Since(start) >= limit && ctx.Err() == nil && n.deps.Notify != nil {
		n.deps.Notify.LogMessage(ctx, api.MessageInfo, fmt.Sprintf("references: the workspace model was not built within %v; names the workspace's own modules re-export from torch are left out of this answer", limit))
	}
	return r
}

// reexportWait is how long a reference query waits for the workspace
// model by default (built in the background when the first document is
// checked; from its cache in tens of milliseconds).
const reexportWait = 5 * time.Second

// wsFiles asks the workspace for its files but those skip names.
type wsFiles struct {
	ws   Workspace
	skip func(string) bool
}

func (w wsFiles) Mentioning(ctx context.Context, names []string) ([]pyindex.File, error) {
	return w.ws.Mentioning(ctx, names, w.skip)
}

// openPaths says whether a path is an open document's: its snapshot
// stands for the file, as it is named and with its links followed.
func (n *Navigator) openPaths() func(string) bool {
	open := map[string]bool{}
	for _, d := range n.deps.Documents() {
		if d.Path() == "" {
			continue
		}
		open[d.Path()] = true
		if real := d.Memo(realPathKey{}, func() any { p, _ := filepath.EvalSymlinks(d.Path()); return p }).(string); real != "" {
			open[real] = true
		}
	}
	return func(p string) bool { return open[p] }
}

// realPathKey memoizes, per document version, its path with links
// followed.
type realPathKey struct{}

// xrefLocation is a place of a query's answer as a Location: a file of the
// package (rel set; the open document's URI when it is open) or a user's
// open file.
func (n *Navigator) xrefLocation(x *xrefTarget, rel, path string, span syntax.Span, byRel, byPath map[string]string) api.Location {
	r := api.RangeOf(span)
	if rel == "" {
		return api.Location{URI: byPath[path], Path: path, Range: r}
	}
	m := x.ps.Mirror()
	local := filepath.Join(m.SiteDir, filepath.FromSlash(rel))
	return api.Location{
		URI: byRel[rel], Path: n.answerPath(x.s.Spec().Name, m, local),
		TargetPath: m.TargetPath(local), Range: r,
	}
}

// answerPath is the one local path every answer names for a file of a
// package's mirror: the file seen through the site directory when the
// editor's Python server reads it (both servers then name the same
// file), else the mirror's file (which on-demand answers name too:
// ondemand.go).
func (n *Navigator) answerPath(target string, m *remote.MirrorTree, local string) string {
	if p, ok := n.deps.SitePath(target, m, local); ok {
		return p
	}
	return local
}
