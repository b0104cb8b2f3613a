// Package wsmodel is the model of the user's whole workspace that the
// checks read: every Python file's definitions, imports, assignments,
// calls, compile sites and thread starts (File, read once per version of
// a file), linked across files by module (Model), so that a verdict can
// follow a compiled callable from the module that makes it to the thread
// that calls it in another. It never imports or runs the user's code:
// everything comes from the one parse of each file.
package wsmodel

import (
	"crypto/sha256"
	"slices"
	"strings"
	"sync"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// ExprKind says what an expression of interest is.
type ExprKind uint8

// The expressions the model follows.
const (
	// ExprName is a name or a chain of names: m, self.net, engine.predict.
	ExprName ExprKind = iota + 1
	// ExprCall is a call; Text is its callee's chain.
	ExprCall
	// ExprCompiled is a compile site of the file; Compile indexes it.
	ExprCompiled
	// ExprSubscript is an element of a container: models[k]; Text is the
	// container's chain.
	ExprSubscript
)

// Expr is an expression the model can follow, as plain data. Line is
// where it is read (0-based): a name read there sees the assignments of
// its own scope made before that line (m.state_dict() before
// m = torch.compile(m) is the plain module's).
type Expr struct {
	Kind    ExprKind
	Text    string
	Compile int
	Line    int
}

// Def is a function, method or class of the file.
type Def struct {
	// Qual is the name within the module: f, Engine, Engine.predict,
	// outer.inner.
	Qual string
	// Class is, for a method, the Qual of its class; else "".
	Class   string
	IsClass bool
	Line    int
	// Bases are a class's bases as written.
	Bases []string
	// Compiled is the index of the compile site that decorates the
	// function, or -1.
	Compiled int
	// Params are a function's parameters that take positional arguments,
	// in order (self included for a method).
	Params []string
}

// Binding is an assignment: Target (a name, self.attr, or a container's
// elements as name[]) takes Value in Scope ("" for the module).
type Binding struct {
	Scope, Target string
	Value         Expr
}

// Return is a value a function returns.
type Return struct {
	Scope string
	Value Expr
}

// Call is a call in Scope.
type Call struct {
	Scope  string
	Callee Expr
	// Args are its positional arguments (Kind 0 where one cannot be
	// followed), Kwargs its keyword arguments that can be.
	Args   []Expr
	Kwargs []Kwarg
	Span   pybuf.Span // the callee as written
	// Saved says the call's value is written out: passed to a call whose
	// name says it saves (torch.save, save_file, accelerator.save), at
	// once or through a name of its scope.
	Saved bool
}

// Kwarg is a keyword argument.
type Kwarg struct {
	Name  string
	Value Expr
}

// Line is the call's first line (0-based).
func (c *Call) Line() int { return c.Span.Start.Line }

// Text is the call as a message shows it: its callee and "(…)".
func (c *Call) Text() string {
	if c.Callee.Kind == ExprSubscript {
		return c.Callee.Text + "[…](…)"
	}
	return c.Callee.Text + "(…)"
}

// Compile is a compile site: where the compiled code's settings are
// decided.
type Compile struct {
	Span         pybuf.Span
	CUDAGraphs   bool
	ThreadHazard bool
	Why          string
	// OrigModLine is diagnose.CompileFact's: the target's line that keeps
	// a compiled module as _orig_mod, or -1.
	OrigModLine int
	// Module and Forward are diagnose.CompileFact's: the site compiles a
	// module, or a module's forward, whose parameters require grad.
	Module, Forward bool
}

// Line is the site's line (0-based).
func (c Compile) Line() int { return c.Span.Start.Line }

// Start is a place that runs callables in another thread.
type Start struct {
	Scope string
	How   string
	Line  int
	// Span is the start's callee as written (Thread, pool.map), where a
	// start that runs compiled code itself is flagged.
	Span pybuf.Span
	Many bool
	// Targets are the callables it runs; Lambda are the calls of a lambda
	// it runs, followed as if the start made them. Args are the
	// positional arguments the start passes them (Thread's args, submit's
	// after the callable).
	Targets []Expr
	Lambda  []Expr
	Args    []Expr
}

// File is what one version of a Python file tells the model.
type File struct {
	Path string // absolute, local
	// Hash is the SHA-256 of the text the facts were read from.
	Hash   [32]byte
	Module string // dotted, from the file's place under a root; "" if none
	// Package is the module relative imports are resolved against.
	Package  string
	Imports  map[string]string // local name → absolute qualified name
	Defs     []Def
	Bindings []Binding
	Returns  []Return
	Calls    []Call
	Compiles []Compile
	Starts   []Start
	// ConfigWrites are the file's writes of torch's config flags, as the
	// diagnose facts read them.
	ConfigWrites []diagnose.ConfigWriteFact
	// Captures says the file calls a manual CUDA graph capture
	// (torch.cuda.graph, make_graphed_callables), by any name its imports
	// give it: a call Calls does not keep.
	Captures bool

	// indexOnce guards scopes, the index made on first use (index).
	indexOnce sync.Once
	scopes    *fileScopes
}

// Extract reads a file's facts from its parse. module is the file's
// module name ("" when it lies under no root); facts are the diagnose
// package's facts of the same buffer. tops, when known, are the
// workspace's top-level module names: a call of what another package
// gives (torch.cat, np.zeros) or of a builtin leads to no code of the
// workspace, and is not kept.
func Extract(path, module string, buf *pybuf.Buffer, facts diagnose.Facts, tops map[string]bool) *File {
	f := &File{Path: path, Module: module, Package: packageOf(path, module), Imports: map[string]string{}}
	t := buf.Tree()
	if t == nil {
		return f
	}
	f.Hash = sha256.Sum256(t.Src())
	if t.Len() == 0 {
		return f
	}
	for _, imp := range buf.Imports() {
		if imp.Name == "*" || imp.Name == "" {
			continue
		}
		q := imp.Qualname
		if imp.Relative {
			q = resolveRelative(f.Package, imp.Module, imp.Imported)
		}
		if q != "" {
			f.Imports[imp.Name] = q
		}
	}
	x := &extractor{t: t, f: f, compiles: map[int32]int{}, starts: map[int32][]int{}, decorates: map[int32]int{}, texts: map[string]string{},
		savedNodes: map[int32]bool{}, savedNames: map[string]map[string]bool{}}
	for _, c := range facts.Compiles {
		i := len(f.Compiles)
		f.Compiles = append(f.Compiles, Compile{Span: c.Span, CUDAGraphs: c.CUDAGraphs, ThreadHazard: c.ThreadHazard, Why: c.Why, OrigModLine: c.OrigModLine,
			Module: c.Module, Forward: c.Forward})
		x.compiles[c.Node] = i
		if c.Decorates {
			if def := decoratedDef(t, c.Node); def >= 0 {
				x.decorates[def] = i
			}
		}
	}
	f.ConfigWrites = slices.Clip(facts.ConfigWrites)
	for i, s := range facts.Starts {
		x.starts[s.Node] = append(x.starts[s.Node], i)
	}
	x.facts = facts
	x.walk(t.Root(), "", "")
	x.savedThroughNames()
	f.Captures = hasCapture(f)
	if tops != nil {
		x.dropOutsideCalls(tops)
	}
	// The facts are kept as long as the file's version is: no slack.
	f.Defs, f.Bindings, f.Returns = slices.Clone(f.Defs), slices.Clone(f.Bindings), slices.Clone(f.Returns)
	return f
}

// decoratedDef is the definition a decorator's expression decorates, or -1.
func decoratedDef(t *syntax.Tree, n int32) int32 {
	for p := t.Parent(n); p >= 0; p = t.Parent(p) {
		switch t.Kind(p) {
		case syntax.KindDecoratedDefinition:
			return t.Child(p, syntax.FieldDefinition)
		case syntax.KindDecorator, syntax.KindCall, syntax.KindArgumentList, syntax.KindAttribute:
			continue
		}
		return -1
	}
	return -1
}

// packageOf is the package a file's relative imports start from: the
// module itself for a package's __init__.py, else its parent.
func packageOf(path, module string) string {
	if module == "" {
		return ""
	}
	if strings.HasSuffix(path, "/__init__.py") {
		return module
	}
	if i := strings.LastIndexByte(module, '.'); i >= 0 {
		return module[:i]
	}
	return ""
}

// resolveRelative resolves "from ..a import b" in package pkg.
func resolveRelative(pkg, from, imported string) string {
	dots := len(from) - len(strings.TrimLeft(from, "."))
	rest := from[dots:]
	base := pkg
	for i := 1; i < dots; i++ {
		j := strings.LastIndexByte(base, '.')
		if j < 0 {
			if base == "" {
				return ""
			}
			base = ""
			continue
		}
		base = base[:j]
	}
	parts := []string{}
	for _, p := range []string{base, rest, imported} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 || base == "" && pkg != "" && dots > 1 && rest == "" {
		return ""
	}
	return strings.Join(parts, ".")
}

type extractor struct {
	t         *syntax.Tree
	f         *File
	facts     diagnose.Facts
	compiles  map[int32]int     // compile site node → index in f.Compiles
	starts    map[int32][]int   // start node → indexes in facts.Starts
	decorates map[int32]int     // decorated definition → its compile site
	texts     map[string]string // intern's
	// savedNodes are calls whose value a save call is passed; savedNames,
	// by scope, the names it is passed.
	savedNodes map[int32]bool
	savedNames map[string]map[string]bool
}

func join(scope, name string) string {
	if scope == "" {
		return name
	}
	return scope + "." + name
}

// walk visits n in scope (a def's Qual, "" for the module); class is the
// Qual of the class whose body holds n directly, else "".
func (x *extractor) walk(n int32, scope, class string) {
	t := x.t
	if is, ok := x.starts[n]; ok {
		for _, i := range is {
			x.start(x.facts.Starts[i], scope)
		}
	}
	switch t.Kind(n) {
	case syntax.KindFunctionDefinition:
		name := t.Text(t.Child(n, syntax.FieldName))
		if name == "" {
			return
		}
		q := join(scope, name)
		d := Def{Qual: q, Class: class, Line: t.StartPos(n).Line, Compiled: -1, Params: x.params(n)}
		if i, ok := x.decorates[n]; ok {
			d.Compiled = i
		}
		x.f.Defs = append(x.f.Defs, d)
		if body := t.Child(n, syntax.FieldBody); body >= 0 {
			x.walk(body, q, "")
		}
		return
	case syntax.KindClassDefinition:
		name := t.Text(t.Child(n, syntax.FieldName))
		if name == "" {
			return
		}
		q := join(scope, name)
		d := Def{Qual: q, IsClass: true, Line: t.StartPos(n).Line, Compiled: -1}
		if sup := t.Child(n, syntax.FieldSuperclasses); sup >= 0 {
			for _, b := range t.CodeChildren(sup) {
				if s := x.chain(b); s != "" {
					d.Bases = append(d.Bases, s)
				}
			}
		}
		x.f.Defs = append(x.f.Defs, d)
		if body := t.Child(n, syntax.FieldBody); body >= 0 {
			x.walk(body, q, q)
		}
		return
	case syntax.KindAssignment:
		x.assignment(n, scope)
	case syntax.KindReturnStatement:
		for _, v := range t.CodeChildren(n) {
			if e, ok := x.expr(v); ok {
				x.f.Returns = append(x.f.Returns, Return{Scope: scope, Value: e})
			}
		}
	case syntax.KindWithItem:
		// with Engine() as e: e takes the value.
		if v := t.Child(n, syntax.FieldValue); v >= 0 && t.Kind(v) == syntax.KindAsPattern {
			if al := t.Child(v, syntax.FieldAlias); al >= 0 {
				if e, ok := x.expr(t.FirstChild(v)); ok {
					x.bind(scope, x.chain(t.Unwrap(t.FirstChild(al))), e)
				}
			}
		}
	case syntax.KindCall:
		fn := t.Child(n, syntax.FieldFunction)
		if e, ok := x.callee(fn); ok {
			c := Call{Scope: scope, Callee: e, Span: t.Span(fn), Saved: x.savedNodes[n]}
			c.Args, c.Kwargs = x.arguments(n)
			x.f.Calls = append(x.f.Calls, c)
		}
		x.saves(n, fn, scope)
	}
	for c := t.FirstChild(n); c >= 0; c = t.NextSibling(c) {
		x.walk(c, scope, class)
	}
}

// assignment records what a = v, self.a = v, d[k] = v and a = {k: v}
// bind.
func (x *extractor) assignment(n int32, scope string) {
	t := x.t
	left, right := t.Child(n, syntax.FieldLeft), t.Child(n, syntax.FieldRight)
	if left < 0 || right < 0 {
		return
	}
	for t.Kind(right) == syntax.KindAssignment { // a = b = v
		right = t.Child(right, syntax.FieldRight)
		if right < 0 {
			return
		}
	}
	right = t.Unwrap(right)
	target := ""
	switch left = t.Unwrap(left); t.Kind(left) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		target = x.chain(left)
	case syntax.KindSubscript:
		if s := x.chain(t.Unwrap(t.Child(left, syntax.FieldValue))); s != "" {
			target = s + "[]"
		}
	}
	if target == "" {
		return
	}
	switch t.Kind(right) {
	case syntax.KindDictionary:
		for _, p := range t.CodeChildren(right) {
			if v := t.Child(p, syntax.FieldValue); t.Kind(p) == syntax.KindPair && v >= 0 {
				if e, ok := x.expr(v); ok {
					x.bind(scope, target+"[]", e)
				}
			}
		}
		return
	case syntax.KindList, syntax.KindTuple, syntax.KindSet:
		for _, v := range t.CodeChildren(right) {
			if e, ok := x.expr(v); ok {
				x.bind(scope, target+"[]", e)
			}
		}
		return
	case syntax.KindDictionaryComprehension, syntax.KindListComprehension:
		if body := t.Child(right, syntax.FieldBody); body >= 0 {
			v := body
			if t.Kind(body) == syntax.KindPair {
				v = t.Child(body, syntax.FieldValue)
			}
			if e, ok := x.expr(v); ok {
				x.bind(scope, target+"[]", e)
			}
		}
		return
	}
	if e, ok := x.expr(right); ok {
		x.bind(scope, target, e)
	}
}

func (x *extractor) bind(scope, target string, e Expr) {
	if target == "" {
		return
	}
	x.f.Bindings = append(x.f.Bindings, Binding{Scope: scope, Target: target, Value: e})
}

// expr describes a value expression the model can follow.
func (x *extractor) expr(n int32) (Expr, bool) {
	t := x.t
	n = t.Unwrap(n)
	if n < 0 {
		return Expr{}, false
	}
	if t.Kind(n) == syntax.KindAwait {
		return x.expr(t.FirstChild(n))
	}
	line := t.StartPos(n).Line
	if i, ok := x.compiles[n]; ok {
		return Expr{Kind: ExprCompiled, Compile: i, Line: line}, true
	}
	// torch.compile(mode=...)(f), torch._dynamo.optimize(...)(f): the
	// site is the inner call, and calling it compiles f.
	if t.Kind(n) == syntax.KindCall {
		if i, ok := x.compiles[t.Unwrap(t.Child(n, syntax.FieldFunction))]; ok {
			return Expr{Kind: ExprCompiled, Compile: i, Line: line}, true
		}
	}
	switch t.Kind(n) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		if s := x.chain(n); s != "" {
			return Expr{Kind: ExprName, Text: s, Line: line}, true
		}
	case syntax.KindSubscript:
		if s := x.chain(t.Unwrap(t.Child(n, syntax.FieldValue))); s != "" {
			return Expr{Kind: ExprSubscript, Text: s, Line: line}, true
		}
	case syntax.KindCall:
		fn := t.Unwrap(t.Child(n, syntax.FieldFunction))
		s := x.chain(fn)
		if s == "functools.partial" || s == "partial" {
			// partial(f, ...) runs f.
			if args := t.Child(n, syntax.FieldArguments); args >= 0 {
				if cs := t.CodeChildren(args); len(cs) > 0 && t.Kind(cs[0]) != syntax.KindKeywordArgument {
					return x.expr(cs[0])
				}
			}
			return Expr{}, false
		}
		if s != "" {
			return Expr{Kind: ExprCall, Text: s, Line: line}, true
		}
	}
	return Expr{}, false
}

// callee describes what a call calls: a chain of names, or an element of
// a container.
func (x *extractor) callee(n int32) (Expr, bool) {
	t := x.t
	n = t.Unwrap(n)
	if n < 0 {
		return Expr{}, false
	}
	line := t.StartPos(n).Line
	switch t.Kind(n) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		if s := x.chain(n); s != "" {
			return Expr{Kind: ExprName, Text: s, Line: line}, true
		}
	case syntax.KindSubscript:
		if s := x.chain(t.Unwrap(t.Child(n, syntax.FieldValue))); s != "" {
			return Expr{Kind: ExprSubscript, Text: s, Line: line}, true
		}
	}
	return Expr{}, false
}

// saves records what a call whose name says it saves is given: a call
// (saved at once, marked before the walk reaches it, as it lies below)
// or a name of the scope.
func (x *extractor) saves(call, fn int32, scope string) {
	t := x.t
	name := strings.ToLower(t.LastName(t.Unwrap(fn)))
	if !strings.Contains(name, "save") {
		return
	}
	args := t.Child(call, syntax.FieldArguments)
	if args < 0 {
		return
	}
	for _, a := range t.CodeChildren(args) {
		if t.Kind(a) == syntax.KindKeywordArgument {
			a = t.Child(a, syntax.FieldValue)
		}
		switch a = t.Unwrap(a); t.Kind(a) {
		case syntax.KindCall:
			x.savedNodes[a] = true
		case syntax.KindIdentifier:
			if x.savedNames[scope] == nil {
				x.savedNames[scope] = map[string]bool{}
			}
			x.savedNames[scope][t.Text(a)] = true
		}
	}
}

// savedThroughNames marks the calls whose value is bound to a name that
// a save call of the same scope is given (sd = m.state_dict();
// torch.save(sd, path)).
func (x *extractor) savedThroughNames() {
	f := x.f
	for _, b := range f.Bindings {
		if b.Value.Kind != ExprCall || !x.savedNames[b.Scope][b.Target] {
			continue
		}
		for i := range f.Calls {
			c := &f.Calls[i]
			if c.Scope == b.Scope && c.Line() == b.Value.Line && c.Callee.Text == b.Value.Text {
				c.Saved = true
			}
		}
	}
}

// builtins are Python's builtin functions and classes: a call of one
// leads to no code of the workspace unless the file binds the name.
var builtins = map[string]bool{
	"abs": true, "all": true, "any": true, "bool": true, "bytes": true, "callable": true, "dict": true, "dir": true,
	"divmod": true, "enumerate": true, "filter": true, "float": true, "format": true, "frozenset": true, "getattr": true,
	"hasattr": true, "hash": true, "id": true, "int": true, "isinstance": true, "issubclass": true, "iter": true,
	"len": true, "list": true, "map": true, "max": true, "min": true, "next": true, "object": true, "open": true,
	"ord": true, "chr": true, "print": true, "range": true, "repr": true, "reversed": true, "round": true, "set": true,
	"setattr": true, "slice": true, "sorted": true, "str": true, "sum": true, "super": true, "tuple": true, "type": true,
	"vars": true, "zip": true, "ValueError": true, "TypeError": true, "RuntimeError": true, "KeyError": true,
	"NotImplementedError": true, "AssertionError": true, "Exception": true, "IndexError": true, "AttributeError": true,
}

// dropOutsideCalls leaves out the calls that lead to no code of the
// workspace: a chain whose first name the file imports from a package
// that is not the workspace's, or a builtin the file does not bind.
// Most calls of a model's code are torch's, and keeping them would cost
// the model more memory than the workspace's source.
func (x *extractor) dropOutsideCalls(tops map[string]bool) {
	f := x.f
	bound := map[string]bool{}
	for _, d := range f.Defs {
		bound[d.Qual] = true
	}
	for _, b := range f.Bindings {
		bound[b.Target] = true
	}
	star := false
	for name := range f.Imports {
		star = star || name == "*"
	}
	outside := func(text string) bool {
		head, _, _ := strings.Cut(text, ".")
		if q, ok := f.Imports[head]; ok {
			top, _, _ := strings.Cut(q, ".")
			return !tops[top]
		}
		return builtins[head] && !bound[head] && !star
	}
	n := 0
	for i := range f.Calls {
		if c := &f.Calls[i]; c.Callee.Kind != ExprName || !outside(c.Callee.Text) {
			n++
		}
	}
	// A new array of the size kept: the one append grew holds them all.
	kept := make([]Call, 0, n)
	for _, c := range f.Calls {
		if c.Callee.Kind != ExprName || !outside(c.Callee.Text) {
			kept = append(kept, c)
		}
	}
	f.Calls = kept
}

// maxArgs bounds the arguments of a call the model keeps.
const maxArgs = 16

// params are a function definition's positional parameters.
func (x *extractor) params(def int32) []string {
	t := x.t
	ps := t.Child(def, syntax.FieldParameters)
	if ps < 0 {
		return nil
	}
	var out []string
	for _, p := range t.CodeChildren(ps) {
		name := int32(-1)
		switch t.Kind(p) {
		case syntax.KindIdentifier:
			name = p
		case syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
			name = t.Child(p, syntax.FieldName)
		case syntax.KindTypedParameter:
			name = t.FirstChild(p)
		default:
			// *args, **kwargs, / and *: no positional argument is
			// mapped past them.
			return out
		}
		if name < 0 || t.Kind(name) != syntax.KindIdentifier || len(out) >= maxArgs {
			return out
		}
		out = append(out, t.Text(name))
	}
	return out
}

// arguments are a call's positional and keyword arguments.
func (x *extractor) arguments(call int32) ([]Expr, []Kwarg) {
	t := x.t
	args := t.Child(call, syntax.FieldArguments)
	if args < 0 || t.Kind(args) != syntax.KindArgumentList {
		return nil, nil
	}
	var pos []Expr
	var kws []Kwarg
	for _, a := range t.CodeChildren(args) {
		switch t.Kind(a) {
		case syntax.KindKeywordArgument:
			name, v := t.Child(a, syntax.FieldName), t.Child(a, syntax.FieldValue)
			if e, ok := x.expr(v); ok && name >= 0 && len(kws) < maxArgs {
				kws = append(kws, Kwarg{x.intern(t.Text(name)), e})
			}
		case syntax.KindListSplat, syntax.KindDictionarySplat:
			return trimArgs(pos), kws // positions past a splat are unknown
		default:
			if len(pos) >= maxArgs {
				continue
			}
			e, _ := x.expr(a)
			pos = append(pos, e)
		}
	}
	return trimArgs(pos), kws
}

// trimArgs drops the arguments past the last that can be followed: most
// calls pass none.
func trimArgs(pos []Expr) []Expr {
	for len(pos) > 0 && pos[len(pos)-1].Kind == 0 {
		pos = pos[:len(pos)-1]
	}
	if len(pos) == 0 {
		return nil
	}
	return slices.Clip(pos)
}

// intern keeps one copy of each text of the file: names repeat.
func (x *extractor) intern(s string) string {
	if v, ok := x.texts[s]; ok {
		return v
	}
	x.texts[s] = s
	return s
}

// startArgs are the arguments a start passes its callable: Thread's and
// Timer's args=(...), or what a pool's submit, to_thread or
// run_in_executor pass after the callable.
func (x *extractor) startArgs(node int32, target int32) []Expr {
	t := x.t
	if t.Kind(node) != syntax.KindCall {
		return nil
	}
	pos, _ := x.arguments(node)
	args := t.Child(node, syntax.FieldArguments)
	if args < 0 {
		return nil
	}
	for _, a := range t.CodeChildren(args) {
		if t.Kind(a) == syntax.KindKeywordArgument && t.Text(t.Child(a, syntax.FieldName)) == "args" {
			v := t.Unwrap(t.Child(a, syntax.FieldValue))
			if k := t.Kind(v); k != syntax.KindTuple && k != syntax.KindList {
				return nil
			}
			var out []Expr
			for _, e := range t.CodeChildren(v) {
				ex, _ := x.expr(e)
				out = append(out, ex)
			}
			return out
		}
	}
	// submit(f, a, b), to_thread(f, a), run_in_executor(ex, f, a): what
	// follows the callable.
	for i, a := range t.CodeChildren(args) {
		if a == target || t.Unwrap(a) == t.Unwrap(target) {
			if i+1 <= len(pos) {
				return pos[i+1:]
			}
			return nil
		}
	}
	return nil
}

// start records a thread start found by the diagnose package.
func (x *extractor) start(s diagnose.StartFact, scope string) {
	t := x.t
	st := Start{Scope: scope, How: s.How, Line: t.StartPos(s.Node).Line, Many: s.Many}
	if t.Kind(s.Node) == syntax.KindCall {
		st.Span = t.Span(t.Child(s.Node, syntax.FieldFunction))
	}
	if s.Class >= 0 {
		// A Thread subclass runs its own run; a request handler, its
		// handle or do_GET; a servicer, its methods.
		if name := t.Text(t.Child(s.Class, syntax.FieldName)); name != "" {
			cls := join(x.scopeOf(s.Class), name)
			for _, m := range s.Methods {
				st.Targets = append(st.Targets, Expr{Kind: ExprName, Text: cls + "." + m, Line: st.Line})
			}
		}
	}
	for _, e := range s.Exprs {
		e = t.Unwrap(e)
		if t.Kind(e) == syntax.KindLambda {
			body := t.Child(e, syntax.FieldBody)
			x.lambdaCalls(body, &st)
			continue
		}
		if v, ok := x.expr(e); ok {
			if v.Kind == ExprCall {
				continue // Thread(target=make()) runs what make returns: not followed
			}
			st.Targets = append(st.Targets, v)
			// map and its kind pass elements of an iterable: not followed.
			if st.Args == nil && !strings.Contains(s.How, "map") {
				st.Args = x.startArgs(s.Node, e)
			}
		}
	}
	if len(st.Targets) > 0 || len(st.Lambda) > 0 {
		x.f.Starts = append(x.f.Starts, st)
	}
}

// scopeOf is the scope a definition stands in: the Quals of the
// functions and classes around it.
func (x *extractor) scopeOf(n int32) string {
	t := x.t
	var names []string
	for p := t.Parent(n); p >= 0; p = t.Parent(p) {
		if k := t.Kind(p); k == syntax.KindFunctionDefinition || k == syntax.KindClassDefinition {
			names = append(names, t.Text(t.Child(p, syntax.FieldName)))
		}
	}
	slices.Reverse(names)
	return strings.Join(names, ".")
}

// lambdaCalls collects the callees of the calls in a lambda's body.
func (x *extractor) lambdaCalls(n int32, st *Start) {
	t := x.t
	if n < 0 {
		return
	}
	if t.Kind(n) == syntax.KindCall {
		if e, ok := x.callee(t.Child(n, syntax.FieldFunction)); ok {
			st.Lambda = append(st.Lambda, e)
		}
	}
	for c := t.FirstChild(n); c >= 0; c = t.NextSibling(c) {
		x.lambdaCalls(c, st)
	}
}

// chain is the tree's ChainText, interned.
func (x *extractor) chain(n int32) string { return x.intern(x.t.ChainText(n)) }
