package pyindex

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/conc/pool"

	"github.com/torchlsp/torchlsp/server/internal/torchtree"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// A reference query reads the postings (postings.go) for the files that
// mention the definition's name, parses each of those once (through the
// parse budget the index's build shares), and asks of every identifier of
// that name where it is defined (the navigator DefinitionAt uses): those
// that land on the definition are its references. Names that become the
// definition elsewhere (import aliases, module- or class-level
// rebindings "g = f") are searched in turn: across the package when a
// module or class binds them, in their own file otherwise.

const (
	// MaxReferences bounds the references one query gathers; past it the
	// answer is cut (References.Truncated).
	MaxReferences = 20000
	// maxAliasNames bounds the names one query searches for, the
	// definition's own included.
	maxAliasNames = 16
)

// Reference is one place that names a definition.
type Reference struct {
	// File is the file relative to the site dir; "" for a source outside
	// the index (a user's file).
	File string
	Path string      // the file on this machine
	Span syntax.Span // the identifier
	// Declaration is set for the definition's own name.
	Declaration bool
	// Call is set where the name is called: f(...), x.f(...), @f.
	Call bool
	// Caller is the function, class body or module the name stands in.
	Caller Caller
}

// Caller is the innermost function around a place (lambdas and
// comprehensions are part of the function that holds them), else the
// class whose body holds it, else the module.
type Caller struct {
	Kind     Kind // KindFunction, KindClass or KindModule
	Name     string
	Qualname string
	File     string // as Reference.File
	Path     string
	// Span is the whole def or class statement, decorators included (the
	// whole file for a module); NameSpan its name (the file's start for
	// a module).
	Span, NameSpan syntax.Span
}

// ReferenceOptions adjusts References.
type ReferenceOptions struct {
	// IncludeDeclaration keeps the definition's own name among the
	// answers.
	IncludeDeclaration bool
	// Sources are files searched as they are (the editor's open
	// documents): one whose Rel is set stands for that file of the index,
	// the others (a user's files) are searched besides the index's.
	Sources []Source
	// Files are more files outside the index (a workspace's files that
	// are not open), asked for each round's names; nil for none.
	Files FileSource
	// Reexports resolves the names that modules outside the index (the
	// user's) import from the index, so that a file importing one of
	// them from such a module names the index's definition; nil for
	// none.
	Reexports Reexports
}

// Reexports knows the modules outside the index that import names of
// it: the user's pkg/util.py saying `from torch.x import f` re-exports
// torch.x.f as pkg.util.f, and `from pkg.util import f` elsewhere in the
// workspace names torch.x.f.
type Reexports interface {
	// Reexport is the qualified name of the index's that module's name
	// is bound to by imports (followed through the other modules outside
	// the index); ok false when it binds none.
	Reexport(module, name string) (qualname string, ok bool)
}

// FileSource gives a reference query the files outside the index that
// may name what it looks for (a workspace's files on disk).
type FileSource interface {
	// Mentioning lists the files whose text may name one of names: a
	// file left out must name none of them.
	Mentioning(ctx context.Context, names []string) ([]File, error)
}

// File is a file of a FileSource.
type File interface {
	// Visit reads and parses the file and calls f with it as a Source
	// (Rel ""), whose table f must not keep; a file that can no longer
	// be read is not visited, and that is no error.
	Visit(ctx context.Context, f func(Source)) error
}

// References is the answer of a reference query.
type References struct {
	Refs []Reference // by file, then position
	// Files is how many files were parsed and searched.
	Files int
	// Truncated is set when more than MaxReferences were found, or the
	// names to search for passed maxAliasNames: the answer is partial.
	Truncated bool
}

// siteKey identifies a definition by where it stands in the index.
type siteKey struct {
	rel       string
	line, col int
}

// References finds every place in the index's files (and in
// opts.Sources) whose name is the definition def: the definition's
// symbol as DefinitionAt, Resolve or Symbols describe it, in a file of the
// index. It stops when ctx ends.
func (ix *Index) References(ctx context.Context, def Symbol, opts ReferenceOptions) (References, error) {
	if def.File == "" || def.Name == "" {
		return References{}, fmt.Errorf("pyindex: references of %s: %w: not a place in the index", def.Qualname, ErrNotFound)
	}
	q := &refQuery{
		ix: ix, key: siteKey{def.File, def.Line, def.Col}, opts: opts,
		global: map[string]bool{def.Name: true}, sources: map[string]Source{},
	}
	for _, s := range opts.Sources {
		if s.Table == nil {
			continue
		}
		if s.Rel != "" {
			q.sources[s.Rel] = s
		} else {
			q.outside = append(q.outside, s)
		}
	}
	round := []string{def.Name}
	for len(round) > 0 {
		if err := ctx.Err(); err != nil {
			return References{}, fmt.Errorf("pyindex: references of %s: %w", def.Qualname, err)
		}
		next, err := q.round(ctx, round)
		if err != nil {
			return References{}, fmt.Errorf("pyindex: references of %s: %w", def.Qualname, err)
		}
		round = next
	}
	slices.SortFunc(q.out.Refs, func(a, b Reference) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Span.Start.Line, b.Span.Start.Line), cmp.Compare(a.Span.Start.Col, b.Span.Start.Col))
	})
	q.out.Refs = slices.CompactFunc(q.out.Refs, func(a, b Reference) bool { return a.Path == b.Path && a.Span == b.Span })
	if len(q.out.Refs) > MaxReferences || q.found.Load() > MaxReferences {
		q.out.Refs, q.out.Truncated = q.out.Refs[:min(len(q.out.Refs), MaxReferences)], true
	}
	return q.out, nil
}

// refQuery is one reference query.
type refQuery struct {
	ix      *Index
	key     siteKey
	opts    ReferenceOptions
	sources map[string]Source // open documents that are files of the index, by Rel
	outside []Source          // open documents outside the index

	mu     sync.Mutex // guards global and out
	global map[string]bool
	out    References
	// found counts the references gathered, to stop past MaxReferences.
	found atomic.Int64
}

// round searches the files that mention names (new to the query) and
// returns the names found to be the definition too, searched next.
func (q *refQuery) round(ctx context.Context, names []string) ([]string, error) {
	files, err := q.ix.filesMentioning(ctx, names)
	if err != nil {
		return nil, err
	}
	// An open document of the index is searched as it is: whether it
	// names the query is its own text's to say.
	files = slices.DeleteFunc(files, func(f *fileState) bool { _, open := q.sources[f.rel]; return open })
	var open []Source
	for _, s := range q.sources {
		if s.mentions(names) {
			open = append(open, s)
		}
	}
	open = append(open, q.outside...)
	var more []File
	if q.opts.Files != nil {
		var err error
		if more, err = q.opts.Files.Mentioning(ctx, names); err != nil {
			return nil, err
		}
	}
	p := pool.New().WithContext(ctx).WithMaxGoroutines(buildWorkers()).WithCancelOnError()
	var found []string
	var foundMu sync.Mutex // guards found
	collect := func(refs []Reference, aliases []string) {
		q.mu.Lock()
		q.out.Files++
		if len(q.out.Refs) <= MaxReferences {
			q.out.Refs = append(q.out.Refs, refs...)
		}
		q.mu.Unlock()
		foundMu.Lock()
		found = append(found, aliases...)
		foundMu.Unlock()
	}
	for _, f := range files {
		p.Go(func(ctx context.Context) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return q.scanFile(f, names, collect)
		})
	}
	for _, s := range open {
		p.Go(func(ctx context.Context) error {
			collect(q.scan(s, names)) // a user's file's aliases stay in it
			return nil
		})
	}
	for _, f := range more {
		p.Go(func(ctx context.Context) error {
			if q.found.Load() > MaxReferences {
				return nil // the answer is cut anyway
			}
			return f.Visit(ctx, func(s Source) { collect(q.scan(s, names)) })
		})
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var next []string
	for _, n := range found {
		if q.global[n] {
			continue
		}
		if len(q.global) >= maxAliasNames {
			q.out.Truncated = true
			break
		}
		q.global[n] = true
		next = append(next, n)
	}
	return next, nil
}

// scanFile parses a file of the index and searches it.
func (q *refQuery) scanFile(f *fileState, names []string, collect func([]Reference, []string)) error {
	src, err := q.ix.source(f)
	if err != nil {
		return nil // a file that cannot be read names nothing
	}
	defer q.ix.budget.Take(len(src))()
	p, err := q.ix.parsers.Get()
	if err != nil {
		return err
	}
	defer q.ix.parsers.Put(p)
	p.Visit(src, func(t *syntax.Tree) {
		collect(q.scan(q.ix.fileSource(f, pyscope.New(t)), names))
	})
	return nil
}

// source reads a file of the index: a mirror's file, read as the cache is
// (torchtree.ReadFile).
func (ix *Index) source(f *fileState) ([]byte, error) {
	if ix.read != nil {
		return ix.read(f.rel)
	}
	return torchtree.ReadFile(ix.abs(f))
}

// mentions reports whether the source holds an identifier among names.
func (s Source) mentions(names []string) bool {
	tr := s.Table.Tree()
	for _, occ := range s.Table.Occurrences() {
		text := tr.Bytes(occ.Node)
		for _, n := range names {
			if string(text) == n {
				return true
			}
		}
	}
	return false
}

// fileSource is a file of the index as a Source, with its table.
func (ix *Index) fileSource(f *fileState, tab *pyscope.Table) Source {
	pkg := strings.HasSuffix(f.rel, "/__init__.py") || strings.HasSuffix(f.rel, "/__init__.pyi")
	return Source{Module: f.module, Package: pkg, Path: ix.abs(f), Rel: f.rel, Table: tab}
}

// scan searches one source for the names; aliases are the names that
// its module or classes bind to the definition, to search everywhere.
func (q *refQuery) scan(src Source, names []string) (refs []Reference, aliases []string) {
	n := q.ix.navigator(src)
	n.reexports = q.opts.Reexports
	tr := src.Table.Tree()
	occs := src.Table.Occurrences()
	todo := slices.Clone(names)
	seen := map[string]bool{}
	for _, name := range names {
		seen[name] = true
	}
	for len(todo) > 0 && len(seen) <= maxAliasNames {
		name := []byte(todo[0])
		todo = todo[1:]
		for _, occ := range occs {
			if !bytes.Equal(tr.Bytes(occ.Node), name) {
				continue
			}
			if q.found.Load() > MaxReferences {
				return refs, aliases // the answer is cut anyway
			}
			if !q.isDefinition(n, occ) {
				continue
			}
			pos := tr.StartPos(occ.Node)
			decl := src.Rel == q.key.rel && pos.Line == q.key.line && pos.Col == q.key.col
			if !decl || q.opts.IncludeDeclaration {
				q.found.Add(1)
				refs = append(refs, Reference{
					File: src.Rel, Path: src.Path, Span: tr.Span(occ.Node), Declaration: decl,
					Call: isCallee(tr, occ.Node), Caller: n.caller(occ.Scope),
				})
			}
			if decl {
				continue
			}
			alias, global := n.aliasAt(occ)
			if alias == "" || seen[alias] {
				continue
			}
			seen[alias] = true
			todo = append(todo, alias)
			// A user's file's aliases are names other files can reach only
			// through re-exports.
			if global && (src.Rel != "" || q.opts.Reexports != nil) {
				aliases = append(aliases, alias)
			}
		}
	}
	return refs, aliases
}

// isDefinition reports whether occ is a name of the query's definition.
func (q *refQuery) isDefinition(n *navigator, occ pyscope.Occurrence) bool {
	n.reset()
	e, err := n.definition(occ)
	if err != nil {
		return false
	}
	k, ok := n.keyOf(e)
	return ok && k == q.key
}

// reset readies a navigator for its next question: the lookups of the
// last one do not count against it (the classes' orders stay known).
func (n *navigator) reset() {
	n.r.chain = n.r.chain[:0]
	n.r.depth, n.r.steps = 0, 0
	clear(n.r.active)
}

// keyOf is where entity e is defined, when that is a place of the index's
// files (the source's own included when it is one).
func (n *navigator) keyOf(e entity) (siteKey, bool) {
	switch {
	case e.node >= 0:
		if n.src.Rel == "" {
			return siteKey{}, false
		}
		p := n.tree.StartPos(e.node)
		return siteKey{n.src.Rel, p.Line, p.Col}, true
	case e.t.site != nil:
		s := e.t.site
		if s.file == nil {
			if n.src.Rel == "" {
				return siteKey{}, false
			}
			return siteKey{n.src.Rel, int(s.line), int(s.col)}, true
		}
		return siteKey{s.file.rel, int(s.line), int(s.col)}, true
	case e.t.b != nil:
		return siteKey{e.t.file.rel, int(e.t.b.line), int(e.t.b.col)}, true
	case e.t.mod != nil:
		f := e.t.mod.py
		if f == nil {
			f = e.t.mod.pyi
		}
		if f == nil {
			return siteKey{}, false
		}
		return siteKey{f.rel, 0, 0}, true
	}
	return siteKey{}, false
}

// aliasAt is the name an occurrence of the definition gives it anew: the
// alias of an import (from m import f as g, import a.b as c), or the
// target of a plain rebinding whose value it ends (g = f, g = m.f).
// global is set when a module or class binds it, so that other files can
// name it.
func (n *navigator) aliasAt(occ pyscope.Occurrence) (name string, global bool) {
	tr, tab := n.tree, n.tab
	switch occ.Role {
	case pyscope.RoleImported:
		if occ.Binding < 0 {
			return "", false
		}
		bd := tab.Binding(occ.Binding)
		if bd.Name == tr.Text(occ.Node) {
			return "", false
		}
		return bd.Name, tab.Scope(bd.Scope).Kind != pyscope.ScopeFunction
	case pyscope.RoleModule:
		d := tr.Parent(occ.Node)
		if tr.Kind(d) != syntax.KindDottedName || lastIdentifier(tr, d) != occ.Node {
			return "", false
		}
		ai := tr.Parent(d)
		if tr.Kind(ai) != syntax.KindAliasedImport {
			return "", false
		}
		alias := tr.Child(ai, syntax.FieldAlias)
		if alias < 0 {
			return "", false
		}
		return n.boundBy(alias)
	case pyscope.RoleRead, pyscope.RoleAttribute:
		x := occ.Node
		if occ.Role == pyscope.RoleAttribute {
			x = tr.Parent(x)
		}
		for p := tr.Parent(x); p >= 0 && tr.Kind(p) == syntax.KindParenthesizedExpression; p = tr.Parent(x) {
			x = p
		}
		a := tr.Parent(x)
		if tr.Kind(a) != syntax.KindAssignment || tr.Field(x) != syntax.FieldRight {
			return "", false
		}
		left := tr.Child(a, syntax.FieldLeft)
		if tr.Kind(left) != syntax.KindIdentifier {
			return "", false
		}
		return n.boundBy(left)
	}
	return "", false
}

// boundBy is the name identifier id binds, and whether a module or class
// binds it.
func (n *navigator) boundBy(id int32) (string, bool) {
	o, ok := n.tab.OccurrenceOf(id)
	if !ok || o.Binding < 0 {
		return "", false
	}
	bd := n.tab.Binding(o.Binding)
	k := n.tab.Scope(bd.Scope).Kind
	return bd.Name, k == pyscope.ScopeModule || k == pyscope.ScopeClass
}

func lastIdentifier(tr *syntax.Tree, n int32) int32 {
	last := int32(-1)
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		if tr.Kind(c) == syntax.KindIdentifier {
			last = c
		}
	}
	return last
}

// isCallee reports whether identifier id is what a call calls (f in f(),
// the attribute in x.f()) or a decorator names (@f, @x.f, @f(...)).
func isCallee(tr *syntax.Tree, id int32) bool {
	x := id
	if p := tr.Parent(x); p >= 0 && tr.Kind(p) == syntax.KindAttribute && tr.Field(x) == syntax.FieldAttribute {
		x = p
	}
	p := tr.Parent(x)
	switch tr.Kind(p) {
	case syntax.KindCall:
		return tr.Field(x) == syntax.FieldFunction
	case syntax.KindDecorator:
		return true
	}
	return false
}

// caller describes the function, class or module a place in scope s of
// the source belongs to.
func (n *navigator) caller(s int32) Caller {
	tab, tr := n.tab, n.tree
	for ; s > 0; s = tab.Scope(s).Parent {
		if k := tab.Scope(s).Kind; k == pyscope.ScopeFunction || k == pyscope.ScopeClass {
			break
		}
	}
	c := Caller{File: n.src.Rel, Path: n.src.Path}
	if s <= 0 {
		c.Kind, c.Name, c.Qualname = KindModule, lastName(n.src.Module), n.src.Module
		if c.Name == "" {
			c.Name = strings.TrimSuffix(filepath.Base(n.src.Path), filepath.Ext(n.src.Path))
		}
		if root := tr.Root(); root >= 0 {
			c.Span = tr.Span(root)
			c.Span.Start = syntax.Pos{}
		}
		return c
	}
	sc := tab.Scope(s)
	c.Kind, c.Name = KindFunction, sc.Name
	if sc.Kind == pyscope.ScopeClass {
		c.Kind = KindClass
	}
	c.Qualname = n.scopeQualname(s)
	stmt := sc.Node
	if p := tr.Parent(stmt); p >= 0 && tr.Kind(p) == syntax.KindDecoratedDefinition {
		stmt = p
	}
	c.Span = tr.Span(stmt)
	if name := tr.Child(sc.Node, syntax.FieldName); name >= 0 {
		c.NameSpan = tr.Span(name)
	}
	return c
}

// scopeQualname names scope s of the source as Python's __qualname__
// does, after the module's name.
func (n *navigator) scopeQualname(s int32) string {
	var parts []string
	for i := s; i > 0; i = n.tab.Scope(i).Parent {
		sc := n.tab.Scope(i)
		switch {
		case i == s:
			parts = append(parts, sc.Name)
		case sc.Kind == pyscope.ScopeClass:
			parts = append(parts, sc.Name)
		case sc.Kind == pyscope.ScopeFunction:
			parts = append(parts, sc.Name+".<locals>")
		case sc.Kind == pyscope.ScopeLambda:
			parts = append(parts, "<lambda>.<locals>")
		}
	}
	q := n.src.Module
	for i := len(parts) - 1; i >= 0; i-- {
		q = joinName(q, parts[i])
	}
	return q
}

// ErrNotCallable is wrapped by the error of Callees for a place that is no
// function or class.
var ErrNotCallable = errors.New("not a function or class")
