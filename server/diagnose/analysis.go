package diagnose

import (
	"math/bits"
	"sort"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// callInfo is one call of the buffer.
type callInfo struct {
	node       int32
	calleeNode int32
	qual       string // what the callee resolves to, or ""
	callee     string // the callee's last name: g for g(), m for a.m()
	args       []int32
	kwargs     []kwarg
	dictSplats []int32 // dict displays passed as **{...}
	splats     []int32 // every **expression passed
	argList    int32   // the argument_list node, or -1
	fn         int32   // innermost enclosing function definition, or -1
}

type kwarg struct {
	node, name, value int32
}

func (c *callInfo) keyword(name string, t *tree) (kwarg, bool) {
	for _, kw := range c.kwargs {
		if t.Text(kw.name) == name {
			return kw, true
		}
	}
	return kwarg{}, false
}

// analysis is everything the checks need about one buffer.
type analysis struct {
	t          *tree
	buf        *pybuf.Buffer
	cat        *gates.Catalog
	modules    []string // config modules, longest name first
	isModule   map[string]bool
	subconfigs map[string]bool // module.prefix of nested classes

	refs   []FlagRef
	calls  []*callInfo
	funcs  map[string][]int32 // function name → definitions
	sites  []*compileSite
	starts []threadStart
	// backwardStarts run a callable on autograd's backward threads
	// (torch.utils.checkpoint): threads for per-thread config only.
	backwardStarts []threadStart
	execs          map[string]int // names bound to thread pool executors → their max_workers (0: unknown)

	siteByTarget   map[string][]*compileSite // compile sites by the names they bind
	optionDicts    map[int32]bool            // options dicts whose keys are recorded as flag references
	partials       map[string]*callInfo      // names bound to functools.partial(torch.compile, ...)
	bareDecorators []int32                   // bare @name decorators, for wrappers of torch.compile
	decoratedNames map[int32]string          // decorated definition → the name it defines (decorated)
	returns        map[int32][]int32         // function definition → the values it returns
	classes        []int32                   // class definitions
	threadClasses  map[int32]int             // classes deriving from a catalogue class → its entry (threadClassSet), made on first use
	names          map[string][]int32        // identifiers read, by name (readsOf), made on first use
	assigns        map[string][]int32        // assignments and for statements by the name they bind (bindsOf), made on first use
	byCallee       map[string][]*callInfo    // calls by callee name (callsNamed), made on first use
	paramsOf       map[int32][]param         // parameters of function definitions (params), made on first use
	makesPools     bool                      // the buffer calls a thread pool's constructor
	torchAt        int                       // line of the first module-level torch import, or -1
	quals          map[int32]string
	finals         map[int32]int32  // assignment → the value at the end of its chain (assigned)
	texts          map[int32]string // value node → its text (valueText)
	imps           map[string]int   // moduleImports
	vals           *valueFlow       // where compiled callables go (values.go)
	work           int              // steps taken, for the tests that bound them
}

// analyze reads the tree buf was analysed from: one parse per version of
// the buffer serves pybuf and every check.
func analyze(buf *pybuf.Buffer, cat *gates.Catalog) *analysis {
	t := newTree(buf.Tree(), buf.Lines())
	a := &analysis{
		t: t, buf: buf, cat: cat,
		isModule:   map[string]bool{},
		subconfigs: map[string]bool{},
		funcs:      map[string][]int32{},
		execs:      map[string]int{},
		torchAt:    -1,

		siteByTarget:   map[string][]*compileSite{},
		optionDicts:    map[int32]bool{},
		partials:       map[string]*callInfo{},
		decoratedNames: map[int32]string{},
		returns:        map[int32][]int32{},
		paramsOf:       map[int32][]param{},
		quals:          map[int32]string{},
		finals:         map[int32]int32{},
		texts:          map[int32]string{},
	}
	if cat != nil {
		for _, m := range cat.Modules {
			a.modules = append(a.modules, m.Name)
			a.isModule[m.Name] = true
			for _, s := range m.SubConfigs {
				a.subconfigs[m.Name+"."+s] = true
			}
		}
	}
	sort.Slice(a.modules, func(i, j int) bool { return len(a.modules[i]) > len(a.modules[j]) })
	if t.Len() == 0 {
		return a
	}
	a.walk()
	return a
}

// qual resolves the identifier n through the buffer's imports and aliases.
// Each answer costs the buffer a bounded number of steps (pybuf's tests
// hold it to that), so it counts as one here.
func (a *analysis) qual(n int32) string {
	a.work++
	if q, ok := a.quals[n]; ok {
		return q
	}
	q := a.buf.QualnameOf(n)
	a.quals[n] = q
	return q
}

// moduleImports maps each name a module-level import binds to the line of
// its first such import; made once per analysis.
func (a *analysis) moduleImports() map[string]int {
	if a.imps == nil {
		a.imps = map[string]int{}
		for _, imp := range a.buf.Imports() {
			a.work++
			if l, ok := a.imps[imp.Name]; imp.Scope.Kind == pybuf.ScopeModule && (!ok || imp.Stmt.Start.Line < l) {
				a.imps[imp.Name] = imp.Stmt.Start.Line
			}
		}
	}
	return a.imps
}

// chainQual resolves a dotted chain expression, or returns "".
func (a *analysis) chainQual(n int32) string {
	ch := a.t.Chain(a.t.Unwrap(n))
	if ch == nil {
		return ""
	}
	return a.qual(ch[len(ch)-1])
}

func (a *analysis) walk() {
	t := a.t
	a.work += t.Len()
	for i := range t.Len() {
		n := int32(i)
		switch t.Kind(n) {
		case syntax.KindCall:
			a.addCall(n)
		case syntax.KindFunctionDefinition:
			if name := t.Child(n, syntax.FieldName); name >= 0 {
				a.funcs[t.Text(name)] = append(a.funcs[t.Text(name)], n)
			}
		case syntax.KindAttribute:
			p := t.Parent(n)
			if p >= 0 && t.Kind(p) == syntax.KindAttribute && t.Field(n) == syntax.FieldObject {
				continue // not the outermost
			}
			if a.cat != nil {
				(refFacts{a}).attributeRef(n)
			}
		case syntax.KindSubscript:
			if a.cat != nil {
				(refFacts{a}).subscriptEnvRef(n)
			}
		case syntax.KindImportStatement, syntax.KindImportFromStatement:
			if a.torchAt < 0 && t.Parent(n) == 0 && a.importsTorch(n) {
				a.torchAt = t.StartPos(n).Line
			}
		case syntax.KindClassDefinition:
			a.classes = append(a.classes, n)
		case syntax.KindDecorator:
			(siteFacts{a}).decorator(n)
		case syntax.KindAssignment, syntax.KindForStatement, syntax.KindForInClause:
			(valueFacts{a}).valueState().flows = append((valueFacts{a}).valueState().flows, n) // followValues, builtDict
		case syntax.KindReturnStatement:
			if fn := t.fnOf[n]; fn >= 0 {
				if cs := t.CodeChildren(n); len(cs) == 1 {
					a.returns[fn] = append(a.returns[fn], cs[0])
				}
			}
		}
	}
	for _, c := range a.calls {
		a.work++
		a.classifyCall(c)
	}
	(siteFacts{a}).derive()
	(valueFacts{a}).followValues()
	(threadFacts{a}).threadStarts()
}

// importsTorch reports whether an import statement imports torch or one of
// its submodules.
func (a *analysis) importsTorch(n int32) bool {
	t := a.t
	if mn := t.Child(n, syntax.FieldModuleName); mn >= 0 {
		return isTorchModule(t.Text(mn))
	}
	for _, c := range t.CodeChildren(n) {
		name := c
		if t.Kind(c) == syntax.KindAliasedImport {
			name = t.Child(c, syntax.FieldName)
		}
		if name >= 0 && isTorchModule(t.Text(name)) {
			return true
		}
	}
	return false
}

func isTorchModule(m string) bool {
	return m == "torch" || len(m) > 6 && m[:6] == "torch."
}

func (a *analysis) addCall(n int32) {
	t := a.t
	callee := t.Child(n, syntax.FieldFunction)
	if callee < 0 {
		return
	}
	c := &callInfo{node: n, calleeNode: callee, argList: -1,
		fn: t.fnOf[n]}
	c.callee = t.LastName(callee)
	if ch := t.Chain(callee); ch != nil {
		c.qual = a.qual(ch[len(ch)-1])
	}
	if args := t.Child(n, syntax.FieldArguments); args >= 0 && t.Kind(args) == syntax.KindArgumentList {
		c.argList = args
		for _, arg := range t.CodeChildren(args) {
			a.work++
			switch t.Kind(arg) {
			case syntax.KindKeywordArgument:
				name, val := t.Child(arg, syntax.FieldName), t.Child(arg, syntax.FieldValue)
				if name >= 0 && val >= 0 {
					c.kwargs = append(c.kwargs, kwarg{node: arg, name: name, value: val})
				}
			case syntax.KindDictionarySplat:
				if cs := t.CodeChildren(arg); len(cs) == 1 {
					c.splats = append(c.splats, cs[0])
					if t.Kind(t.Unwrap(cs[0])) == syntax.KindDictionary {
						c.dictSplats = append(c.dictSplats, t.Unwrap(cs[0]))
					}
				}
			case syntax.KindListSplat:
			default:
				c.args = append(c.args, arg)
			}
		}
	}
	a.calls = append(a.calls, c)
}

// classifyCall records what a call means for flags, compiles and threads.
func (a *analysis) classifyCall(c *callInfo) {
	t := a.t
	if a.cat != nil {
		switch {
		case c.qual == "torch.compile" || compileSpellings[c.qual] != "":
			(siteFacts{a}).compileCall(c)
		case c.qual == "functools.partial":
			(siteFacts{a}).partialCall(c)
		case c.callee == "compile":
			(siteFacts{a}).inPlaceCompile(c)
		case c.callee == "patch" && a.isModule[a.patchModule(c)]:
			(refFacts{a}).patchRefs(c, a.patchModule(c))
		case c.qual == "" && (c.callee == "getattr" || c.callee == "setattr" ||
			c.callee == "hasattr" || c.callee == "delattr") && t.Kind(c.calleeNode) == syntax.KindIdentifier:
			(refFacts{a}).getattrRef(c)
		default:
			(refFacts{a}).envCallRefs(c)
		}
	} else if c.qual == "torch.compile" || compileSpellings[c.qual] != "" {
		(siteFacts{a}).compileCall(c)
	}
}

// patchModule returns the config module whose patch c calls, or "".
func (a *analysis) patchModule(c *callInfo) string {
	if len(c.qual) > 6 && c.qual[len(c.qual)-6:] == ".patch" {
		return c.qual[:len(c.qual)-6]
	}
	return ""
}

// callsIn returns the calls inside node n, nested functions included: a
// binary search, since calls are in source order.
func (a *analysis) callsIn(n int32) []*callInfo {
	t := a.t
	s, e := t.Node(n).Start, t.Node(n).End
	i := sort.Search(len(a.calls), func(i int) bool { return t.Node(a.calls[i].node).Start >= s })
	j := i + sort.Search(len(a.calls)-i, func(k int) bool { return t.Node(a.calls[i+k].node).Start >= e })
	a.work += 1 + bits.Len(uint(len(a.calls)))
	return a.calls[i:j]
}
