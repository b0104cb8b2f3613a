package pyindex

import (
	"strings"
	"unique"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// maxValueLen bounds the stored right-hand side of an assignment; hover
// shows defaults of config flags, which are short.
const maxValueLen = 120

// maxSummaryLen bounds a stored docstring summary.
const maxSummaryLen = 400

// binding is one name bound in a module or class body. It is immutable once
// extracted and shared by every reader.
type binding struct {
	name         string
	kind         Kind // KindImport: value is the module; attr the imported name, "" for "import m"
	typeChecking bool // bound under "if TYPE_CHECKING:"
	line, col    int32
	endLine      int32
	docStart     uint32 // byte range of the docstring literal, 0,0 for none
	docEnd       uint32
	sig          string // functions: params and return; classes: bases; variables: annotation
	value        string // variables: right-hand side; imports: module
	attr         string // "from m import attr"
	decorators   string // decorator expressions joined by "\n"
	docSummary   string
	members      []binding // class bodies
}

// starImport is "from module import *".
type starImport struct {
	module       string
	line         int32
	typeChecking bool
}

// fileData is what the index keeps of one parsed file: no tree, no source.
type fileData struct {
	docStart, docEnd uint32
	docSummary       string
	bindings         []binding
	stars            []starImport
	all              []string // literal names of __all__
	hasAll           bool
	allDynamic       bool // __all__ was also changed by something not literal
	// truncated is set when the file holds more names than its limit:
	// the names past it are not indexed (and so come from the target).
	truncated bool
	// idents are the identifiers the file's code mentions, hashed and
	// sorted (postings.go); identsAll stands for every identifier when
	// the file mentions more than the index keeps.
	idents    []uint32
	identsAll bool
}

// MaxNamesPerFile bounds the names one file contributes to the index
// (module-level bindings and class members together), so that a hostile
// file's retained memory is bounded: about 150 bytes a name. Real files
// hold far fewer: 1,371 in torch 2.11's largest (_VariableFunctions.pyi),
// 4,678 in any file of Debian's site-packages.
const MaxNamesPerFile = 20000

// MaxNamesPerIndex bounds the names of a whole index: 68k in torch 2.11,
// 189k in all of Debian's site-packages; a million is about 150 MB.
const MaxNamesPerIndex = 1_000_000

// extractor turns the syntax tree of a module, or the trees of its
// top-level statements chunk by chunk (syntax.Chunks), into fileData.
type extractor struct {
	t   *syntax.Tree // the tree being walked
	src []byte
	pkg string // package that relative imports start from
	fd  *fileData
	top []binding // the module's bindings so far
	// trees counts the trees added: the module's docstring is the first's.
	trees int
	// names counts the bindings made so far; at limit the walk stops.
	names, limit int
}

// newExtractor starts the extraction of src, a module whose package is
// pkg (the module itself for packages, else its parent), keeping at most
// about limit names.
func newExtractor(src []byte, pkg string, limit int) *extractor {
	return &extractor{src: src, pkg: pkg, fd: &fileData{}, limit: limit}
}

// add walks t, a tree of the whole module or of its next chunk of
// top-level statements (positions in src). It parses nothing itself, and
// copies what it keeps: t may live in scratch memory.
func (e *extractor) add(t *syntax.Tree) {
	e.t = t
	defer func() { e.t = nil }()
	root := t.Root()
	if root < 0 {
		return
	}
	if e.trees++; e.trees == 1 {
		e.fd.docStart, e.fd.docEnd, e.fd.docSummary = e.docstring(root)
	}
	e.top = e.body(root, false, true, e.top)
}

// done returns the module's data.
func (e *extractor) done() *fileData {
	if len(e.top) > 0 {
		e.fd.bindings = append(make([]binding, 0, len(e.top)), e.top...) // drop spare capacity
	}
	e.top = nil
	return e.fd
}

// extract is the extraction of the whole module's tree t.
func extract(t *syntax.Tree, pkg string, limit int) *fileData {
	e := newExtractor(t.Src(), pkg, limit)
	e.add(t)
	return e.done()
}

func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// body collects the bindings of a module or class body, descending into
// compound statements that run in the same scope (if, try, with, for, while).
func (e *extractor) body(n int32, tc, top bool, out []binding) []binding {
	for c := range e.t.Children(n) {
		if e.names >= e.limit {
			e.fd.truncated = true
			break
		}
		before := len(out)
		out = e.statement(c, tc, top, out)
		if !continuesScope(e.t.Kind(c)) { // those count in their own bodies
			e.names += len(out) - before
		}
	}
	return out
}

// continuesScope reports the statements whose bodies bind in the
// enclosing scope: body walks them itself.
func continuesScope(k syntax.Kind) bool {
	switch k {
	case syntax.KindIfStatement, syntax.KindTryStatement, syntax.KindWithStatement,
		syntax.KindForStatement, syntax.KindWhileStatement, syntax.KindError:
		return true
	}
	return false
}

func (e *extractor) statement(c int32, tc, top bool, out []binding) []binding {
	switch e.t.Kind(c) {
	case syntax.KindFunctionDefinition:
		return append(out, e.function(c, "", tc))
	case syntax.KindClassDefinition:
		return append(out, e.class(c, "", tc))
	case syntax.KindDecoratedDefinition:
		var decos []string
		def := int32(-1)
		for d := range e.t.Children(c) {
			switch e.t.Kind(d) {
			case syntax.KindDecorator:
				decos = append(decos, strings.TrimPrefix(oneLine(e.t.Text(d), true), "@"))
			case syntax.KindFunctionDefinition, syntax.KindClassDefinition:
				def = d
			}
		}
		if def < 0 {
			return out
		}
		joined := intern(strings.Join(decos, "\n"))
		if e.t.Kind(def) == syntax.KindClassDefinition {
			return append(out, e.class(def, joined, tc))
		}
		return append(out, e.function(def, joined, tc))
	case syntax.KindExpressionStatement:
		if e.t.ChildCount(c) == 0 {
			return out
		}
		x := e.t.NthChild(c, 0)
		switch e.t.Kind(x) {
		case syntax.KindAssignment:
			return e.assignment(x, tc, top, out)
		case syntax.KindAugmentedAssignment:
			if top {
				e.augmentAll(x)
			}
		case syntax.KindCall:
			if top {
				e.allCall(x)
			}
		}
		return out
	case syntax.KindImportStatement:
		return e.importStatement(c, tc, out)
	case syntax.KindImportFromStatement:
		return e.importFrom(c, tc, top, out)
	case syntax.KindIfStatement:
		cond := strings.TrimSpace(e.t.Text(e.t.Child(c, syntax.FieldCondition)))
		negTC := strings.HasPrefix(cond, "not ") && isTypeCheckingName(strings.TrimSpace(cond[len("not "):]))
		isTC := !negTC && isTypeCheckingName(cond)
		for d := range e.t.Children(c) {
			switch e.t.Kind(d) {
			case syntax.KindBlock:
				out = e.body(d, tc || isTC, top, out)
			case syntax.KindElifClause, syntax.KindElseClause:
				out = e.clause(d, tc || negTC, top, out)
			}
		}
		return out
	case syntax.KindTryStatement, syntax.KindWithStatement, syntax.KindForStatement, syntax.KindWhileStatement:
		for d := range e.t.Children(c) {
			switch e.t.Kind(d) {
			case syntax.KindBlock:
				out = e.body(d, tc, top, out)
			case syntax.KindExceptClause, syntax.KindExceptGroupClause, syntax.KindElseClause, syntax.KindFinallyClause:
				out = e.clause(d, tc, top, out)
			}
		}
		return out
	case syntax.KindError:
		// Error recovery often leaves whole definitions inside ERROR nodes;
		// index what is recognisable.
		return e.body(c, tc, top, out)
	}
	return out
}

func (e *extractor) clause(n int32, tc, top bool, out []binding) []binding {
	for d := range e.t.Children(n) {
		if e.t.Kind(d) == syntax.KindBlock {
			out = e.body(d, tc, top, out)
		}
	}
	return out
}

func (e *extractor) pos(n int32) (int32, int32) {
	nd := e.t.Node(n)
	return int32(nd.StartRow), int32(nd.StartCol)
}

func (e *extractor) function(n int32, decos string, tc bool) binding {
	name := e.t.Child(n, syntax.FieldName)
	if name < 0 {
		name = n
	}
	b := binding{name: intern(e.t.Text(name)), kind: KindFunction, typeChecking: tc, decorators: decos}
	b.line, b.col = e.pos(name)
	b.endLine = int32(e.t.Node(n).EndRow)
	sig := oneLine(e.t.Text(e.t.Child(n, syntax.FieldParameters)), true)
	if ret := e.t.Child(n, syntax.FieldReturnType); ret >= 0 {
		sig += " -> " + oneLine(e.t.Text(ret), true)
	}
	if isAsync(e.t.Bytes(n)) {
		sig = "async " + sig
	}
	b.sig = intern(sig)
	if body := e.t.Child(n, syntax.FieldBody); body >= 0 {
		b.docStart, b.docEnd, b.docSummary = e.docstring(body)
	}
	return b
}

func (e *extractor) class(n int32, decos string, tc bool) binding {
	name := e.t.Child(n, syntax.FieldName)
	if name < 0 {
		name = n
	}
	b := binding{name: intern(e.t.Text(name)), kind: KindClass, typeChecking: tc, decorators: decos}
	b.line, b.col = e.pos(name)
	b.endLine = int32(e.t.Node(n).EndRow)
	b.sig = intern(oneLine(e.t.Text(e.t.Child(n, syntax.FieldSuperclasses)), true))
	if body := e.t.Child(n, syntax.FieldBody); body >= 0 {
		b.docStart, b.docEnd, b.docSummary = e.docstring(body)
		b.members = e.body(body, false, false, nil)
		if len(b.members) == 0 {
			b.members = nil
		} else {
			b.members = append([]binding(nil), b.members...) // drop spare capacity
		}
	}
	return b
}

// docstring finds the docstring of a module or block: its first statement
// when that is a string literal.
func (e *extractor) docstring(body int32) (uint32, uint32, string) {
	for s := range e.t.Children(body) {
		if e.t.Kind(s) == syntax.KindComment {
			continue
		}
		if e.t.Kind(s) != syntax.KindExpressionStatement || e.t.ChildCount(s) != 1 {
			return 0, 0, ""
		}
		lit := e.t.NthChild(s, 0)
		if e.t.Kind(lit) != syntax.KindString && e.t.Kind(lit) != syntax.KindConcatenatedString {
			return 0, 0, ""
		}
		start, end := e.t.Start(lit), e.t.End(lit)
		return uint32(start), uint32(end), summarize(cleandoc(syntax.LiteralContents(e.src[start:end])))
	}
	return 0, 0, ""
}

func (e *extractor) assignment(n int32, tc, top bool, out []binding) []binding {
	left := e.t.Child(n, syntax.FieldLeft)
	right := e.t.Child(n, syntax.FieldRight)
	// a = b = value: the right side is itself an assignment.
	for right >= 0 && e.t.Kind(right) == syntax.KindAssignment {
		out = e.assignment(right, tc, top, out)
		right = e.t.Child(right, syntax.FieldRight)
	}
	value := ""
	if right >= 0 {
		// (a.b) is a.b: a rebinding the resolver follows.
		value = oneLine(e.t.Text(e.t.Unwrap(right)), false)
		if len(value) > maxValueLen {
			value = truncateUTF8(value, maxValueLen) + "…"
		}
		value = intern(value)
	}
	ann := ""
	if t := e.t.Child(n, syntax.FieldType); t >= 0 {
		ann = intern(": " + oneLine(e.t.Text(t), true))
	}
	if top && left >= 0 && e.t.Kind(left) == syntax.KindIdentifier && e.t.Text(left) == "__all__" && right >= 0 {
		e.fd.all = nil
		e.fd.hasAll = true
		e.addAll(right)
	}
	var targets func(t int32)
	targets = func(t int32) {
		if t < 0 {
			return
		}
		switch e.t.Kind(t) {
		case syntax.KindIdentifier:
			b := binding{name: intern(e.t.Text(t)), kind: KindVariable, typeChecking: tc, sig: ann, value: value}
			b.line, b.col = e.pos(t)
			b.endLine = int32(e.t.Node(n).EndRow)
			out = append(out, b)
		case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern, syntax.KindListSplatPattern:
			for c := range e.t.Children(t) {
				targets(c)
			}
			// attributes and subscripts bind nothing in this scope
		}
	}
	targets(left)
	return out
}

// addAll appends the string literals of a list/tuple (or a sum of them) to
// __all__, and marks __all__ dynamic for anything else.
func (e *extractor) addAll(n int32) {
	switch e.t.Kind(n) {
	case syntax.KindList, syntax.KindTuple, syntax.KindParenthesizedExpression, syntax.KindSet:
		for c := range e.t.Children(n) {
			switch e.t.Kind(c) {
			case syntax.KindString:
				if s := syntax.LiteralContents(e.src[e.t.Start(c):e.t.End(c)]); s != "" {
					e.fd.all = append(e.fd.all, intern(s))
				}
			case syntax.KindComment:
			default:
				if e.t.Kind(n) == syntax.KindParenthesizedExpression {
					e.addAll(c)
				} else {
					e.fd.allDynamic = true
				}
			}
		}
	case syntax.KindBinaryOperator:
		e.addAll(e.t.Child(n, syntax.FieldLeft))
		e.addAll(e.t.Child(n, syntax.FieldRight))
	default:
		e.fd.allDynamic = true
	}
}

func (e *extractor) augmentAll(n int32) {
	left := e.t.Child(n, syntax.FieldLeft)
	if left < 0 || e.t.Kind(left) != syntax.KindIdentifier || e.t.Text(left) != "__all__" {
		return
	}
	e.fd.hasAll = true
	if right := e.t.Child(n, syntax.FieldRight); right >= 0 {
		e.addAll(right)
	}
}

// allCall handles __all__.extend([...]) and __all__.append("x").
func (e *extractor) allCall(n int32) {
	fn := e.t.Child(n, syntax.FieldFunction)
	if fn < 0 || e.t.Kind(fn) != syntax.KindAttribute {
		return
	}
	obj := e.t.Child(fn, syntax.FieldObject)
	if obj < 0 || e.t.Text(obj) != "__all__" {
		return
	}
	args := e.t.Child(n, syntax.FieldArguments)
	if args < 0 || e.t.ChildCount(args) != 1 {
		e.fd.allDynamic = true
		return
	}
	e.fd.hasAll = true
	arg := e.t.NthChild(args, 0)
	switch e.t.Text(e.t.Child(fn, syntax.FieldAttribute)) {
	case "extend":
		e.addAll(arg)
	case "append":
		if e.t.Kind(arg) == syntax.KindString {
			e.fd.all = append(e.fd.all, intern(syntax.LiteralContents(e.src[e.t.Start(arg):e.t.End(arg)])))
		} else {
			e.fd.allDynamic = true
		}
	default:
		e.fd.allDynamic = true
	}
}

func (e *extractor) importStatement(n int32, tc bool, out []binding) []binding {
	for c := range e.t.Children(n) {
		var b binding
		switch e.t.Kind(c) {
		case syntax.KindDottedName:
			// "import a.b.c" binds a to the top-level package.
			first := e.t.NthChild(c, 0)
			if first < 0 {
				continue
			}
			b = binding{name: intern(e.t.Text(first)), value: intern(e.t.Text(first))}
			b.line, b.col = e.pos(first)
		case syntax.KindAliasedImport:
			alias := e.t.Child(c, syntax.FieldAlias)
			if alias < 0 {
				continue
			}
			b = binding{name: intern(e.t.Text(alias)), value: intern(e.t.DottedName(e.t.Child(c, syntax.FieldName)))}
			b.line, b.col = e.pos(alias)
		default:
			continue
		}
		b.kind, b.typeChecking = KindImport, tc
		b.endLine = int32(e.t.Node(n).EndRow)
		out = append(out, b)
	}
	return out
}

func (e *extractor) importFrom(n int32, tc, top bool, out []binding) []binding {
	modNode := e.t.Child(n, syntax.FieldModuleName)
	if modNode < 0 {
		return out
	}
	module := e.absModule(modNode)
	for c := range e.t.Children(n) {
		if c == modNode {
			continue
		}
		var b binding
		switch e.t.Kind(c) {
		case syntax.KindWildcardImport:
			if top && module != "" {
				line, _ := e.pos(n)
				e.fd.stars = append(e.fd.stars, starImport{module: intern(module), line: line, typeChecking: tc})
			}
			continue
		case syntax.KindDottedName:
			name := e.t.DottedName(c)
			b = binding{name: intern(name), attr: intern(name)}
			b.line, b.col = e.pos(c)
		case syntax.KindAliasedImport:
			alias := e.t.Child(c, syntax.FieldAlias)
			if alias < 0 {
				continue
			}
			b = binding{name: intern(e.t.Text(alias)), attr: intern(e.t.DottedName(e.t.Child(c, syntax.FieldName)))}
			b.line, b.col = e.pos(alias)
		default:
			continue
		}
		if module == "" {
			continue // relative import climbing above the top-level package
		}
		b.kind, b.typeChecking, b.value = KindImport, tc, intern(module)
		b.endLine = int32(e.t.Node(n).EndRow)
		out = append(out, b)
	}
	return out
}

// absModule turns the module of a from-import into an absolute dotted
// name, resolving leading dots against the importing module's package.
func (e *extractor) absModule(n int32) string {
	if e.t.Kind(n) != syntax.KindRelativeImport {
		return e.t.DottedName(n)
	}
	dots, rest := 0, ""
	for c := range e.t.Children(n) {
		switch e.t.Kind(c) {
		case syntax.KindImportPrefix:
			dots = strings.Count(e.t.Text(c), ".")
		case syntax.KindDottedName:
			rest = e.t.DottedName(c)
		}
	}
	base := e.pkg
	for i := 1; i < dots; i++ {
		j := strings.LastIndexByte(base, '.')
		if j < 0 {
			return ""
		}
		base = base[:j]
	}
	if base == "" {
		return ""
	}
	if rest == "" {
		return base
	}
	return base + "." + rest
}

// isAsync reports whether a function definition's text starts with the
// async keyword (the keyword is not a named node).
func isAsync(def []byte) bool {
	return len(def) > 5 && string(def[:5]) == "async" && (def[5] == ' ' || def[5] == '\t' || def[5] == '\\')
}

// countNames counts bindings and their members, nested.
func countNames(bs []binding) int {
	n := len(bs)
	for i := range bs {
		n += countNames(bs[i].members)
	}
	return n
}

// isTypeCheckingName reports whether s is TYPE_CHECKING or
// module.TYPE_CHECKING.
func isTypeCheckingName(s string) bool {
	return s == "TYPE_CHECKING" || strings.HasSuffix(s, ".TYPE_CHECKING") && isDottedName(strings.TrimSuffix(s, ".TYPE_CHECKING"))
}
