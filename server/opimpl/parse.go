package opimpl

// This file is the scanner's only contact with tree-sitter: it turns one
// Python file into fileFacts (names, function definitions, calls that may
// register an op), which the rest of the package resolves without a tree.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	python "github.com/tree-sitter/tree-sitter-python/bindings/go"
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

// grammar holds the ids of the node kinds the walk tells apart.
type grammar struct {
	lang *sitter.Language
	ids  map[uint16]kind
}

type kind uint8

const (
	kOther kind = iota
	kModule
	kImport
	kImportFrom
	kFutureImport
	kAliased
	kDotted
	kRelative
	kAssignment
	kDecorated
	kDecorator
	kFunction
	kClass
	kCall
	kArgs
	kKeywordArg
	kIdentifier
	kAttribute
	kList
	kTuple
	kParen
	kString
	kConcat
	kStringContent
	kNone
	kTrue
	kFalse
	kParameters
	kDefaultParam
	kTypedParam
	kTypedDefault
	kListSplat
	kDictSplat
	kKeywordSep
	kComment
	kExprStmt
	kBlock
	kClause
	kIf
	kElif
	kElse
)

var kindOf = map[string]kind{
	"module":                   kModule,
	"import_statement":         kImport,
	"import_from_statement":    kImportFrom,
	"future_import_statement":  kFutureImport,
	"aliased_import":           kAliased,
	"dotted_name":              kDotted,
	"relative_import":          kRelative,
	"assignment":               kAssignment,
	"decorated_definition":     kDecorated,
	"decorator":                kDecorator,
	"function_definition":      kFunction,
	"class_definition":         kClass,
	"call":                     kCall,
	"argument_list":            kArgs,
	"keyword_argument":         kKeywordArg,
	"identifier":               kIdentifier,
	"attribute":                kAttribute,
	"list":                     kList,
	"tuple":                    kTuple,
	"parenthesized_expression": kParen,
	"string":                   kString,
	"concatenated_string":      kConcat,
	"string_content":           kStringContent,
	"none":                     kNone,
	"true":                     kTrue,
	"false":                    kFalse,
	"parameters":               kParameters,
	"default_parameter":        kDefaultParam,
	"typed_parameter":          kTypedParam,
	"typed_default_parameter":  kTypedDefault,
	"list_splat_pattern":       kListSplat,
	"dictionary_splat_pattern": kDictSplat,
	"keyword_separator":        kKeywordSep,
	"comment":                  kComment,
	"expression_statement":     kExprStmt,
	"block":                    kBlock,
	"if_statement":             kIf,
	"elif_clause":              kElif,
	"else_clause":              kElse,
	"except_clause":            kClause,
	"except_group_clause":      kClause,
	"finally_clause":           kClause,
	"case_clause":              kClause,
}

func newGrammar() (*grammar, error) {
	lang := sitter.NewLanguage(python.Language())
	if lang == nil {
		return nil, errors.New("opimpl: no tree-sitter grammar for Python")
	}
	g := &grammar{lang: lang, ids: make(map[uint16]kind)}
	n := lang.NodeKindCount()
	for i := uint32(0); i < n; i++ {
		id := uint16(i)
		if !lang.NodeKindIsNamed(id) || !lang.NodeKindIsVisible(id) {
			continue
		}
		if k, ok := kindOf[lang.NodeKindForId(id)]; ok && k != kOther {
			g.ids[id] = k
		}
	}
	return g, nil
}

// parser is one tree-sitter parser and its grammar; not safe for
// concurrent use.
type parser struct {
	g  *grammar
	ts *sitter.Parser
}

func newParser(g *grammar) (*parser, error) {
	ts := sitter.NewParser()
	if err := ts.SetLanguage(g.lang); err != nil {
		ts.Close()
		return nil, fmt.Errorf("opimpl: tree-sitter language: %w", err)
	}
	return &parser{g: g, ts: ts}, nil
}

func (p *parser) close() { p.ts.Close() }

// parseFile parses src, the file rel of module mod, into facts.
func (p *parser) parseFile(rel, mod string, isPkg bool, src []byte) *fileFacts {
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
	tree := p.ts.Parse(src, nil)
	if tree == nil {
		return ff
	}
	defer tree.Close()
	w := &walker{g: p.g, src: src, ff: ff, cur: tree.RootNode().Walk(), nested: map[string]string{}}
	defer w.cur.Close()
	w.block(tree.RootNode(), -1, true)
	for name, q := range w.nested {
		if _, ok := ff.aliases[name]; !ok {
			ff.aliases[name] = q
		}
	}
	return ff
}

// walker walks one tree.
type walker struct {
	g      *grammar
	src    []byte
	ff     *fileFacts
	cur    *sitter.TreeCursor
	nested map[string]string // aliases bound inside functions
	conds  []string          // conditions of the enclosing if statements
}

func (w *walker) kind(n *sitter.Node) kind { return w.g.ids[n.KindId()] }

func (w *walker) text(n *sitter.Node) string { return string(w.src[n.StartByte():n.EndByte()]) }

func (w *walker) children(n *sitter.Node) []sitter.Node { return n.NamedChildren(w.cur) }

// block walks the statements of a module, class or function body (and
// the compound statements inside them); top is set at module level,
// where bindings are the module's.
func (w *walker) block(n *sitter.Node, scope int, top bool) {
	for _, c := range w.children(n) {
		w.stmt(&c, scope, top)
	}
}

func (w *walker) stmt(n *sitter.Node, scope int, top bool) {
	switch w.kind(n) {
	case kImport, kImportFrom:
		w.importStmt(n, top)
	case kFunction:
		w.function(n, nil, scope, top)
	case kClass:
		if b := n.ChildByFieldName("body"); b != nil && w.mayRegister(w.src[b.StartByte():b.EndByte()]) {
			// Class bodies register nothing the scanner can address, but
			// their methods may call registrars with literal ops.
			w.block(b, scope, false)
		}
	case kDecorated:
		w.decorated(n, scope, top)
	case kExprStmt:
		for _, c := range w.children(n) {
			if w.kind(&c) == kAssignment {
				w.assignment(&c, scope, top)
			} else {
				w.exprCalls(&c, scope)
			}
		}
	case kComment, kString:
	default:
		w.compound(n, scope, top)
	}
}

// compound walks a compound statement (if, try, for, with, while, match)
// or one of its clauses: blocks keep the scope, other parts are searched
// for calls.
func (w *walker) compound(n *sitter.Node, scope int, top bool) {
	if w.kind(n) == kIf {
		w.ifStmt(n, scope, top)
		return
	}
	for _, c := range w.children(n) {
		switch k := w.kind(&c); {
		case k == kBlock:
			w.block(&c, scope, top)
		case k == kClause:
			w.compound(&c, scope, top)
		case isStatementLike(k):
			w.stmt(&c, scope, top)
		default:
			w.exprCalls(&c, scope)
		}
	}
}

// ifStmt walks an if statement, each branch under its condition: the
// elif's own, and for else the negation of the others.
func (w *walker) ifStmt(n *sitter.Node, scope int, top bool) {
	var prev []string
	cond := func(x *sitter.Node) string {
		c := x.ChildByFieldName("condition")
		if c == nil {
			return ""
		}
		w.exprCalls(c, scope)
		return strings.Join(strings.Fields(w.text(c)), " ")
	}
	under := func(cond string, body *sitter.Node) {
		if body == nil {
			return
		}
		w.conds = append(w.conds, cond)
		w.block(body, scope, top)
		w.conds = w.conds[:len(w.conds)-1]
	}
	c0 := cond(n)
	prev = append(prev, c0)
	alts := n.ChildrenByFieldName("alternative", w.cur)
	under(c0, n.ChildByFieldName("consequence"))
	for _, alt := range alts {
		switch w.kind(&alt) {
		case kElif:
			c := cond(&alt)
			prev = append(prev, c)
			under(c, alt.ChildByFieldName("consequence"))
		case kElse:
			under("not ("+strings.Join(prev, " or ")+")", alt.ChildByFieldName("body"))
		}
	}
}

func isStatementLike(k kind) bool {
	switch k {
	case kImport, kImportFrom, kFunction, kClass, kDecorated, kExprStmt:
		return true
	}
	return false
}

// importStmt records the names an import binds.
func (w *walker) importStmt(n *sitter.Node, top bool) {
	bind := func(name, q string) {
		if top {
			w.ff.aliases[name] = q
		} else if _, ok := w.nested[name]; !ok {
			w.nested[name] = q
		}
	}
	if w.kind(n) == kImport {
		for _, c := range w.children(n) {
			switch w.kind(&c) {
			case kDotted:
				q := w.text(&c)
				first, _, _ := strings.Cut(q, ".")
				bind(first, first)
			case kAliased:
				if nm, al := c.ChildByFieldName("name"), c.ChildByFieldName("alias"); nm != nil && al != nil {
					bind(w.text(al), w.text(nm))
				}
			}
		}
		return
	}
	modNode := n.ChildByFieldName("module_name")
	if modNode == nil {
		return
	}
	var from string
	if w.kind(modNode) == kRelative {
		from = w.relative(w.text(modNode))
		if from == "" {
			return
		}
	} else {
		from = w.text(modNode)
	}
	for _, c := range w.children(n) {
		if c.Equals(*modNode) {
			continue
		}
		switch w.kind(&c) {
		case kDotted:
			nm := w.text(&c)
			bind(nm, joinDot(from, nm))
		case kAliased:
			if nm, al := c.ChildByFieldName("name"), c.ChildByFieldName("alias"); nm != nil && al != nil {
				bind(w.text(al), joinDot(from, w.text(nm)))
			}
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
func (w *walker) assignment(n *sitter.Node, scope int, top bool) {
	left, right := n.ChildByFieldName("left"), n.ChildByFieldName("right")
	if right == nil {
		return
	}
	name := ""
	if left != nil && w.kind(left) == kIdentifier {
		name = w.text(left)
	}
	switch w.kind(right) {
	case kIdentifier, kAttribute:
		if name == "" {
			return
		}
		if d := w.dotted(right); d != "" {
			if top {
				w.ff.aliases[name] = d
				w.ff.assigns = append(w.ff.assigns, assignFact{name: name, line: int(left.StartPosition().Row), col: int(left.StartPosition().Column), call: -1, value: expr{dotted: d}})
			} else if _, ok := w.nested[name]; !ok {
				w.nested[name] = d
			}
		}
	case kCall:
		i := w.call(right, scope, -1)
		if top && name != "" {
			if i >= 0 {
				w.ff.calls[i].assigned = name
			}
			w.ff.assigns = append(w.ff.assigns, assignFact{name: name, line: int(left.StartPosition().Row), col: int(left.StartPosition().Column), call: i})
		}
	default:
		w.exprCalls(right, scope)
	}
}

// decorated records a decorated function and its decorator calls.
func (w *walker) decorated(n *sitter.Node, scope int, top bool) {
	def := n.ChildByFieldName("definition")
	if def == nil {
		return
	}
	var decos []sitter.Node
	for _, c := range w.children(n) {
		if w.kind(&c) == kDecorator {
			decos = append(decos, c)
		}
	}
	if w.kind(def) != kFunction {
		for _, d := range decos {
			w.exprCalls(&d, scope)
		}
		if b := def.ChildByFieldName("body"); b != nil {
			w.block(b, scope, false)
		}
		return
	}
	first := int(n.StartPosition().Row)
	fi := w.function(def, &first, scope, top)
	for k, d := range decos {
		if d.NamedChildCount() == 0 {
			continue
		}
		x := d.NamedChild(0)
		if k == 0 {
			// The first line's token: the decorator's callee.
			callee := x
			if w.kind(x) == kCall {
				if f := x.ChildByFieldName("function"); f != nil {
					callee = f
				}
			}
			sp, ep := callee.StartPosition(), callee.EndPosition()
			w.ff.defs[fi].firstCol = int(sp.Column)
			if ep.Row == sp.Row {
				w.ff.defs[fi].firstEnd = int(ep.Column)
			} else {
				w.ff.defs[fi].firstEnd = int(sp.Column)
			}
		}
		if w.kind(x) == kCall {
			w.call(x, scope, fi)
		}
	}
}

// function records a function definition and walks its body. first is
// the first line of its decorated definition, nil when undecorated.
func (w *walker) function(n *sitter.Node, first *int, scope int, top bool) int {
	nameNode := n.ChildByFieldName("name")
	d := defFact{parent: scope, line: int(n.StartPosition().Row)}
	d.first = d.line
	if first != nil {
		d.first = *first
	}
	if nameNode != nil {
		d.name = w.text(nameNode)
		d.nameCol = int(nameNode.StartPosition().Column)
		d.firstCol, d.firstEnd = d.nameCol, int(nameNode.EndPosition().Column)
	}
	if ps := n.ChildByFieldName("parameters"); ps != nil {
		d.params = w.params(ps)
	}
	body := n.ChildByFieldName("body")
	var text []byte
	if body != nil {
		text = w.src[body.StartByte():body.EndByte()]
		d.getAtenOp = bytes.Contains(text, []byte("get_aten_op("))
	}
	w.ff.defs = append(w.ff.defs, d)
	i := len(w.ff.defs) - 1
	if top && d.name != "" {
		w.ff.topDefs[d.name] = i
	}
	if body != nil && w.mayRegister(text) {
		w.block(body, i, false)
	}
	return i
}

// mayRegister reports whether a function or class body can hold a
// registering call: one names a registrar, with a word of the prefilter or
// a name the file imported one as (reg for register_lowering). Walking
// the tree costs a cgo call per node, and most bodies hold none.
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

func (w *walker) params(ps *sitter.Node) []param {
	var out []param
	pos, kwOnly := 0, false
	for _, c := range w.children(ps) {
		var name string
		variad := false
		switch w.kind(&c) {
		case kIdentifier:
			name = w.text(&c)
		case kDefaultParam, kTypedDefault:
			if nm := c.ChildByFieldName("name"); nm != nil {
				name = w.text(nm)
			}
		case kTypedParam:
			// typed_parameter holds the name (or a splat) as its first
			// child.
			if c.NamedChildCount() > 0 {
				x := c.NamedChild(0)
				switch w.kind(x) {
				case kIdentifier:
					name = w.text(x)
				case kListSplat, kDictSplat:
					variad, kwOnly = true, kwOnly || w.kind(x) == kListSplat
				}
			}
		case kListSplat:
			variad, kwOnly = true, true
		case kDictSplat:
			variad = true
		case kKeywordSep:
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
func (w *walker) exprCalls(n *sitter.Node, scope int) {
	switch w.kind(n) {
	case kCall:
		w.call(n, scope, -1)
		return
	case kString, kConcat, kComment, kIdentifier:
		return
	case kFunction, kDecorated, kClass:
		w.stmt(n, scope, false)
		return
	}
	for _, c := range w.children(n) {
		w.exprCalls(&c, scope)
	}
}

// call records a call if its callee is a dotted name (or a call of one,
// as in register_lowering(op)(fn)) and walks its arguments for more. It
// returns the index of the recorded call, or -1.
func (w *walker) call(n *sitter.Node, scope, decorates int) int {
	fn := n.ChildByFieldName("function")
	argsNode := n.ChildByFieldName("arguments")
	if fn == nil {
		return -1
	}
	if w.kind(fn) == kCall {
		// f(op)(g): record the inner call with g applied.
		inner := w.call(fn, scope, -1)
		var first *expr
		if argsNode != nil {
			for _, a := range w.children(argsNode) {
				if w.kind(&a) == kComment {
					continue
				}
				if w.kind(&a) != kKeywordArg {
					e := w.expr(&a)
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
		if argsNode != nil {
			w.exprCalls(argsNode, scope)
		}
		return -1
	}
	c := callFact{callee: callee, decorates: decorates, scope: scope, cond: strings.Join(w.conds, " and ")}
	sp, ep := fn.StartPosition(), fn.EndPosition()
	c.line, c.col = int(sp.Row), int(sp.Column)
	c.endCol = c.col
	if ep.Row == sp.Row {
		c.endCol = int(ep.Column)
	}
	if argsNode != nil && w.kind(argsNode) == kArgs {
		for _, a := range w.children(argsNode) {
			switch w.kind(&a) {
			case kComment:
			case kKeywordArg:
				nm, v := a.ChildByFieldName("name"), a.ChildByFieldName("value")
				if nm != nil && v != nil {
					c.kwargs = append(c.kwargs, kwarg{name: w.text(nm), val: w.expr(v)})
					w.exprCalls(v, scope)
				}
			default:
				c.args = append(c.args, w.expr(&a))
				w.exprCalls(&a, scope)
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
func (w *walker) expr(n *sitter.Node) expr {
	switch w.kind(n) {
	case kIdentifier, kAttribute:
		return expr{dotted: w.dotted(n)}
	case kList, kTuple:
		var e expr
		for _, c := range w.children(n) {
			if w.kind(&c) == kComment {
				continue
			}
			e.elems = append(e.elems, w.expr(&c))
		}
		if e.elems == nil {
			e.elems = []expr{}
		}
		return e
	case kParen:
		if n.NamedChildCount() == 1 {
			return w.expr(n.NamedChild(0))
		}
	case kString:
		var b strings.Builder
		for _, c := range w.children(n) {
			if w.kind(&c) == kStringContent {
				b.WriteString(w.text(&c))
			}
		}
		return expr{str: b.String(), isStr: true}
	case kNone:
		return expr{isNone: true}
	case kTrue:
		return expr{isBool: true, truth: true}
	case kFalse:
		return expr{isBool: true}
	}
	return expr{}
}

// dotted returns "a.b.c" for a name or an attribute chain of names, ""
// for anything else.
func (w *walker) dotted(n *sitter.Node) string {
	switch w.kind(n) {
	case kIdentifier:
		return w.text(n)
	case kAttribute:
		obj, attr := n.ChildByFieldName("object"), n.ChildByFieldName("attribute")
		if obj == nil || attr == nil {
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
