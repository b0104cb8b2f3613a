package navigation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/session"
)

// Navigation by the names of a file (pyindex.DefinitionAt over the
// buffer's pyscope table): every name of a mirrored file the editor
// opened, answered from the package's index with no round trip to the
// target; and, in the user's own files, the names the dotted-name lookup
// (lookup.go) leaves unanswered that lead into a mirrored package.

// mirrorSource is an open document that is a file of a mirrored package.
type mirrorSource struct {
	s   *session.Session
	ps  *session.Package
	rel string // the file under the mirror's site dir
	src pyindex.Source
}

// mirrorFile tells whether doc is a file of a mirrored package of the
// default target (in a mirror, an on-demand tree, or the site view that
// links to them) and, when it is, makes that package usable. done is to
// be called once the answer is out.
func (n *Navigator) mirrorFile(ctx context.Context, doc *api.Snapshot) (ms *mirrorSource, done func(), err error) {
	done = func() {}
	if doc == nil || doc.Path() == "" {
		return nil, done, nil
	}
	// Where a document lies does not change with its text, but it is
	// asked once per version, not per request (it follows links).
	rel := doc.Memo(mirrorRelKey{n.deps.CacheDir}, func() any {
		rel, _ := remote.SiteRel(n.deps.CacheDir, doc.Path())
		return rel
	}).(string)
	if rel == "" {
		return nil, done, nil
	}
	top, _, _ := strings.Cut(rel, "/")
	top = strings.TrimSuffix(strings.TrimSuffix(top, ".pyi"), ".py")
	s, err := n.deps.Session("")
	if err != nil {
		return nil, done, err
	}
	ps, answered, err := s.Answering(ctx, top, top)
	if errors.Is(err, session.ErrNotOnTarget) {
		answered()
		return nil, done, nil
	}
	if err != nil {
		answered()
		return nil, done, err
	}
	ms = &mirrorSource{s: s, ps: ps, rel: rel}
	ms.src = pyindex.Source{Path: doc.Path(), Table: doc.Buffer().Scopes()}
	siteDir := ps.Mirror().SiteDir
	copyOf := filepath.Join(siteDir, filepath.FromSlash(rel))
	ms.src.Module, ms.src.Package = pyindex.ModuleName(siteDir, copyOf)
	if doc.Memo(sameFileKey{copyOf}, func() any { return sameFile(doc.Path(), copyOf) }).(bool) {
		ms.src.Rel = rel
	}
	return ms, answered, nil
}

// mirrorRelKey and sameFileKey memoize, per document version, where the
// document lies in the cache and whether it is the index's copy.
type (
	mirrorRelKey struct{ cache string }
	sameFileKey  struct{ copy string }
)

func sameFile(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

// navigate answers for the name at pos of a mirrored file from its
// package's index; nil when the name is a builtin or its definition cannot
// be known without running the code.
func (n *Navigator) navigate(ms *mirrorSource, doc *api.Snapshot, pos api.Position) (*session.Definition, pybuf.Ref, error) {
	buf := doc.Buffer()
	off, ok := buf.Lines().Offset([]byte(doc.Text()), pybuf.Pos{Line: pos.Line, Col: pos.Column})
	if !ok {
		return nil, pybuf.Ref{}, nil
	}
	d, err := ms.s.DefinitionAt(ms.ps, ms.src, ms.rel, off)
	if err != nil {
		return nil, pybuf.Ref{}, fmt.Errorf("definition in %s: %w", ms.rel, err)
	}
	if d == nil {
		return nil, pybuf.Ref{}, nil
	}
	return d, nameRef(d, buf, off), nil
}

// nameRef is the name at off of a buffer, as the reference to d.
func nameRef(d *session.Definition, buf *pybuf.Buffer, off int) pybuf.Ref {
	return pybuf.Ref{Qualname: d.Qualname, Span: nameSpan(buf, off)}
}

// nameSpan is the identifier at off of a buffer.
func nameSpan(buf *pybuf.Buffer, off int) pybuf.Span {
	tab := buf.Scopes()
	occ, ok := tab.OccurrenceAt(off)
	if !ok {
		return pybuf.Span{}
	}
	return tab.Tree().Span(occ.Node)
}

// navigateWorkspace answers for a name of the user's own file that the
// dotted-name lookup does not settle (x = nn.Linear(...); x.weight, a
// keyword of a method called through an instance) when it leads into a
// package already loaded; what it finds in the workspace itself is the
// user's Python server's to answer.
func (n *Navigator) navigateWorkspace(ctx context.Context, doc *api.Snapshot, pos api.Position) (*session.Definition, pybuf.Ref, error) {
	if doc == nil {
		return nil, pybuf.Ref{}, nil
	}
	s, err := n.deps.Session("")
	if err != nil {
		return nil, pybuf.Ref{}, nil // the dotted-name lookup reported it
	}
	buf := doc.Buffer()
	off, ok := buf.Lines().Offset([]byte(doc.Text()), pybuf.Pos{Line: pos.Line, Col: pos.Column})
	if !ok {
		return nil, pybuf.Ref{}, nil
	}
	src := pyindex.Source{Path: doc.Path(), Table: buf.Scopes()}
	if doc.Path() != "" {
		folders := n.deps.Folders()
		for _, root := range folders {
			if m, pkg := pyindex.ModuleName(root, doc.Path()); m != "" {
				src.Module, src.Package = m, pkg
				break
			}
		}
	}
	for _, top := range importedPackages(buf) {
		// Only packages already answering: a name of the user's own must
		// not start mirroring every package the file imports.
		ps := s.Usable(top)
		if ps == nil {
			continue
		}
		d, err := s.DefinitionAt(ps, src, "", off)
		if err != nil || d == nil || d.InSource {
			continue
		}
		return d, nameRef(d, buf, off), nil
	}
	return nil, pybuf.Ref{}, nil
}

// importedPackages are the top-level packages a buffer imports from,
// each once, in order; relative imports name the user's own.
func importedPackages(buf *pybuf.Buffer) []string {
	var out []string
	seen := map[string]bool{}
	for _, imp := range buf.Imports() {
		if imp.Relative || imp.Module == "" {
			continue
		}
		top, _, _ := strings.Cut(imp.Module, ".")
		if !seen[top] {
			seen[top] = true
			out = append(out, top)
		}
	}
	return out
}
