package opimpl

// This file is the scanner's only contact with syntax trees: it turns one
// Python file into fileFacts (names, function definitions, calls that may
// register an op), which the rest of the package resolves without a tree.

import (
	"bytes"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// expr is the part of an argument the scanner understands.
type expr struct {
	dotted string // a name or attribute chain: "aten.add.Tensor"
	elems  []expr // a list or tuple display
	str    string // a string literal's value
	isStr  bool
	isNone bool
	isBool bool // True or False; boolean gives which
	truth  bool
}

// kwarg is one keyword argument.
type kwarg struct {
	name string
	val  expr
}

// callFact is a call whose callee is a dotted name.
type callFact struct {
	callee    string // as written: "register_meta", "decomp.register_decomposition"
	args      []expr
	kwargs    []kwarg
	line, col int // the callee's start
	endCol    int // the callee's end on line (== col when it spans lines)
	// decorates is the function this call decorates (@callee(...)), -1
	// when it is not a decorator.
	decorates int
	// applied is the first argument of an immediately applied result:
	// register_lowering(aten.clamp_min)(maximum) applies maximum.
	applied *expr
	// scope is the innermost function containing the call, -1 at module
	// level.
	scope int
	// assigned is the name a module-level assignment binds to the call's
	// value: add = register_pointwise(aten.add).
	assigned string
	// cond is the condition of the if statements the call runs under
	// ("torch.mtia._is_compiled()"), "" when it always runs.
	cond string
}

func (c *callFact) kw(name string) (expr, bool) {
	for _, k := range c.kwargs {
		if k.name == name {
			return k.val, true
		}
	}
	return expr{}, false
}

// param is a function parameter.
type param struct {
	name    string
	kwOnly  bool // after * or *args
	initial int  // positional index, -1 for keyword-only
}

// defFact is a function definition.
type defFact struct {
	name     string
	params   []param
	line     int // the def keyword's line
	first    int // first line of the definition: its first decorator, else line
	nameCol  int
	firstCol int // start of the first line's token (the decorator's callee, or the name)
	firstEnd int
	parent   int // enclosing function, -1 at module level
	// getAtenOp is set when the body calls get_aten_op: the _refs
	// reference makers of newer torch name the op after the module
	// (special_, linalg_…), older ones after the function alone.
	getAtenOp bool
}

// assignFact is a module-level assignment of a name to a call or a dotted
// name; the refs table and functools.partial registrars come from them.
type assignFact struct {
	name      string
	line, col int
	call      int  // index into calls when the value is a call, else -1
	value     expr // when the value is a dotted name
}

// fileFacts is what one file says.
type fileFacts struct {
	rel    string // slash path relative to the site dir
	module string // torch._inductor.lowering
	pkg    string // the package relative imports start from
	// aliases are names bound to dotted qualified names: imports, and
	// assignments of a dotted name (aten = torch.ops.aten). Module-level
	// bindings win over those made inside functions.
	aliases map[string]string
	defs    []defFact
	topDefs map[string]int // module-level functions by name
	calls   []callFact
	assigns []assignFact
}

// parseFile parses src, the file rel of module mod, into facts. The tree
// lives in the parser's scratch memory: the facts copy what they keep.
func parseFile(p *syntax.Parser, rel, mod string, isPkg bool, src []byte) *fileFacts {
	ff := &fileFacts{
		rel: rel, module: mod, pkg: mod,
		aliases: map[string]string{},
		topDefs: map[string]int{},
	}
	if !isPkg {
		if i := strings.LastIndexByte(mod, '.'); i >= 0 {
			ff.pkg = mod[:i]
		} else {
			ff.pkg = ""
		}
	}
	p.Visit(src, func(t *syntax.Tree) {
		root := t.Root()
		if root < 0 {
			return
		}
		w := &walker{t: t, src: src, ff: ff, nested: map[string]string{}}
		w.block(root, -1, true)
		for name, q := range w.nested {
			if _, ok := ff.aliases[name]; !ok {
				ff.aliases[name] = q
			}
		}
	})
	return ff
}

// walker walks one tree.
type walker struct {
	t      *syntax.Tree
	src    []byte
	ff     *fileFacts
	nested map[string]string // aliases bound inside functions
	conds  []string          // conditions of the enclosing if statements
}

func (w *walker) kind(n int32) syntax.Kind { return w.t.Kind(n) }

// text copies n's source: facts outlive the tree.
func (w *walker) text(n int32) string { return string(w.t.Bytes(n)) }

func (w *walker) child(n int32, f syntax.Field) int32 { return w.t.Child(n, f) }

func (w *walker) children(n int32) []int32 { return w.t.ChildList(n) }

func (w *walker) row(n int32) int { return w.t.StartPos(n).Line }

func (w *walker) col(n int32) int { return w.t.StartPos(n).Col }

// block walks the statements of a module, class or function body (and
// the compound statements inside them); top is set at module level,
// where bindings are the module's.
func (w *walker) block(n int32, scope int, top bool) {
	for _, c := range w.children(n) {
		w.stmt(c, scope, top)
	}
}

func (w *walker) stmt(n int32, scope int, top bool) {
	switch w.kind(n) {
	case syntax.KindImportStatement, syntax.KindImportFromStatement:
		w.importStmt(n, top)
	case syntax.KindFunctionDefinition:
		w.function(n, nil, scope, top)
	case syntax.KindClassDefinition:
		if b := w.child(n, syntax.FieldBody); b >= 0 && w.mayRegister(w.t.Bytes(b)) {
			// Class bodies register nothing the scanner can address, but
			// their methods may call registrars with literal ops.
			w.block(b, scope, false)
		}
	case syntax.KindDecoratedDefinition:
		w.decorated(n, scope, top)
	case syntax.KindExpressionStatement:
		for _, c := range w.children(n) {
			if w.kind(c) == syntax.KindAssignment {
				w.assignment(c, scope, top)
			} else {
				w.exprCalls(c, scope)
			}
		}
	case syntax.KindComment, syntax.KindString:
	default:
		w.compound(n, scope, top)
	}
}

// isClause reports the clauses of try and match statements, whose blocks
// keep the scope of the statement.
func isClause(k syntax.Kind) bool {
	switch k {
	case syntax.KindExceptClause, syntax.KindExceptGroupClause, syntax.KindFinallyClause, syntax.KindCaseClause:
		return true
	}
	return false
}

// compound walks a compound statement (if, try, for, with, while, match)
// or one of its clauses: blocks keep the scope, other parts are searched
// for calls.
func (w *walker) compound(n int32, scope int, top bool) {
	if w.kind(n) == syntax.KindIfStatement {
		w.ifStmt(n, scope, top)
		return
	}
	for _, c := range w.children(n) {
		switch k := w.kind(c); {
		case k == syntax.KindBlock:
			w.block(c, scope, top)
		case isClause(k):
			w.compound(c, scope, top)
		case isStatementLike(k):
			w.stmt(c, scope, top)
		default:
			w.exprCalls(c, scope)
		}
	}
}

// ifStmt walks an if statement, each branch under its condition: the
// elif's own, and for else the negation of the others.
func (w *walker) ifStmt(n int32, scope int, top bool) {
	var prev []string
	cond := func(x int32) string {
		c := w.child(x, syntax.FieldCondition)
		if c < 0 {
			return ""
		}
		w.exprCalls(c, scope)
		return strings.Join(strings.Fields(w.text(c)), " ")
	}
	under := func(cond string, body int32) {
		if body < 0 {
			return
		}
		w.conds = append(w.conds, cond)
		w.block(body, scope, top)
		w.conds = w.conds[:len(w.conds)-1]
	}
	c0 := cond(n)
	prev = append(prev, c0)
	under(c0, w.child(n, syntax.FieldConsequence))
	for _, alt := range w.children(n) {
		if w.t.Field(alt) != syntax.FieldAlternative {
			continue
		}
		switch w.kind(alt) {
		case syntax.KindElifClause:
			c := cond(alt)
			prev = append(prev, c)
			under(c, w.child(alt, syntax.FieldConsequence))
		case syntax.KindElseClause:
			under("not ("+strings.Join(prev, " or ")+")", w.child(alt, syntax.FieldBody))
		}
	}
}

func isStatementLike(k syntax.Kind) bool {
	switch k {
	case syntax.KindImportStatement, syntax.KindImportFromStatement, syntax.KindFunctionDefinition,
		syntax.KindClassDefinition, syntax.KindDecoratedDefinition, syntax.KindExpressionStatement:
		return true
	}
	return false
}

// importStmt records the names an import binds.
func (w *walker) importStmt(n int32, top bool) {
	bind := func(name, q string) {
		if top {
			w.ff.aliases[name] = q
		} else if _, ok := w.nested[name]; !ok {
			w.nested[name] = q
		}
	}
	aliased := func(c int32, from string) {
		if nm, al := w.child(c, syntax.FieldName), w.child(c, syntax.FieldAlias); nm >= 0 && al >= 0 {
			bind(w.text(al), joinDot(from, w.text(nm)))
		}
	}
	if w.kind(n) == syntax.KindImportStatement {
		for _, c := range w.children(n) {
			switch w.kind(c) {
			case syntax.KindDottedName:
				q := w.text(c)
				first, _, _ := strings.Cut(q, ".")
				bind(first, first)
			case syntax.KindAliasedImport:
				aliased(c, "")
			}
		}
		return
	}
	modNode := w.child(n, syntax.FieldModuleName)
	if modNode < 0 {
		return
	}
	var from string
	if w.kind(modNode) == syntax.KindRelativeImport {
		from = w.relative(w.text(modNode))
		if from == "" {
			return
		}
	} else {
		from = w.text(modNode)
	}
	for _, c := range w.children(n) {
		if c == modNode {
			continue
		}
		switch w.kind(c) {
		case syntax.KindDottedName:
			nm := w.text(c)
			bind(nm, joinDot(from, nm))
		case syntax.KindAliasedImport:
			aliased(c, from)
		}
	}
}

// relative resolves ".lowering" or ".." against the file's package.
func (w *walker) relative(spec string) string {
	dots := len(spec) - len(strings.TrimLeft(spec, "."))
	rest := spec[dots:]
	base := w.ff.pkg
	for i := 1; i < dots; i++ {
		j := strings.LastIndexByte(base, '.')
		if j < 0 {
			return ""
		}
		base = base[:j]
	}
	return joinDot(base, rest)
}

func joinDot(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

// assignment records aliases (x = a.b.c), registering calls and, at
// module level, the names the refs table indexes.
func (w *walker) assignment(n int32, scope int, top bool) {
	left, right := w.child(n, syntax.FieldLeft), w.child(n, syntax.FieldRight)
	if right < 0 {
		return
	}
	name := ""
	if left >= 0 && w.kind(left) == syntax.KindIdentifier {
		name = w.text(left)
	}
	switch w.kind(right) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		if name == "" {
			return
		}
		if d := w.dotted(right); d != "" {
			if top {
				w.ff.aliases[name] = d
				w.ff.assigns = append(w.ff.assigns, assignFact{name: name, line: w.row(left), col: w.col(left), call: -1, value: expr{dotted: d}})
			} else if _, ok := w.nested[name]; !ok {
				w.nested[name] = d
			}
		}
	case syntax.KindCall:
		i := w.call(right, scope, -1)
		if top && name != "" {
			if i >= 0 {
				w.ff.calls[i].assigned = name
			}
			w.ff.assigns = append(w.ff.assigns, assignFact{name: name, line: w.row(left), col: w.col(left), call: i})
		}
	default:
		w.exprCalls(right, scope)
	}
}

// decorated records a decorated function and its decorator calls.
func (w *walker) decorated(n int32, scope int, top bool) {
	def := w.child(n, syntax.FieldDefinition)
	if def < 0 {
		return
	}
	var decos []int32
	for _, c := range w.children(n) {
		if w.kind(c) == syntax.KindDecorator {
			decos = append(decos, c)
		}
	}
	if w.kind(def) != syntax.KindFunctionDefinition {
		for _, d := range decos {
			w.exprCalls(d, scope)
		}
		if b := w.child(def, syntax.FieldBody); b >= 0 {
			w.block(b, scope, false)
		}
		return
	}
	first := w.row(n)
	fi := w.function(def, &first, scope, top)
	for k, d := range decos {
		x := w.t.FirstChild(d)
		if x < 0 {
			continue
		}
		if k == 0 {
			// The first line's token: the decorator's callee.
			callee := x
			if w.kind(x) == syntax.KindCall {
				if f := w.child(x, syntax.FieldFunction); f >= 0 {
					callee = f
				}
			}
			sp, ep := w.t.StartPos(callee), w.t.EndPos(callee)
			w.ff.defs[fi].firstCol = sp.Col
			if ep.Line == sp.Line {
				w.ff.defs[fi].firstEnd = ep.Col
			} else {
				w.ff.defs[fi].firstEnd = sp.Col
			}
		}
		if w.kind(x) == syntax.KindCall {
			w.call(x, scope, fi)
		}
	}
}

// function records a function definition and walks its body. first is
// the first line of its decorated definition, nil when undecorated.
func (w *walker) function(n int32, first *int, scope int, top bool) int {
	nameNode := w.child(n, syntax.FieldName)
	d := defFact{parent: scope, line: w.row(n)}
	d.first = d.line
	if first != nil {
		d.first = *first
	}
	if nameNode >= 0 {
		d.name = w.text(nameNode)
		d.nameCol = w.col(nameNode)
		d.firstCol, d.firstEnd = d.nameCol, w.t.EndPos(nameNode).Col
	}
	if ps := w.child(n, syntax.FieldParameters); ps >= 0 {
		d.params = w.params(ps)
	}
	body := w.child(n, syntax.FieldBody)
	var text []byte
	if body >= 0 {
		text = w.t.Bytes(body)
		d.getAtenOp = bytes.Contains(text, []byte("get_aten_op("))
	}
	w.ff.defs = append(w.ff.defs, d)
	i := len(w.ff.defs) - 1
	if top && d.name != "" {
		w.ff.topDefs[d.name] = i
	}
	if body >= 0 && w.mayRegister(text) {
		w.block(body, i, false)
	}
	return i
}

// mayRegister reports whether a function or class body can hold a
// registering call: one names a registrar, with a word of the prefilter or
// a name the file imported one as (reg for register_lowering). Most
// bodies hold none, and their calls need not be read.
func (w *walker) mayRegister(body []byte) bool {
	if containsAny(body, prefilter) {
		return true
	}
	for name, q := range w.ff.aliases {
		if _, last := splitLast(q); last != name && containsAny([]byte(last), prefilter) && bytes.Contains(body, []byte(name)) {
			return true
		}
	}
	return false
}

func (w *walker) params(ps int32) []param {
	var out []param
	pos, kwOnly := 0, false
	for _, c := range w.children(ps) {
		var name string
		variad := false
		switch w.kind(c) {
		case syntax.KindIdentifier:
			name = w.text(c)
		case syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
			if nm := w.child(c, syntax.FieldName); nm >= 0 {
				name = w.text(nm)
			}
		case syntax.KindTypedParameter:
			// typed_parameter holds the name (or a splat) as its first
			// child.
			if x := w.t.FirstChild(c); x >= 0 {
				switch w.kind(x) {
				case syntax.KindIdentifier:
					name = w.text(x)
				case syntax.KindListSplatPattern, syntax.KindDictionarySplatPattern:
					variad, kwOnly = true, kwOnly || w.kind(x) == syntax.KindListSplatPattern
				}
			}
		case syntax.KindListSplatPattern:
			variad, kwOnly = true, true
		case syntax.KindDictionarySplatPattern:
			variad = true
		case syntax.KindKeywordSeparator:
			kwOnly = true
		}
		if variad || name == "" {
			continue
		}
		p := param{name: name, kwOnly: kwOnly, initial: -1}
		if !kwOnly {
			p.initial = pos
			pos++
		}
		out = append(out, p)
	}
	return out
}

// exprCalls finds the calls inside an expression.
func (w *walker) exprCalls(n int32, scope int) {
	switch w.kind(n) {
	case syntax.KindCall:
		w.call(n, scope, -1)
		return
	case syntax.KindString, syntax.KindConcatenatedString, syntax.KindComment, syntax.KindIdentifier:
		return
	case syntax.KindFunctionDefinition, syntax.KindDecoratedDefinition, syntax.KindClassDefinition:
		w.stmt(n, scope, false)
		return
	}
	for _, c := range w.children(n) {
		w.exprCalls(c, scope)
	}
}

// call records a call if its callee is a dotted name (or a call of one,
// as in register_lowering(op)(fn)) and walks its arguments for more. It
// returns the index of the recorded call, or -1.
func (w *walker) call(n int32, scope, decorates int) int {
	fn := w.child(n, syntax.FieldFunction)
	argsNode := w.child(n, syntax.FieldArguments)
	if fn < 0 {
		return -1
	}
	if w.kind(fn) == syntax.KindCall {
		// f(op)(g): record the inner call with g applied.
		inner := w.call(fn, scope, -1)
		var first *expr
		if argsNode >= 0 {
			for _, a := range w.children(argsNode) {
				if w.kind(a) == syntax.KindComment {
					continue
				}
				if w.kind(a) != syntax.KindKeywordArgument {
					e := w.expr(a)
					first = &e
				}
				break
			}
			w.exprCalls(argsNode, scope)
		}
		if inner >= 0 && first != nil {
			w.ff.calls[inner].applied = first
		}
		if inner >= 0 && decorates >= 0 {
			w.ff.calls[inner].decorates = decorates
		}
		return inner
	}
	callee := w.dotted(fn)
	if callee == "" {
		w.exprCalls(fn, scope)
		if argsNode >= 0 {
			w.exprCalls(argsNode, scope)
		}
		return -1
	}
	c := callFact{callee: callee, decorates: decorates, scope: scope, cond: strings.Join(w.conds, " and ")}
	sp, ep := w.t.StartPos(fn), w.t.EndPos(fn)
	c.line, c.col = sp.Line, sp.Col
	c.endCol = c.col
	if ep.Line == sp.Line {
		c.endCol = ep.Col
	}
	if argsNode >= 0 && w.kind(argsNode) == syntax.KindArgumentList {
		for _, a := range w.children(argsNode) {
			switch w.kind(a) {
			case syntax.KindComment:
			case syntax.KindKeywordArgument:
				nm, v := w.child(a, syntax.FieldName), w.child(a, syntax.FieldValue)
				if nm >= 0 && v >= 0 {
					c.kwargs = append(c.kwargs, kwarg{name: w.text(nm), val: w.expr(v)})
					w.exprCalls(v, scope)
				}
			default:
				c.args = append(c.args, w.expr(a))
				w.exprCalls(a, scope)
			}
		}
	}
	if decorates < 0 && !w.interesting(&c) {
		return -1
	}
	w.ff.calls = append(w.ff.calls, c)
	return len(w.ff.calls) - 1
}

// interesting keeps the calls that may register an op: those with a
// dotted argument (aten.add), a parameter of the enclosing function passed
// on, a py_impl callee, functools.partial, or a callee named like a
// registrar. Most calls of a file are none of these.
func (w *walker) interesting(c *callFact) bool {
	if strings.HasSuffix(c.callee, ".py_impl") {
		return true
	}
	_, last := splitLast(c.callee)
	if last == "partial" || strings.Contains(last, "register") || strings.Contains(last, "fallback") {
		return true // functools.partial(register_…), or a registrar whose op is computed
	}
	var has func(e expr) bool
	has = func(e expr) bool {
		if strings.Contains(e.dotted, ".") || (e.dotted != "" && w.isParam(c.scope, e.dotted)) {
			return true
		}
		for _, x := range e.elems {
			if has(x) {
				return true
			}
		}
		return false
	}
	for _, a := range c.args {
		if has(a) {
			return true
		}
	}
	for _, k := range c.kwargs {
		if has(k.val) {
			return true
		}
	}
	return false
}

// isParam reports whether name is a parameter of the function scope or
// of a function enclosing it.
func (w *walker) isParam(scope int, name string) bool {
	for ; scope >= 0; scope = w.ff.defs[scope].parent {
		for _, p := range w.ff.defs[scope].params {
			if p.name == name {
				return true
			}
		}
	}
	return false
}

// expr reads an argument.
func (w *walker) expr(n int32) expr {
	switch w.kind(n) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		return expr{dotted: w.dotted(n)}
	case syntax.KindList, syntax.KindTuple:
		var e expr
		for _, c := range w.children(n) {
			if w.kind(c) == syntax.KindComment {
				continue
			}
			e.elems = append(e.elems, w.expr(c))
		}
		if e.elems == nil {
			e.elems = []expr{}
		}
		return e
	case syntax.KindParenthesizedExpression:
		if c := w.t.FirstChild(n); c >= 0 && w.t.NextSibling(c) < 0 {
			return w.expr(c)
		}
	case syntax.KindString:
		var b strings.Builder
		for _, c := range w.children(n) {
			if w.kind(c) == syntax.KindStringContent {
				b.Write(w.t.Bytes(c))
			}
		}
		return expr{str: b.String(), isStr: true}
	case syntax.KindNone:
		return expr{isNone: true}
	case syntax.KindTrue:
		return expr{isBool: true, truth: true}
	case syntax.KindFalse:
		return expr{isBool: true}
	}
	return expr{}
}

// dotted returns "a.b.c" for a name or an attribute chain of names, ""
// for anything else.
func (w *walker) dotted(n int32) string {
	switch w.kind(n) {
	case syntax.KindIdentifier:
		return w.text(n)
	case syntax.KindAttribute:
		obj, attr := w.child(n, syntax.FieldObject), w.child(n, syntax.FieldAttribute)
		if obj < 0 || attr < 0 {
			return ""
		}
		base := w.dotted(obj)
		if base == "" {
			return ""
		}
		return base + "." + w.text(attr)
	}
	return ""
}
