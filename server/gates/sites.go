package gates

import (
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
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
	expr  int32
	scope *scope
	s     *syntax.Tree // the tree expr is in
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

// nodeKey names a node among the trees of one file's pieces.
type nodeKey struct {
	t *syntax.Tree
	n int32
}

// fileSites resolves the gate sites of one file.
type fileSites struct {
	ix       *flagIndex
	file     string
	pkg      string // package used for relative imports
	module   *scope
	scopes   map[nodeKey]*scope // function/class/lambda node → scope
	classAt  map[int]*scope     // class start byte → scope
	aliasy   map[string]bool    // names bound somewhere by import or expression
	sites    map[string][]Site  // full flag key → sites
	seen     map[siteAt]bool    // sites recorded, to drop repeats
	visiting map[*binding]bool
}

func newFileSites(ix *flagIndex, file string) *fileSites {
	mod := strings.TrimSuffix(strings.TrimSuffix(file, ".pyi"), ".py")
	parts := strings.Split(mod, "/")
	pkgParts := parts[:len(parts)-1]
	return &fileSites{ix: ix, file: file, pkg: strings.Join(pkgParts, "."), module: newScope(nil, false),
		scopes: map[nodeKey]*scope{}, classAt: map[int]*scope{}, aliasy: map[string]bool{"torch": true}, sites: map[string][]Site{}, seen: map[siteAt]bool{}, visiting: map[*binding]bool{}}
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
func (fs *fileSites) collectBindings(s *syntax.Tree, n int32, sc *scope) {
	switch s.Kind(n) {
	case syntax.KindFunctionDefinition, syntax.KindLambda:
		if s.Kind(n) == syntax.KindFunctionDefinition {
			if name := s.Child(n, syntax.FieldName); name >= 0 {
				fs.bind(sc, s.Text(name), &binding{kind: bindOther})
			}
		}
		inner := newScope(sc, false)
		fs.scopes[nodeKey{s, n}] = inner
		if params := s.Child(n, syntax.FieldParameters); params >= 0 {
			for p := range s.Children(params) {
				if name := paramName(s, p); name >= 0 {
					fs.bind(inner, s.Text(name), &binding{kind: bindOther})
				}
				// Defaults are evaluated in the enclosing scope.
				if d := s.Child(p, syntax.FieldValue); d >= 0 {
					fs.collectBindings(s, d, sc)
				}
			}
		}
		if body := s.Child(n, syntax.FieldBody); body >= 0 {
			fs.collectBindings(s, body, inner)
		}
		return
	case syntax.KindClassDefinition:
		if name := s.Child(n, syntax.FieldName); name >= 0 {
			fs.bind(sc, s.Text(name), &binding{kind: bindOther})
		}
		// A class split across trees (members parsed in different rounds)
		// keeps one scope, found by its position.
		inner := fs.classAt[s.Start(n)]
		if inner == nil {
			inner = newScope(sc, true)
			fs.classAt[s.Start(n)] = inner
		}
		fs.scopes[nodeKey{s, n}] = inner
		if body := s.Child(n, syntax.FieldBody); body >= 0 {
			fs.collectBindings(s, body, inner)
		}
		return
	case syntax.KindImportStatement:
		for c := range s.Children(n) {
			switch s.Kind(c) {
			case syntax.KindDottedName:
				parts := strings.Split(s.Text(c), ".")
				fs.bind(sc, parts[0], &binding{kind: bindTarget, tgt: fs.moduleTarget(parts[0])})
			case syntax.KindAliasedImport:
				path := oneLine(s.Text(s.Child(c, syntax.FieldName)))
				fs.bind(sc, s.Text(s.Child(c, syntax.FieldAlias)), &binding{kind: bindTarget, tgt: fs.moduleTarget(path)})
			}
		}
		return
	case syntax.KindImportFromStatement:
		mn := s.Child(n, syntax.FieldModuleName)
		if mn < 0 {
			return
		}
		base := fs.absModule(s, mn)
		for c := range s.Children(n) {
			if c == mn {
				continue
			}
			var orig, name string
			switch s.Kind(c) {
			case syntax.KindAliasedImport:
				orig, name = s.Text(s.Child(c, syntax.FieldName)), s.Text(s.Child(c, syntax.FieldAlias))
			case syntax.KindDottedName:
				orig, name = s.Text(c), s.Text(c)
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
	case syntax.KindAssignment, syntax.KindAugmentedAssignment:
		left, right := s.Child(n, syntax.FieldLeft), s.Child(n, syntax.FieldRight)
		if left >= 0 && s.Kind(left) == syntax.KindIdentifier {
			if right >= 0 && s.Kind(n) == syntax.KindAssignment && (s.Kind(right) == syntax.KindIdentifier || s.Kind(right) == syntax.KindAttribute) {
				fs.bind(sc, s.Text(left), &binding{kind: bindExpr, expr: right, scope: sc, s: s})
			} else {
				fs.bind(sc, s.Text(left), &binding{kind: bindOther})
			}
		} else if left >= 0 {
			fs.bindTargets(s, left, sc)
		}
		if right >= 0 {
			fs.collectBindings(s, right, sc)
		}
		return
	case syntax.KindForStatement, syntax.KindForInClause:
		if left := s.Child(n, syntax.FieldLeft); left >= 0 {
			fs.bindTargets(s, left, sc)
		}
	case syntax.KindWithItem:
		if v := s.Child(n, syntax.FieldValue); v >= 0 && s.Kind(v) == syntax.KindAsPattern {
			if t := s.Child(v, syntax.FieldAlias); t >= 0 {
				fs.bindTargets(s, t, sc)
			}
		}
	case syntax.KindAsPatternTarget:
		fs.bindTargets(s, n, sc)
	case syntax.KindExceptClause:
		for c := range s.Children(n) {
			if s.Kind(c) == syntax.KindAsPattern {
				if t := s.Child(c, syntax.FieldAlias); t >= 0 {
					fs.bindTargets(s, t, sc)
				}
			}
		}
	case syntax.KindNamedExpression:
		if name := s.Child(n, syntax.FieldName); name >= 0 {
			fs.bind(sc, s.Text(name), &binding{kind: bindOther})
		}
	case syntax.KindGlobalStatement:
		if sc.globals == nil {
			sc.globals = map[string]bool{}
		}
		for c := range s.Children(n) {
			sc.globals[s.Text(c)] = true
		}
	}
	for c := range s.Children(n) {
		fs.collectBindings(s, c, sc)
	}
}

func paramName(s *syntax.Tree, p int32) int32 {
	switch s.Kind(p) {
	case syntax.KindIdentifier:
		return p
	case syntax.KindTypedParameter, syntax.KindListSplatPattern, syntax.KindDictionarySplatPattern:
		for c := range s.Children(p) {
			if s.Kind(c) == syntax.KindIdentifier {
				return c
			}
		}
	case syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
		return s.Child(p, syntax.FieldName)
	}
	return -1
}

// bindTargets binds every plain name in an assignment target as "other".
func (fs *fileSites) bindTargets(s *syntax.Tree, t int32, sc *scope) {
	switch s.Kind(t) {
	case syntax.KindIdentifier:
		fs.bind(sc, s.Text(t), &binding{kind: bindOther})
	case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern, syntax.KindTuple, syntax.KindList, syntax.KindExpressionList, syntax.KindAsPatternTarget, syntax.KindListSplatPattern, syntax.KindParenthesizedExpression:
		for c := range s.Children(t) {
			fs.bindTargets(s, c, sc)
		}
	}
}

// absModule resolves a from-import's module name (relative ones against the file's package).
func (fs *fileSites) absModule(s *syntax.Tree, mn int32) string {
	if s.Kind(mn) != syntax.KindRelativeImport {
		return oneLine(s.Text(mn))
	}
	t := s.Text(mn)
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
		parts, ok := dottedChain(b.s, b.expr)
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
func (fs *fileSites) resolveNode(s *syntax.Tree, n int32, sc *scope) (target, bool) {
	parts, ok := dottedChain(s, n)
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
func (fs *fileSites) collectSites(s *syntax.Tree, n int32, sc *scope) {
	switch s.Kind(n) {
	case syntax.KindFunctionDefinition, syntax.KindLambda, syntax.KindClassDefinition:
		inner := fs.scopes[nodeKey{s, n}]
		if inner == nil {
			inner = sc
		}
		for c := range s.Children(n) {
			if s.Kind(c) == syntax.KindBlock {
				fs.collectSites(s, c, inner)
			} else if s.Kind(n) == syntax.KindLambda && s.Kind(c) != syntax.KindLambdaParameters {
				fs.collectSites(s, c, inner)
			} else {
				fs.collectSites(s, c, sc)
			}
		}
		return
	case syntax.KindAttribute:
		if p := s.Parent(n); p >= 0 && s.Kind(p) == syntax.KindAttribute {
			if o := s.Child(p, syntax.FieldObject); o >= 0 && o == n {
				break // not the outermost attribute of the chain
			}
		}
		if fs.attributeSite(s, n, sc) {
			return
		}
	case syntax.KindCall:
		fs.callSite(s, n, sc)
	}
	for c := range s.Children(n) {
		fs.collectSites(s, c, sc)
	}
}

// attributeSite records a flag read or write made by an attribute chain.
func (fs *fileSites) attributeSite(s *syntax.Tree, n int32, sc *scope) bool {
	parts, ok := dottedChain(s, n)
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
			if i == len(parts)-1 && isAssignTarget(s, n) {
				kind = KindWrite
			}
			fs.add(s, t.path, key, n, kind)
			return true
		}
	}
	return ok
}

func isAssignTarget(s *syntax.Tree, n int32) bool {
	cur := n
	for p := s.Parent(n); p >= 0; cur, p = p, s.Parent(p) {
		switch s.Kind(p) {
		case syntax.KindAssignment, syntax.KindAugmentedAssignment:
			l := s.Child(p, syntax.FieldLeft)
			return l >= 0 && l == cur
		case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern:
			continue
		default:
			return false
		}
	}
	return false
}

// callSite handles getattr/hasattr/setattr, config.patch and patch.object.
func (fs *fileSites) callSite(s *syntax.Tree, n int32, sc *scope) {
	fn := s.Child(n, syntax.FieldFunction)
	args := s.Child(n, syntax.FieldArguments)
	if fn < 0 || args < 0 || s.Kind(args) != syntax.KindArgumentList {
		return
	}
	fnText := s.Text(fn)
	var argv []int32
	for a := range s.Children(args) {
		if s.Kind(a) != syntax.KindComment {
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
		name, ok := s.PlainString(argv[1])
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
	patchKey := func(key string, at int32) {
		if fs.ix.keys[t.path][key] {
			fs.add(s, t.path, key, at, KindPatch)
		}
	}
	for i, a := range argv {
		switch {
		case s.Kind(a) == syntax.KindKeywordArgument:
			if name := s.Child(a, syntax.FieldName); name >= 0 {
				patchKey(s.Text(name), name)
			}
		case i == 0 && s.Kind(a) == syntax.KindDictionary:
			for pr := range s.Children(a) {
				if s.Kind(pr) != syntax.KindPair {
					continue
				}
				if k := s.Child(pr, syntax.FieldKey); k >= 0 {
					if key, ok := s.PlainString(k); ok {
						patchKey(key, k)
					}
				}
			}
		case i == 0:
			if key, ok := s.PlainString(a); ok {
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
func (fs *fileSites) add(s *syntax.Tree, mod, key string, n int32, kind SiteKind) {
	site := Site{File: fs.file, Line: int(s.Node(n).StartRow), Col: int(s.Node(n).StartCol), Kind: kind,
		Text: lineText(s.Src(), int(s.Start(n)))}
	if kind == KindRead || kind == KindGetattr {
		if cond := conditionOf(s, n); cond >= 0 {
			site.InCondition = true
			site.Condition = oneLine(s.Text(cond))
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
func conditionOf(s *syntax.Tree, n int32) int32 {
	cur := n
	for p := s.Parent(n); p >= 0; cur, p = p, s.Parent(p) {
		switch s.Kind(p) {
		case syntax.KindIfStatement, syntax.KindElifClause, syntax.KindWhileStatement:
			if c := s.Child(p, syntax.FieldCondition); c >= 0 && c == cur {
				return c
			}
			return -1
		case syntax.KindConditionalExpression:
			if s.ChildCount(p) >= 2 && s.NthChild(p, 1) == cur {
				return cur
			}
			return -1
		case syntax.KindAssertStatement:
			if s.ChildCount(p) >= 1 && s.NthChild(p, 0) == cur {
				return cur
			}
			return -1
		case syntax.KindIfClause:
			return cur
		case syntax.KindBooleanOperator, syntax.KindNotOperator, syntax.KindParenthesizedExpression, syntax.KindComparisonOperator,
			syntax.KindCall, syntax.KindArgumentList, syntax.KindAttribute, syntax.KindSubscript, syntax.KindBinaryOperator, syntax.KindUnaryOperator, syntax.KindKeywordArgument:
			continue
		default:
			return -1
		}
	}
	return -1
}
