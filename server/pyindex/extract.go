package pyindex

import (
	"strings"
	"unique"

	sitter "github.com/tree-sitter/go-tree-sitter"
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
}

// extractor turns one syntax tree into fileData.
type extractor struct {
	src []byte
	pkg string // package that relative imports start from
	fd  *fileData
}

// extract parses nothing itself: it walks a tree of src for module, whose
// package is pkg (the module itself for packages, else its parent).
func extract(root *sitter.Node, src []byte, pkg string) *fileData {
	e := &extractor{src: src, pkg: pkg, fd: &fileData{}}
	e.fd.docStart, e.fd.docEnd, e.fd.docSummary = e.docstring(root)
	if bs := e.body(root, false, true, nil); len(bs) > 0 {
		e.fd.bindings = append(make([]binding, 0, len(bs)), bs...) // drop spare capacity
	}
	return e.fd
}

func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

func (e *extractor) text(n *sitter.Node) string {
	if n == nil {
		return ""
	}
	return string(e.src[n.StartByte():n.EndByte()])
}

// body collects the bindings of a module or class body, descending into
// compound statements that run in the same scope (if, try, with, for, while).
func (e *extractor) body(n *sitter.Node, tc, top bool, out []binding) []binding {
	count := n.NamedChildCount()
	for i := uint(0); i < count; i++ {
		c := n.NamedChild(i)
		out = e.statement(c, tc, top, out)
	}
	return out
}

func (e *extractor) statement(c *sitter.Node, tc, top bool, out []binding) []binding {
	switch c.Kind() {
	case "function_definition":
		return append(out, e.function(c, "", tc))
	case "class_definition":
		return append(out, e.class(c, "", tc))
	case "decorated_definition":
		var decos []string
		var def *sitter.Node
		count := c.NamedChildCount()
		for i := uint(0); i < count; i++ {
			d := c.NamedChild(i)
			switch d.Kind() {
			case "decorator":
				decos = append(decos, strings.TrimPrefix(oneLine(e.text(d), true), "@"))
			case "function_definition", "class_definition":
				def = d
			}
		}
		if def == nil {
			return out
		}
		joined := intern(strings.Join(decos, "\n"))
		if def.Kind() == "class_definition" {
			return append(out, e.class(def, joined, tc))
		}
		return append(out, e.function(def, joined, tc))
	case "expression_statement":
		if c.NamedChildCount() == 0 {
			return out
		}
		x := c.NamedChild(0)
		switch x.Kind() {
		case "assignment":
			return e.assignment(x, tc, top, out)
		case "augmented_assignment":
			if top {
				e.augmentAll(x)
			}
		case "call":
			if top {
				e.allCall(x)
			}
		}
		return out
	case "import_statement":
		return e.importStatement(c, tc, out)
	case "import_from_statement":
		return e.importFrom(c, tc, top, out)
	case "if_statement":
		cond := strings.TrimSpace(e.text(c.ChildByFieldName("condition")))
		isTC := cond == "TYPE_CHECKING" || strings.HasSuffix(cond, ".TYPE_CHECKING")
		negTC := cond == "not TYPE_CHECKING" || (strings.HasPrefix(cond, "not ") && strings.HasSuffix(cond, ".TYPE_CHECKING"))
		count := c.NamedChildCount()
		for i := uint(0); i < count; i++ {
			d := c.NamedChild(i)
			switch d.Kind() {
			case "block":
				out = e.body(d, tc || isTC, top, out)
			case "elif_clause", "else_clause":
				out = e.clause(d, tc || negTC, top, out)
			}
		}
		return out
	case "try_statement", "with_statement", "for_statement", "while_statement":
		count := c.NamedChildCount()
		for i := uint(0); i < count; i++ {
			d := c.NamedChild(i)
			switch d.Kind() {
			case "block":
				out = e.body(d, tc, top, out)
			case "except_clause", "except_group_clause", "else_clause", "finally_clause":
				out = e.clause(d, tc, top, out)
			}
		}
		return out
	case "ERROR":
		// Error recovery often leaves whole definitions inside ERROR nodes;
		// index what is recognisable.
		return e.body(c, tc, top, out)
	}
	return out
}

func (e *extractor) clause(n *sitter.Node, tc, top bool, out []binding) []binding {
	count := n.NamedChildCount()
	for i := uint(0); i < count; i++ {
		if d := n.NamedChild(i); d.Kind() == "block" {
			out = e.body(d, tc, top, out)
		}
	}
	return out
}

func pos(n *sitter.Node) (int32, int32) {
	p := n.StartPosition()
	return int32(p.Row), int32(p.Column)
}

func (e *extractor) function(n *sitter.Node, decos string, tc bool) binding {
	name := n.ChildByFieldName("name")
	if name == nil {
		name = n
	}
	b := binding{name: intern(e.text(name)), kind: KindFunction, typeChecking: tc, decorators: decos}
	b.line, b.col = pos(name)
	b.endLine = int32(n.EndPosition().Row)
	sig := oneLine(e.text(n.ChildByFieldName("parameters")), true)
	if ret := n.ChildByFieldName("return_type"); ret != nil {
		sig += " -> " + oneLine(e.text(ret), true)
	}
	if n.ChildCount() > 0 && n.Child(0).Kind() == "async" {
		sig = "async " + sig
	}
	b.sig = intern(sig)
	if body := n.ChildByFieldName("body"); body != nil {
		b.docStart, b.docEnd, b.docSummary = e.docstring(body)
	}
	return b
}

func (e *extractor) class(n *sitter.Node, decos string, tc bool) binding {
	name := n.ChildByFieldName("name")
	if name == nil {
		name = n
	}
	b := binding{name: intern(e.text(name)), kind: KindClass, typeChecking: tc, decorators: decos}
	b.line, b.col = pos(name)
	b.endLine = int32(n.EndPosition().Row)
	b.sig = intern(oneLine(e.text(n.ChildByFieldName("superclasses")), true))
	if body := n.ChildByFieldName("body"); body != nil {
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
func (e *extractor) docstring(body *sitter.Node) (uint32, uint32, string) {
	count := body.NamedChildCount()
	for i := uint(0); i < count; i++ {
		s := body.NamedChild(i)
		if s.Kind() == "comment" {
			continue
		}
		if s.Kind() != "expression_statement" || s.NamedChildCount() != 1 {
			return 0, 0, ""
		}
		lit := s.NamedChild(0)
		if lit.Kind() != "string" && lit.Kind() != "concatenated_string" {
			return 0, 0, ""
		}
		start, end := lit.StartByte(), lit.EndByte()
		return uint32(start), uint32(end), summarize(cleandoc(literalText(e.src[start:end])))
	}
	return 0, 0, ""
}

func (e *extractor) assignment(n *sitter.Node, tc, top bool, out []binding) []binding {
	left := n.ChildByFieldName("left")
	right := n.ChildByFieldName("right")
	// a = b = value: the right side is itself an assignment.
	for right != nil && right.Kind() == "assignment" {
		out = e.assignment(right, tc, top, out)
		right = right.ChildByFieldName("right")
	}
	value := ""
	if right != nil {
		value = oneLine(e.text(right), false)
		if len(value) > maxValueLen {
			value = truncateUTF8(value, maxValueLen) + "…"
		}
		value = intern(value)
	}
	ann := ""
	if t := n.ChildByFieldName("type"); t != nil {
		ann = intern(": " + oneLine(e.text(t), true))
	}
	if top && left != nil && left.Kind() == "identifier" && e.text(left) == "__all__" && right != nil {
		e.fd.all = nil
		e.fd.hasAll = true
		e.addAll(right)
	}
	var targets func(t *sitter.Node)
	targets = func(t *sitter.Node) {
		if t == nil {
			return
		}
		switch t.Kind() {
		case "identifier":
			b := binding{name: intern(e.text(t)), kind: KindVariable, typeChecking: tc, sig: ann, value: value}
			b.line, b.col = pos(t)
			b.endLine = int32(n.EndPosition().Row)
			out = append(out, b)
		case "pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern":
			count := t.NamedChildCount()
			for i := uint(0); i < count; i++ {
				targets(t.NamedChild(i))
			}
			// attributes and subscripts bind nothing in this scope
		}
	}
	targets(left)
	return out
}

// addAll appends the string literals of a list/tuple (or a sum of them) to
// __all__, and marks __all__ dynamic for anything else.
func (e *extractor) addAll(n *sitter.Node) {
	switch n.Kind() {
	case "list", "tuple", "parenthesized_expression", "set":
		count := n.NamedChildCount()
		for i := uint(0); i < count; i++ {
			c := n.NamedChild(i)
			switch c.Kind() {
			case "string":
				if s := literalText(e.src[c.StartByte():c.EndByte()]); s != "" {
					e.fd.all = append(e.fd.all, intern(s))
				}
			case "comment":
			default:
				if n.Kind() == "parenthesized_expression" {
					e.addAll(c)
				} else {
					e.fd.allDynamic = true
				}
			}
		}
	case "binary_operator":
		e.addAll(n.ChildByFieldName("left"))
		e.addAll(n.ChildByFieldName("right"))
	default:
		e.fd.allDynamic = true
	}
}

func (e *extractor) augmentAll(n *sitter.Node) {
	left := n.ChildByFieldName("left")
	if left == nil || left.Kind() != "identifier" || e.text(left) != "__all__" {
		return
	}
	e.fd.hasAll = true
	if right := n.ChildByFieldName("right"); right != nil {
		e.addAll(right)
	}
}

// allCall handles __all__.extend([...]) and __all__.append("x").
func (e *extractor) allCall(n *sitter.Node) {
	fn := n.ChildByFieldName("function")
	if fn == nil || fn.Kind() != "attribute" {
		return
	}
	obj := fn.ChildByFieldName("object")
	if obj == nil || e.text(obj) != "__all__" {
		return
	}
	args := n.ChildByFieldName("arguments")
	if args == nil || args.NamedChildCount() != 1 {
		e.fd.allDynamic = true
		return
	}
	e.fd.hasAll = true
	arg := args.NamedChild(0)
	switch e.text(fn.ChildByFieldName("attribute")) {
	case "extend":
		e.addAll(arg)
	case "append":
		if arg.Kind() == "string" {
			e.fd.all = append(e.fd.all, intern(literalText(e.src[arg.StartByte():arg.EndByte()])))
		} else {
			e.fd.allDynamic = true
		}
	default:
		e.fd.allDynamic = true
	}
}

func (e *extractor) importStatement(n *sitter.Node, tc bool, out []binding) []binding {
	count := n.NamedChildCount()
	for i := uint(0); i < count; i++ {
		c := n.NamedChild(i)
		var b binding
		switch c.Kind() {
		case "dotted_name":
			// "import a.b.c" binds a to the top-level package.
			first := c.NamedChild(0)
			if first == nil {
				continue
			}
			b = binding{name: intern(e.text(first)), value: intern(e.text(first))}
			b.line, b.col = pos(first)
		case "aliased_import":
			alias := c.ChildByFieldName("alias")
			if alias == nil {
				continue
			}
			b = binding{name: intern(e.text(alias)), value: intern(dotted(e.text(c.ChildByFieldName("name"))))}
			b.line, b.col = pos(alias)
		default:
			continue
		}
		b.kind, b.typeChecking = KindImport, tc
		b.endLine = int32(n.EndPosition().Row)
		out = append(out, b)
	}
	return out
}

func (e *extractor) importFrom(n *sitter.Node, tc, top bool, out []binding) []binding {
	modNode := n.ChildByFieldName("module_name")
	if modNode == nil {
		return out
	}
	module := e.absModule(modNode)
	count := n.NamedChildCount()
	for i := uint(0); i < count; i++ {
		c := n.NamedChild(i)
		if c.Equals(*modNode) {
			continue
		}
		var b binding
		switch c.Kind() {
		case "wildcard_import":
			if top && module != "" {
				line, _ := pos(n)
				e.fd.stars = append(e.fd.stars, starImport{module: intern(module), line: line, typeChecking: tc})
			}
			continue
		case "dotted_name":
			name := dotted(e.text(c))
			b = binding{name: intern(name), attr: intern(name)}
			b.line, b.col = pos(c)
		case "aliased_import":
			alias := c.ChildByFieldName("alias")
			if alias == nil {
				continue
			}
			b = binding{name: intern(e.text(alias)), attr: intern(dotted(e.text(c.ChildByFieldName("name"))))}
			b.line, b.col = pos(alias)
		default:
			continue
		}
		if module == "" {
			continue // relative import climbing above the top-level package
		}
		b.kind, b.typeChecking, b.value = KindImport, tc, intern(module)
		b.endLine = int32(n.EndPosition().Row)
		out = append(out, b)
	}
	return out
}

// absModule turns the module of a from-import into an absolute dotted
// name, resolving leading dots against the importing module's package.
func (e *extractor) absModule(n *sitter.Node) string {
	if n.Kind() != "relative_import" {
		return dotted(e.text(n))
	}
	dots, rest := 0, ""
	count := n.NamedChildCount()
	for i := uint(0); i < count; i++ {
		c := n.NamedChild(i)
		switch c.Kind() {
		case "import_prefix":
			dots = strings.Count(e.text(c), ".")
		case "dotted_name":
			rest = dotted(e.text(c))
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

// dotted removes whitespace (and line continuations) from a dotted name.
func dotted(s string) string {
	if !strings.ContainsAny(s, " \t\r\n\\") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r != ' ' && r != '\t' && r != '\r' && r != '\n' && r != '\\' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
