package pyindex

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/internal/torchtree"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// maxDepth bounds how many bindings one resolution may pass through.
const maxDepth = 48

// errCycle marks a resolution that went round in circles; it is not
// covered up by falling back to an import statement.
var errCycle = fmt.Errorf("%w: import cycle", ErrNotFound)

// target is what a resolution step arrived at: a module, or a binding in
// one of its files.
type target struct {
	mod  *module
	file *fileState // file holding b; nil when the target is the module
	b    *binding   // nil: the module itself
	path string     // dotted path of b inside mod, e.g. "Linear.forward"
	// site, when set, is a place found by reading a file rather than
	// among the index's bindings (an attribute assigned through self, a
	// name a __getattr__ serves, a parameter); mod is its module.
	site *extSite
}

// extSite is a place in a file of the index that is no binding of it.
type extSite struct {
	file      *fileState
	line, col int32
	name      string
	kind      Kind
	text      string // a parameter as written
	owner     string // the class path it belongs to, for its qualified name
}

// resolver carries the state of one resolution.
type resolver struct {
	ix     *Index
	chain  []Hop
	active map[string]bool // lookups in progress, to stop import cycles
	depth  int
	steps  int                   // lookups made, against maxNavSteps
	mros   map[string][]classRef // method resolution orders computed
	// nav is the navigation this resolution serves, for the classes of
	// its source file; nil when resolving a dotted name.
	nav *navigator
}

func (ix *Index) newResolver() *resolver {
	return &resolver{ix: ix, active: map[string]bool{}}
}

// Resolve finds the definition of a dotted name such as
// "torch.nn.Linear.forward". It takes the longest prefix that is a module,
// then walks the remaining attributes through definitions, class members
// (and bases), imports, star imports and submodules. When a name is bound
// more than once, the last binding in the file wins, except that bindings
// under "if TYPE_CHECKING:" lose to run-time ones. A module's .py wins over
// its .pyi, which is consulted for names the .py does not bind. Errors for
// names that cannot be found wrap ErrNotFound.
func (ix *Index) Resolve(qualname string) (Resolution, error) {
	r := ix.newResolver()
	t, err := r.resolve(qualname)
	if err != nil {
		return Resolution{}, fmt.Errorf("pyindex: resolve %s: %w", qualname, err)
	}
	return Resolution{Symbol: ix.symbol(r.rebound(t)), Chain: r.chain}, nil
}

// rebound follows simple rebinding assignments from a resolved name to the
// object they bind, as Python does ("f = _registry.f" names _registry.f,
// so f's definition is its def there). A value the index cannot follow
// leaves the assignment as the definition, and so does one only a .pyi
// stub declares ("OutOfMemoryError = torch._C.OutOfMemoryError" in a .py:
// the rebinding is the line of Python source that makes the name).
func (r *resolver) rebound(t target) target {
	for i := 0; i < maxDepth && t.site == nil && t.b != nil && t.b.kind == KindVariable; i++ {
		value, through := t.b.value, false
		if !isRebinding(value) {
			// Only a class's attribute: a module's name stays where
			// Python binds it (has_torch_function = _add_docstr(…)), as
			// Python's own answer has it; a method so bound is compiled,
			// and only its stub declares it (as pyright answers).
			if !strings.Contains(t.path, ".") {
				return t
			}
			if value, through = r.passThrough(t); !through {
				return t
			}
		}
		saved := len(r.chain)
		r.chain = append(r.chain, Hop{Kind: HopAlias, Module: t.mod.name, Name: t.path, File: t.file.rel, Line: int(t.b.line), Target: value})
		nt, err := r.exprIn(t, value)
		// A stub is no answer for a name a .py binds, unless what the
		// value hands back is a compiled module's, which only its stub
		// declares (Tensor.detach = _C._add_docstr(_C._TensorBase.detach, …)).
		stubOnly := through && err == nil && nt.mod != nil && nt.mod.py == nil
		if err != nil || (nt.b != nil && nt.b.kind == KindImport) || nt.b == t.b || targetFile(nt) == nil || targetFile(nt).stub && !t.file.stub && !stubOnly {
			r.chain = r.chain[:saved]
			return t
		}
		t = nt
	}
	return t
}

// passThrough is the argument an assignment's call hands back as it is:
// in x = f(a, …) where f is declared def f(obj: T, …) -> T with T a
// TypeVar, x is a, as type checkers read it. torch binds Tensor's
// compiled methods so (detach = _C._add_docstr(_C._TensorBase.detach,
// doc)); through it, x has a's signature and return type.
func (r *resolver) passThrough(t target) (string, bool) {
	callee, arg, ok := passThroughCall(t.b.value)
	if !ok {
		return "", false
	}
	f, err := r.exprIn(t, callee)
	if err != nil || f.site != nil || f.b == nil || f.b.kind != KindFunction {
		return "", false
	}
	ret, ok := returnText(f.b.sig)
	if !ok || !syntax.IsIdentifier(ret) || firstParamAnn(f.b.sig) != ret {
		return "", false
	}
	tv, err := r.exprIn(f, ret)
	if err != nil || tv.b == nil || tv.b.kind != KindVariable || !isTypeVarCall(tv.b.value) {
		return "", false
	}
	return arg, true
}

// passThroughCall splits an assignment's value "f(a, …" (the value may be
// cut after its first argument) into the callee and the first argument,
// both dotted names.
func passThroughCall(value string) (callee, arg string, ok bool) {
	open := strings.IndexByte(value, '(')
	if open <= 0 || !isDottedName(value[:open]) {
		return "", "", false
	}
	rest := value[open+1:]
	end := strings.IndexAny(rest, ",)")
	if end < 0 {
		return "", "", false
	}
	arg = strings.TrimSpace(rest[:end])
	if !isRebinding(arg) {
		return "", "", false
	}
	return value[:open], arg, true
}

// firstParamAnn is the annotation of the first parameter of an index
// function's signature "(obj: T, …) -> R", "" when it has none.
func firstParamAnn(sig string) string {
	open := strings.IndexByte(sig, '(')
	if open < 0 {
		return ""
	}
	end := -1
	walkTopLevel(sig, open+1, func(i int, c byte, d int) bool {
		if (c == ',' && d == 0) || (c == ')' && d == -1) {
			end = i
			return false
		}
		return true
	})
	if end < 0 {
		return ""
	}
	_, ann, ok := strings.Cut(sig[open+1:end], ":")
	if !ok {
		return ""
	}
	ann, _, _ = strings.Cut(ann, "=")
	return strings.TrimSpace(ann)
}

// isTypeVarCall says whether a variable's value makes a TypeVar.
func isTypeVarCall(value string) bool {
	for _, p := range []string{"TypeVar(", "typing.TypeVar(", "typing_extensions.TypeVar("} {
		if strings.HasPrefix(value, p) {
			return true
		}
	}
	return false
}

// targetFile is the file a target is in: its binding's, its site's, or
// the module's own (the .py before the .pyi); nil for a namespace package.
func targetFile(t target) *fileState {
	switch {
	case t.site != nil:
		return t.site.file
	case t.b != nil:
		return t.file
	case t.mod.py != nil:
		return t.mod.py
	}
	return t.mod.pyi
}

// isRebinding says whether an assignment's value is a plain (dotted) name,
// which binds the same object, rather than a constant or an expression.
func isRebinding(value string) bool {
	switch value {
	case "True", "False", "None", "NotImplemented", "Ellipsis":
		return false
	}
	return isDottedName(value)
}

func (r *resolver) resolve(qualname string) (target, error) {
	parts := strings.Split(qualname, ".")
	for _, p := range parts {
		if p == "" {
			return target{}, fmt.Errorf("%w: %q is not a dotted name", ErrNotFound, qualname)
		}
	}
	i := len(parts)
	for ; i > 0; i-- {
		if _, ok := r.ix.modules[strings.Join(parts[:i], ".")]; ok {
			break
		}
	}
	if i == 0 {
		return target{}, fmt.Errorf("%w: no module %s in the index", ErrNotFound, parts[0])
	}
	// Python evaluates the name attribute by attribute: a package's own
	// binding wins over a submodule of the same name (torch.nn.utils binds
	// spectral_norm, the function, over the module spectral_norm). A name
	// that does not resolve that way is a module's dotted name plus a path
	// in it, as Symbol.Qualname is.
	for j := 1; j < i; j++ {
		if pkg := r.ix.modules[strings.Join(parts[:j], ".")]; pkg != nil && r.shadows(pkg, parts[j]) {
			saved := len(r.chain)
			if t, err := r.walk(target{mod: pkg}, parts[j:]); err == nil {
				return t, nil
			}
			r.chain = r.chain[:saved]
			break
		}
	}
	return r.walk(target{mod: r.ix.modules[strings.Join(parts[:i], ".")]}, parts[i:])
}

// walk looks names up one after the other as attributes, from t.
func (r *resolver) walk(t target, names []string) (target, error) {
	for _, name := range names {
		var err error
		if t, err = r.attr(t, name); err != nil {
			return target{}, err
		}
	}
	return t, nil
}

// shadows says whether package pkg binds name at run time to something
// other than its submodule of that name.
func (r *resolver) shadows(pkg *module, name string) bool {
	if pkg.py == nil {
		return false
	}
	b := best(r.ix.load(pkg.py).bindings, name)
	if b == nil || b.typeChecking {
		return false
	}
	sub := pkg.name + "." + name
	return b.kind != KindImport || (b.attr == "" && b.value != sub) || (b.attr != "" && b.value+"."+b.attr != sub)
}

// attr looks name up as an attribute of t.
func (r *resolver) attr(t target, name string) (target, error) {
	if t.site != nil {
		return target{}, fmt.Errorf("%w: %s has no attribute %q known to the index", ErrNotFound, t.site.name, name)
	}
	if t.b == nil {
		return r.moduleAttr(t.mod, name)
	}
	switch t.b.kind {
	case KindClass:
		return r.classAttr(t, name)
	case KindVariable:
		if isDottedName(t.b.value) {
			saved := len(r.chain)
			r.chain = append(r.chain, Hop{Kind: HopAlias, Module: t.mod.name, Name: t.path, File: t.file.rel, Line: int(t.b.line), Target: t.b.value})
			at, err := r.exprIn(t, t.b.value)
			if err == nil {
				return r.attr(at, name)
			}
			r.chain = r.chain[:saved]
		}
		// x = C(...): an instance of C, whose class (and its methods'
		// assignments through self) has the attribute.
		if ct, instance, err := r.value(t); err == nil && instance {
			if e, err := r.classMember(classRef{local: -1, t: ct}, name, true, false); err == nil && e.node < 0 {
				return e.t, nil
			}
		}
	}
	return target{}, fmt.Errorf("%w: %s.%s is a %s with no attribute %q known to the index", ErrNotFound, t.mod.name, t.path, t.b.kind, name)
}

// expr resolves a dotted expression as written in module m.
func (r *resolver) expr(m *module, dotted string) (target, error) {
	parts := strings.Split(dotted, ".")
	t := target{mod: m}
	for _, p := range parts {
		var err error
		if t, err = r.attr(t, p); err != nil {
			return target{}, err
		}
	}
	return t, nil
}

func (r *resolver) enter(key string) error {
	if r.depth >= maxDepth {
		return fmt.Errorf("%w: deeper than %d steps at %s", errCycle, maxDepth, strings.ReplaceAll(key, "\x00", "."))
	}
	if r.active[key] {
		return fmt.Errorf("%w at %s", errCycle, strings.ReplaceAll(key, "\x00", "."))
	}
	r.depth++
	r.active[key] = true
	return nil
}

func (r *resolver) leave(key string) {
	r.depth--
	delete(r.active, key)
}

// moduleAttr looks name up in module m: its bindings (star imports later
// in the file included), then its stub, then its submodules.
func (r *resolver) moduleAttr(m *module, name string) (target, error) {
	key := m.name + "\x00" + name
	if err := r.enter(key); err != nil {
		return target{}, err
	}
	defer r.leave(key)
	if t, ok, err := r.served(m, name); ok {
		return t, err
	}
	for _, f := range [2]*fileState{m.py, m.pyi} {
		if f == nil {
			continue
		}
		saved := len(r.chain)
		if f == m.pyi && m.py != nil {
			r.chain = append(r.chain, Hop{Kind: HopStub, Module: m.name, Name: name, File: f.rel, Target: m.name})
		}
		fd := r.ix.load(f)
		b := best(fd.bindings, name)
		for j := len(fd.stars) - 1; j >= 0; j-- {
			s := fd.stars[j]
			if b != nil && !b.typeChecking && (s.line < b.line || s.typeChecking) {
				break
			}
			sm := r.ix.modules[s.module]
			if sm == nil || !r.ix.exports(sm, name) {
				continue
			}
			starSaved := len(r.chain)
			r.chain = append(r.chain, Hop{Kind: HopStar, Module: m.name, Name: name, File: f.rel, Line: int(s.line), Target: s.module})
			if t, err := r.moduleAttr(sm, name); err == nil {
				return t, nil
			}
			r.chain = r.chain[:starSaved]
		}
		if b != nil {
			return r.follow(m, f, b, b.name)
		}
		r.chain = r.chain[:saved]
	}
	if sub := r.ix.modules[m.name+"."+name]; sub != nil {
		return target{mod: sub}, nil
	}
	return target{}, fmt.Errorf("%w: module %s has no attribute %q", ErrNotFound, m.name, name)
}

// follow moves from a binding to what it names: imports lead to another
// module; other bindings are the definition.
func (r *resolver) follow(m *module, f *fileState, b *binding, path string) (target, error) {
	t := target{mod: m, file: f, b: b, path: path}
	if b.kind != KindImport {
		return t, nil
	}
	hop := Hop{Kind: HopImport, Module: m.name, Name: path, File: f.rel, Line: int(b.line), Target: b.value}
	if b.attr == "" {
		if tm := r.ix.modules[b.value]; tm != nil {
			r.chain = append(r.chain, hop)
			return target{mod: tm}, nil
		}
		return t, nil // a module outside the index: the import is all we know
	}
	hop.Target = b.value + "." + b.attr
	src := r.ix.modules[b.value]
	// "from pkg import sub" names the submodule once it is imported,
	// unless pkg binds something else under that name.
	if sub := r.ix.modules[hop.Target]; sub != nil && (src == nil || !r.shadows(src, b.attr)) {
		r.chain = append(r.chain, hop)
		return target{mod: sub}, nil
	}
	if src == nil {
		return t, nil
	}
	saved := len(r.chain)
	r.chain = append(r.chain, hop)
	nt, err := r.moduleAttr(src, b.attr)
	if errors.Is(err, errCycle) {
		return target{}, err
	}
	if err != nil {
		// Bound at run time in the source module (or lost to a cycle):
		// the import statement is the best definition there is.
		r.chain = r.chain[:saved]
		return t, nil
	}
	return nt, nil
}

// classAttr looks name up among the members of class t, then the classes
// of its method resolution order.
func (r *resolver) classAttr(t target, name string) (target, error) {
	e, err := r.classMember(classRef{local: -1, t: t}, name, false, false)
	if err != nil {
		return target{}, err
	}
	return e.t, nil
}

// best picks the binding of name that wins at run time: the last one,
// preferring bindings outside "if TYPE_CHECKING:".
func best(bs []binding, name string) *binding {
	var run, tc *binding
	for i := range bs {
		b := &bs[i]
		if b.name != name {
			continue
		}
		if b.typeChecking {
			if tc == nil || later(b, tc) {
				tc = b
			}
		} else if run == nil || later(b, run) {
			run = b
		}
	}
	if run != nil {
		return run
	}
	return tc
}

func later(a, b *binding) bool {
	return a.line > b.line || a.line == b.line && a.col > b.col
}

// exports says whether "from m import *" binds name: the literal __all__
// when there is one, else every public name.
func (ix *Index) exports(m *module, name string) bool {
	f := m.py
	if f == nil {
		f = m.pyi
	}
	if f == nil {
		return false
	}
	fd := ix.load(f)
	if fd.hasAll {
		for _, n := range fd.all {
			if n == name {
				return true
			}
		}
		if !fd.allDynamic {
			return false
		}
	}
	return !strings.HasPrefix(name, "_")
}

// classBases returns the base class expressions of a superclass list,
// keyword arguments and subscripts dropped: "(Generic[T], metaclass=M)"
// gives ["Generic"].
func classBases(sig string) []string {
	if len(sig) < 2 {
		return nil
	}
	var bases []string
	for _, p := range splitTopLevel(sig[1 : len(sig)-1]) {
		if strings.ContainsAny(p, "=*") {
			continue
		}
		if i := strings.IndexByte(p, '['); i >= 0 {
			p = p[:i]
		}
		if p = strings.TrimSpace(p); isDottedName(p) && p != "object" {
			bases = append(bases, p)
		}
	}
	return bases
}

func isDottedName(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !syntax.IsIdentifier(part) {
			return false
		}
	}
	return true
}

// symbol describes a target, its docstring read back from its file.
func (ix *Index) symbol(t target) Symbol { return ix.symbolOf(t, true) }

// symbolOf describes a target; withDoc reads its full docstring from its
// file (a read of the disk).
func (ix *Index) symbolOf(t target, withDoc bool) Symbol {
	if s := t.site; s != nil {
		sym := Symbol{
			Kind: s.kind, Name: s.name, Module: t.mod.name, File: s.file.rel, Path: ix.abs(s.file), IsStub: s.file.stub,
			Line: int(s.line), Col: int(s.col), EndLine: int(s.line),
		}
		sym.Qualname = t.mod.name + "." + s.name
		if s.owner != "" {
			sym.Qualname = t.mod.name + "." + s.owner + "." + s.name
		}
		if s.kind == KindParameter {
			sym.Signature = s.text
		}
		return sym
	}
	if t.b == nil {
		s := Symbol{Kind: KindModule, Name: lastName(t.mod.name), Qualname: t.mod.name, Module: t.mod.name}
		f := t.mod.py
		if f == nil {
			f = t.mod.pyi
		}
		if f != nil {
			fd := ix.load(f)
			s.File, s.Path, s.IsStub = f.rel, ix.abs(f), f.stub
			s.DocSummary = fd.docSummary
			if withDoc {
				s.Doc = ix.readDoc(f, fd.docStart, fd.docEnd, fd.docSummary)
			}
		}
		return s
	}
	b := t.b
	s := Symbol{
		Kind: b.kind, Name: b.name, Qualname: t.mod.name + "." + t.path, Module: t.mod.name,
		File: t.file.rel, Path: ix.abs(t.file), IsStub: t.file.stub,
		Line: int(b.line), Col: int(b.col), EndLine: int(b.endLine),
		Signature: b.sig, Value: b.value, DocSummary: b.docSummary,
	}
	if b.decorators != "" {
		s.Decorators = strings.Split(b.decorators, "\n")
	}
	switch b.kind {
	case KindClass:
		s.Bases = classBases(b.sig)
	case KindImport:
		s.Signature = ""
		if b.attr != "" {
			s.Value = b.value + "." + b.attr
		}
	}
	if withDoc {
		s.Doc = ix.readDoc(t.file, b.docStart, b.docEnd, b.docSummary)
	}
	return s
}

func lastName(dotted string) string {
	return dotted[strings.LastIndexByte(dotted, '.')+1:]
}

func (ix *Index) abs(f *fileState) string {
	return filepath.Join(ix.siteDir, filepath.FromSlash(f.rel))
}

// readDoc reads a docstring back from its file; the index keeps only the
// byte range. When the file is gone, the summary is what there is. The
// file is opened as the cache's files are (torchtree.ReadFile: no link at
// its name, never blocking, a regular file), and the range, which came
// from the cache file, must lie inside it and within
// torchtree.MaxFileBytes before anything is allocated for it.
func (ix *Index) readDoc(f *fileState, start, end uint32, summary string) string {
	if end <= start {
		return ""
	}
	file, st, err := localfile.OpenNoFollow(ix.abs(f))
	if err != nil {
		return summary
	}
	defer file.Close()
	if int64(end) > st.Size() || end-start > torchtree.MaxFileBytes {
		return summary
	}
	buf := make([]byte, end-start)
	if _, err := file.ReadAt(buf, int64(start)); err != nil {
		return summary
	}
	return cleandoc(syntax.LiteralContents(buf))
}

// Members lists the attributes of a module or class, each resolved to its
// definition, sorted by name. For a module that is every name it binds
// (star imports included), its stub's names and its submodules; for a class,
// its members and those inherited from its bases. Other symbols have none.
func (ix *Index) Members(qualname string) ([]Symbol, error) {
	r := ix.newResolver()
	t, err := r.resolve(qualname)
	if err != nil {
		return nil, fmt.Errorf("pyindex: members of %s: %w", qualname, err)
	}
	names := map[string]bool{}
	switch {
	case t.b == nil:
		ix.moduleNames(t.mod, names, map[string]bool{})
	case t.b.kind == KindClass:
		ix.classNames(t, names, map[string]bool{})
	default:
		return nil, nil
	}
	out := make([]Symbol, 0, len(names))
	for name := range names {
		mt, err := ix.newResolver().attr(t, name)
		if err != nil {
			continue
		}
		sym := ix.symbol(mt)
		sym.Name = name // the name it has here, not where it was defined
		out = append(out, sym)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (ix *Index) moduleNames(m *module, names, seen map[string]bool) {
	if seen[m.name] {
		return
	}
	seen[m.name] = true
	for _, f := range [2]*fileState{m.py, m.pyi} {
		if f == nil {
			continue
		}
		fd := ix.load(f)
		for i := range fd.bindings {
			names[fd.bindings[i].name] = true
		}
		for _, s := range fd.stars {
			sm := ix.modules[s.module]
			if sm == nil {
				continue
			}
			starNames := map[string]bool{}
			ix.moduleNames(sm, starNames, seen)
			for n := range starNames {
				if ix.exports(sm, n) {
					names[n] = true
				}
			}
		}
	}
	for _, c := range ix.children[m.name] {
		names[c] = true
	}
}

func (ix *Index) classNames(t target, names, seen map[string]bool) {
	key := t.mod.name + "." + t.path
	if seen[key] || len(seen) > maxDepth {
		return
	}
	seen[key] = true
	for i := range t.b.members {
		names[t.b.members[i].name] = true
	}
	for _, base := range classBases(t.b.sig) {
		bt, err := ix.newResolver().expr(t.mod, base)
		if err == nil && bt.b != nil && bt.b.kind == KindClass {
			ix.classNames(bt, names, seen)
		}
	}
}
