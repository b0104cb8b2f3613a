package gates

import (
	"strings"
)

// flagIndex is what site resolution needs to know about the catalog.
type flagIndex struct {
	modules   map[string]bool            // config module names
	prefixes  map[string]bool            // every dotted prefix of a config module name
	keys      map[string]map[string]bool // module → flag keys
	subs      map[string]map[string]bool // module → sub-config prefixes
	lastNames map[string]bool            // last components of config module names
}

func newFlagIndex(mods []*Module) *flagIndex {
	ix := &flagIndex{modules: map[string]bool{}, prefixes: map[string]bool{}, keys: map[string]map[string]bool{},
		subs: map[string]map[string]bool{}, lastNames: map[string]bool{}}
	for _, m := range mods {
		ix.modules[m.Name] = true
		parts := strings.Split(m.Name, ".")
		for i := 1; i < len(parts); i++ {
			ix.prefixes[strings.Join(parts[:i], ".")] = true
		}
		ix.lastNames[parts[len(parts)-1]] = true
		ix.keys[m.Name] = map[string]bool{}
		ix.subs[m.Name] = map[string]bool{}
		for _, f := range m.Flags {
			ix.keys[m.Name][f.Key] = true
		}
		for _, s := range m.SubConfigs {
			ix.subs[m.Name][s] = true
		}
	}
	return ix
}

// target is what a name or dotted expression denotes.
type target struct {
	path   string // a Python module path (config module or a package above one)
	config bool   // path is a config module
	prefix string // inside a config module: "" or a sub-config prefix ending in "."
	member string // a non-flag attribute of a config module (patch, save_config...)
}

type bindingKind int

const (
	bindOther bindingKind = iota
	bindTarget
	bindExpr
)

type binding struct {
	kind  bindingKind
	tgt   target
	expr  *node
	scope *scope
	s     *src
}

type scope struct {
	parent  *scope
	class   bool
	binds   map[string][]*binding
	globals map[string]bool
}

func newScope(parent *scope, class bool) *scope {
	return &scope{parent: parent, class: class, binds: map[string][]*binding{}}
}

// fileSites resolves the gate sites of one file.
type fileSites struct {
	ix       *flagIndex
	file     string
	pkg      string // package used for relative imports
	module   *scope
	scopes   map[*node]*scope  // function/class/lambda node → scope
	classAt  map[uint]*scope   // class start byte → scope
	aliasy   map[string]bool   // names bound somewhere by import or expression
	sites    map[string][]Site // full flag key → sites
	seen     map[siteAt]bool   // sites recorded, to drop repeats
	visiting map[*binding]bool
}

func newFileSites(ix *flagIndex, file string) *fileSites {
	mod := strings.TrimSuffix(strings.TrimSuffix(file, ".pyi"), ".py")
	parts := strings.Split(mod, "/")
	pkgParts := parts[:len(parts)-1]
	return &fileSites{ix: ix, file: file, pkg: strings.Join(pkgParts, "."), module: newScope(nil, false),
		scopes: map[*node]*scope{}, classAt: map[uint]*scope{}, aliasy: map[string]bool{"torch": true}, sites: map[string][]Site{}, seen: map[siteAt]bool{}, visiting: map[*binding]bool{}}
}

// classScopes lists the scopes of class bodies.
func (fs *fileSites) classScopes() []*scope {
	out := make([]*scope, 0, len(fs.classAt))
	for _, sc := range fs.classAt {
		out = append(out, sc)
	}
	return out
}

func (fs *fileSites) bind(sc *scope, name string, b *binding) {
	sc.binds[name] = append(sc.binds[name], b)
	if b.kind != bindOther {
		fs.aliasy[name] = true
	}
}

// collectBindings is the first walk: it records what each scope binds.
func (fs *fileSites) collectBindings(s *src, n *node, sc *scope) {
	switch n.Kind() {
	case "function_definition", "lambda":
		if n.Kind() == "function_definition" {
			if name := n.ChildByFieldName("name"); name != nil {
				fs.bind(sc, s.text(name), &binding{kind: bindOther})
			}
		}
		inner := newScope(sc, false)
		fs.scopes[n] = inner
		if params := n.ChildByFieldName("parameters"); params != nil {
			for _, p := range childrenOf(params) {
				if name := paramName(s, p); name != nil {
					fs.bind(inner, s.text(name), &binding{kind: bindOther})
				}
				// Defaults are evaluated in the enclosing scope.
				if d := p.ChildByFieldName("value"); d != nil {
					fs.collectBindings(s, d, sc)
				}
			}
		}
		if body := n.ChildByFieldName("body"); body != nil {
			fs.collectBindings(s, body, inner)
		}
		return
	case "class_definition":
		if name := n.ChildByFieldName("name"); name != nil {
			fs.bind(sc, s.text(name), &binding{kind: bindOther})
		}
		// A class split across trees (members parsed in different rounds)
		// keeps one scope, found by its position.
		inner := fs.classAt[n.StartByte()]
		if inner == nil {
			inner = newScope(sc, true)
			fs.classAt[n.StartByte()] = inner
		}
		fs.scopes[n] = inner
		if body := n.ChildByFieldName("body"); body != nil {
			fs.collectBindings(s, body, inner)
		}
		return
	case "import_statement":
		for _, c := range childrenOf(n) {
			switch c.Kind() {
			case "dotted_name":
				parts := strings.Split(s.text(c), ".")
				fs.bind(sc, parts[0], &binding{kind: bindTarget, tgt: fs.moduleTarget(parts[0])})
			case "aliased_import":
				path := oneLine(s.text(c.ChildByFieldName("name")))
				fs.bind(sc, s.text(c.ChildByFieldName("alias")), &binding{kind: bindTarget, tgt: fs.moduleTarget(path)})
			}
		}
		return
	case "import_from_statement":
		mn := n.ChildByFieldName("module_name")
		if mn == nil {
			return
		}
		base := fs.absModule(s, mn)
		for _, c := range childrenOf(n) {
			if c == mn {
				continue
			}
			var orig, name string
			switch c.Kind() {
			case "aliased_import":
				orig, name = s.text(c.ChildByFieldName("name")), s.text(c.ChildByFieldName("alias"))
			case "dotted_name":
				orig, name = s.text(c), s.text(c)
			default:
				continue
			}
			if base == "" {
				fs.bind(sc, name, &binding{kind: bindOther})
				continue
			}
			if t, ok := fs.step(fs.moduleTarget(base), orig); ok {
				fs.bind(sc, name, &binding{kind: bindTarget, tgt: t})
			} else {
				fs.bind(sc, name, &binding{kind: bindOther})
			}
		}
		return
	case "assignment", "augmented_assignment":
		left, right := n.ChildByFieldName("left"), n.ChildByFieldName("right")
		if left != nil && left.Kind() == "identifier" {
			if right != nil && n.Kind() == "assignment" && (right.Kind() == "identifier" || right.Kind() == "attribute") {
				fs.bind(sc, s.text(left), &binding{kind: bindExpr, expr: right, scope: sc, s: s})
			} else {
				fs.bind(sc, s.text(left), &binding{kind: bindOther})
			}
		} else if left != nil {
			fs.bindTargets(s, left, sc)
		}
		if right != nil {
			fs.collectBindings(s, right, sc)
		}
		return
	case "for_statement", "for_in_clause":
		if left := n.ChildByFieldName("left"); left != nil {
			fs.bindTargets(s, left, sc)
		}
	case "with_item":
		if v := n.ChildByFieldName("value"); v != nil && v.Kind() == "as_pattern" {
			if t := v.ChildByFieldName("alias"); t != nil {
				fs.bindTargets(s, t, sc)
			}
		}
	case "as_pattern_target":
		fs.bindTargets(s, n, sc)
	case "except_clause":
		for _, c := range childrenOf(n) {
			if c.Kind() == "as_pattern" {
				if t := c.ChildByFieldName("alias"); t != nil {
					fs.bindTargets(s, t, sc)
				}
			}
		}
	case "named_expression":
		if name := n.ChildByFieldName("name"); name != nil {
			fs.bind(sc, s.text(name), &binding{kind: bindOther})
		}
	case "global_statement":
		if sc.globals == nil {
			sc.globals = map[string]bool{}
		}
		for _, c := range childrenOf(n) {
			sc.globals[s.text(c)] = true
		}
	}
	for _, c := range childrenOf(n) {
		fs.collectBindings(s, c, sc)
	}
}

func paramName(s *src, p *node) *node {
	switch p.Kind() {
	case "identifier":
		return p
	case "typed_parameter", "list_splat_pattern", "dictionary_splat_pattern":
		for _, c := range childrenOf(p) {
			if c.Kind() == "identifier" {
				return c
			}
		}
	case "default_parameter", "typed_default_parameter":
		return p.ChildByFieldName("name")
	}
	return nil
}

// bindTargets binds every plain name in an assignment target as "other".
func (fs *fileSites) bindTargets(s *src, t *node, sc *scope) {
	switch t.Kind() {
	case "identifier":
		fs.bind(sc, s.text(t), &binding{kind: bindOther})
	case "pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list", "as_pattern_target", "list_splat_pattern", "parenthesized_expression":
		for _, c := range childrenOf(t) {
			fs.bindTargets(s, c, sc)
		}
	}
}

// absModule resolves a from-import's module name (relative ones against the file's package).
func (fs *fileSites) absModule(s *src, mn *node) string {
	if mn.Kind() != "relative_import" {
		return oneLine(s.text(mn))
	}
	t := s.text(mn)
	dots := 0
	for dots < len(t) && t[dots] == '.' {
		dots++
	}
	pkg := strings.Split(fs.pkg, ".")
	if dots-1 > len(pkg) {
		return ""
	}
	pkg = pkg[:len(pkg)-(dots-1)]
	rest := strings.TrimSpace(t[dots:])
	if rest != "" {
		pkg = append(pkg, rest)
	}
	return strings.Join(pkg, ".")
}

// moduleTarget is the target for an imported module path.
func (fs *fileSites) moduleTarget(path string) target {
	return target{path: path, config: fs.ix.modules[path]}
}

// step follows one attribute from t. ok is false when the result can never
// lead to a config flag.
func (fs *fileSites) step(t target, attr string) (target, bool) {
	if t.member != "" {
		return target{}, false
	}
	if t.config {
		key := t.prefix + attr
		if fs.ix.keys[t.path][key] {
			return target{path: t.path, config: true, prefix: key, member: "\x00flag"}, true
		}
		if fs.ix.subs[t.path][key] {
			return target{path: t.path, config: true, prefix: key + "."}, true
		}
		if t.prefix == "" {
			return target{path: t.path, config: true, member: attr}, true
		}
		return target{}, false
	}
	p := t.path + "." + attr
	if fs.ix.modules[p] {
		return target{path: p, config: true}, true
	}
	if fs.ix.prefixes[p] {
		return target{path: p}, true
	}
	return target{}, false
}

func (t target) flagKey() (string, bool) {
	if t.member == "\x00flag" {
		return t.prefix, true
	}
	return "", false
}

// lookup resolves a bare name seen in scope sc.
func (fs *fileSites) lookup(name string, sc *scope) (target, bool) {
	first := true
	for cur := sc; cur != nil; cur = cur.parent {
		if cur.class && !first {
			continue // class scopes are invisible to nested functions
		}
		first = false
		if cur.globals[name] {
			cur = fs.module
		}
		bs, ok := cur.binds[name]
		if !ok {
			if cur == fs.module {
				break
			}
			continue
		}
		for _, b := range bs {
			if t, ok := fs.resolveBinding(b); ok {
				return t, true
			}
		}
		return target{}, false
	}
	if name == "torch" {
		// Inside the torch tree the package is always importable, and the
		// import that binds it may sit in a piece that was not parsed.
		return target{path: "torch"}, true
	}
	return target{}, false
}

func (fs *fileSites) resolveBinding(b *binding) (target, bool) {
	switch b.kind {
	case bindTarget:
		return b.tgt, true
	case bindExpr:
		if fs.visiting[b] {
			return target{}, false
		}
		fs.visiting[b] = true
		defer delete(fs.visiting, b)
		parts, ok := b.s.dottedChain(b.expr)
		if !ok || !fs.aliasy[parts[0]] {
			return target{}, false
		}
		t, ok := fs.lookup(parts[0], b.scope)
		for i := 1; ok && i < len(parts); i++ {
			t, ok = fs.step(t, parts[i])
		}
		if ok {
			if _, isFlag := t.flagKey(); isFlag {
				return target{}, false // a copied value, not the live flag
			}
		}
		return t, ok
	}
	return target{}, false
}

// resolveNode resolves an expression to a target.
func (fs *fileSites) resolveNode(s *src, n *node, sc *scope) (target, bool) {
	parts, ok := s.dottedChain(n)
	if !ok || !fs.aliasy[parts[0]] {
		return target{}, false
	}
	t, ok := fs.lookup(parts[0], sc)
	for i := 1; ok && i < len(parts); i++ {
		t, ok = fs.step(t, parts[i])
	}
	return t, ok
}

// collectSites is the second walk: it finds reads, writes, patches and getattrs.
func (fs *fileSites) collectSites(s *src, n *node, sc *scope) {
	switch n.Kind() {
	case "function_definition", "lambda", "class_definition":
		inner := fs.scopes[n]
		if inner == nil {
			inner = sc
		}
		for _, c := range childrenOf(n) {
			if c.Kind() == "block" || c.Kind() == "expression" {
				fs.collectSites(s, c, inner)
			} else if n.Kind() == "lambda" && c.Kind() != "lambda_parameters" {
				fs.collectSites(s, c, inner)
			} else {
				fs.collectSites(s, c, sc)
			}
		}
		return
	case "attribute":
		if p := n.Parent(); p != nil && p.Kind() == "attribute" {
			if o := p.ChildByFieldName("object"); o != nil && o == n {
				break // not the outermost attribute of the chain
			}
		}
		if fs.attributeSite(s, n, sc) {
			return
		}
	case "call":
		fs.callSite(s, n, sc)
	}
	for _, c := range childrenOf(n) {
		fs.collectSites(s, c, sc)
	}
}

// attributeSite records a flag read or write made by an attribute chain.
func (fs *fileSites) attributeSite(s *src, n *node, sc *scope) bool {
	parts, ok := s.dottedChain(n)
	if !ok || !fs.aliasy[parts[0]] {
		return false
	}
	t, ok := fs.lookup(parts[0], sc)
	for i := 1; ok && i < len(parts); i++ {
		t, ok = fs.step(t, parts[i])
		if !ok {
			return true
		}
		if key, isFlag := t.flagKey(); isFlag {
			kind := KindRead
			if i == len(parts)-1 && isAssignTarget(n) {
				kind = KindWrite
			}
			fs.add(s, t.path, key, n, kind)
			return true
		}
	}
	return ok
}

func isAssignTarget(n *node) bool {
	cur := n
	for p := n.Parent(); p != nil; cur, p = p, p.Parent() {
		switch p.Kind() {
		case "assignment", "augmented_assignment":
			l := p.ChildByFieldName("left")
			return l != nil && l == cur
		case "pattern_list", "tuple_pattern", "list_pattern":
			continue
		default:
			return false
		}
	}
	return false
}

// callSite handles getattr/hasattr/setattr, config.patch and patch.object.
func (fs *fileSites) callSite(s *src, n *node, sc *scope) {
	fn := n.ChildByFieldName("function")
	args := n.ChildByFieldName("arguments")
	if fn == nil || args == nil || args.Kind() != "argument_list" {
		return
	}
	fnText := s.text(fn)
	var argv []*node
	for _, a := range childrenOf(args) {
		if a.Kind() != "comment" {
			argv = append(argv, a)
		}
	}
	objAndName := func(kind SiteKind) {
		if len(argv) < 2 {
			return
		}
		t, ok := fs.resolveNode(s, argv[0], sc)
		if !ok || !t.config || t.member != "" {
			return
		}
		name, ok := s.stringValue(argv[1])
		if !ok {
			return
		}
		if key := t.prefix + name; fs.ix.keys[t.path][key] {
			fs.add(s, t.path, key, argv[1], kind)
		}
	}
	switch {
	case fnText == "getattr" || fnText == "hasattr":
		objAndName(KindGetattr)
		return
	case fnText == "setattr":
		objAndName(KindWrite)
		return
	case fnText == "patch.object" || strings.HasSuffix(fnText, ".patch.object"):
		objAndName(KindPatch)
		return
	}
	t, ok := fs.resolveNode(s, fn, sc)
	if !ok || !t.config || t.member != "patch" {
		return
	}
	patchKey := func(key string, at *node) {
		if fs.ix.keys[t.path][key] {
			fs.add(s, t.path, key, at, KindPatch)
		}
	}
	for i, a := range argv {
		switch {
		case a.Kind() == "keyword_argument":
			if name := a.ChildByFieldName("name"); name != nil {
				patchKey(s.text(name), name)
			}
		case i == 0 && a.Kind() == "dictionary":
			for _, pr := range childrenOf(a) {
				if pr.Kind() != "pair" {
					continue
				}
				if k := pr.ChildByFieldName("key"); k != nil {
					if key, ok := s.stringValue(k); ok {
						patchKey(key, k)
					}
				}
			}
		case i == 0:
			if key, ok := s.stringValue(a); ok {
				patchKey(key, a)
			}
		}
	}
}

type siteAt struct {
	key       string
	line, col int
	kind      SiteKind
}

// add records one site for module mod's key at node n.
func (fs *fileSites) add(s *src, mod, key string, n *node, kind SiteKind) {
	site := Site{File: fs.file, Line: n.Row() + s.lineBase, Col: n.Col(), Kind: kind,
		Text: lineText(s.b, int(n.StartByte()))}
	if kind == KindRead || kind == KindGetattr {
		if cond := conditionOf(n); cond != nil {
			site.InCondition = true
			site.Condition = oneLine(s.text(cond))
			if len(site.Condition) > 240 {
				site.Condition = site.Condition[:240] + "…"
			}
		}
	}
	full := mod + "." + key
	// A class header parsed again with later members yields its sites twice.
	at := siteAt{full, site.Line, site.Col, kind}
	if fs.seen[at] {
		return
	}
	fs.seen[at] = true
	fs.sites[full] = append(fs.sites[full], site)
}

func lineText(b []byte, off int) string {
	start := off
	for start > 0 && b[start-1] != '\n' {
		start--
	}
	end := off
	for end < len(b) && b[end] != '\n' {
		end++
	}
	return strings.TrimSpace(string(b[start:end]))
}

// conditionOf returns the condition expression n decides, if any.
func conditionOf(n *node) *node {
	cur := n
	for p := n.Parent(); p != nil; cur, p = p, p.Parent() {
		switch p.Kind() {
		case "if_statement", "elif_clause", "while_statement":
			if c := p.ChildByFieldName("condition"); c != nil && c == cur {
				return c
			}
			return nil
		case "conditional_expression":
			if p.NamedChildCount() >= 2 && p.NamedChild(1) == cur {
				return cur
			}
			return nil
		case "assert_statement":
			if p.NamedChildCount() >= 1 && p.NamedChild(0) == cur {
				return cur
			}
			return nil
		case "if_clause":
			return cur
		case "boolean_operator", "not_operator", "parenthesized_expression", "comparison_operator",
			"call", "argument_list", "attribute", "subscript", "binary_operator", "unary_operator", "keyword_argument":
			continue
		default:
			return nil
		}
	}
	return nil
}
