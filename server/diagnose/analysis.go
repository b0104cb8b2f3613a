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

// compileSite is one torch.compile: a call, or a bare @torch.compile.
type compileSite struct {
	node   int32 // the call, or the decorator's expression
	call   *callInfo
	fn     int32  // function holding the call, or -1
	target string // name the result is bound to, or the decorated function
	mode   string
	// modeNode and optionsNode are the keyword values, or -1.
	modeNode, optionsNode int32
	modeKw, optionsKw     kwarg
}

// threadStart is a place that runs a callable in another thread.
type threadStart struct {
	node    int32  // the call starting it, or the class for a Thread subclass
	how     string // threading.Thread, executor.submit, asyncio.to_thread, ...
	targets []string
	within  int32 // for a Thread subclass, the class whose run it is; else -1
}

// analysis is everything the checks need about one buffer.
type analysis struct {
	t          *tree
	buf        *pybuf.Buffer
	cat        *gates.Catalog
	modules    []string // config modules, longest name first
	isModule   map[string]bool
	subconfigs map[string]bool // module.prefix of nested classes

	refs    []FlagRef
	calls   []*callInfo
	funcs   map[string][]int32 // function name → definitions
	sites   []*compileSite
	starts  []threadStart
	execs   map[string]bool // names bound to thread pool executors
	torchAt int             // line of the first module-level torch import, or -1
	quals   map[int32]string
	finals  map[int32]int32  // assignment → the value at the end of its chain (assigned)
	texts   map[int32]string // value node → its text (valueText)
	imps    map[string]int   // moduleImports
	work    int              // steps taken, for the tests that bound them
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
		execs:      map[string]bool{},
		torchAt:    -1,
		quals:      map[int32]string{},
		finals:     map[int32]int32{},
		texts:      map[int32]string{},
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
				a.attributeRef(n)
			}
		case syntax.KindSubscript:
			if a.cat != nil {
				a.subscriptEnvRef(n)
			}
		case syntax.KindImportStatement, syntax.KindImportFromStatement:
			if a.torchAt < 0 && t.Parent(n) == 0 && a.importsTorch(n) {
				a.torchAt = t.StartPos(n).Line
			}
		case syntax.KindClassDefinition:
			a.threadSubclass(n)
		case syntax.KindDecorator:
			a.decorator(n)
		}
	}
	for _, c := range a.calls {
		a.work++
		a.classifyCall(c)
	}
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
				if cs := t.CodeChildren(arg); len(cs) == 1 && t.Kind(t.Unwrap(cs[0])) == syntax.KindDictionary {
					c.dictSplats = append(c.dictSplats, t.Unwrap(cs[0]))
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
		case c.qual == "torch.compile":
			a.compileCall(c)
		case c.callee == "patch" && a.isModule[a.patchModule(c)]:
			a.patchRefs(c, a.patchModule(c))
		case c.qual == "" && (c.callee == "getattr" || c.callee == "setattr" ||
			c.callee == "hasattr" || c.callee == "delattr") && t.Kind(c.calleeNode) == syntax.KindIdentifier:
			a.getattrRef(c)
		default:
			a.envCallRefs(c)
		}
	} else if c.qual == "torch.compile" {
		a.compileCall(c)
	}
	a.threadCall(c)
}

// patchModule returns the config module whose patch c calls, or "".
func (a *analysis) patchModule(c *callInfo) string {
	if len(c.qual) > 6 && c.qual[len(c.qual)-6:] == ".patch" {
		return c.qual[:len(c.qual)-6]
	}
	return ""
}

func (a *analysis) compileCall(c *callInfo) {
	t := a.t
	s := &compileSite{node: c.node, call: c, fn: c.fn, modeNode: -1, optionsNode: -1}
	if kw, ok := c.keyword("mode", t); ok {
		s.modeKw, s.modeNode = kw, kw.value
		s.mode, _ = t.PlainString(kw.value)
	}
	if kw, ok := c.keyword("options", t); ok {
		s.optionsKw, s.optionsNode = kw, kw.value
		if d := t.Unwrap(kw.value); t.Kind(d) == syntax.KindDictionary && a.isModule[inductorConfig] {
			a.dictRefs(c.node, inductorConfig, d, SpellOptionsKey)
		}
	}
	// What the result is bound to: x = torch.compile(f), or the function
	// a decorator call decorates.
	p := t.Parent(c.node)
	switch {
	case p >= 0 && t.Kind(p) == syntax.KindAssignment && t.Field(c.node) == syntax.FieldRight:
		if l := t.Child(p, syntax.FieldLeft); l >= 0 {
			s.target = t.LastName(l)
		}
	case p >= 0 && t.Kind(p) == syntax.KindDecorator:
		s.target = a.decorated(p)
	}
	a.sites = append(a.sites, s)
}

// decorator handles a bare @torch.compile (no call).
func (a *analysis) decorator(n int32) {
	t := a.t
	cs := t.CodeChildren(n)
	if len(cs) != 1 || t.Kind(cs[0]) == syntax.KindCall {
		return
	}
	if a.chainQual(cs[0]) != "torch.compile" {
		return
	}
	a.sites = append(a.sites, &compileSite{
		node: cs[0], fn: t.fnOf[n],
		target: a.decorated(n), modeNode: -1, optionsNode: -1,
	})
}

// decorated returns the name of the function a decorator decorates.
func (a *analysis) decorated(dec int32) string {
	t := a.t
	dd := t.Parent(dec)
	if dd < 0 || t.Kind(dd) != syntax.KindDecoratedDefinition {
		return ""
	}
	if def := t.Child(dd, syntax.FieldDefinition); def >= 0 {
		if name := t.Child(def, syntax.FieldName); name >= 0 {
			return t.Text(name)
		}
	}
	return ""
}

// executorTypes are the thread pools whose submit/map run callables in
// other threads.
var executorTypes = map[string]bool{
	"concurrent.futures.ThreadPoolExecutor":        true,
	"concurrent.futures.thread.ThreadPoolExecutor": true,
	"multiprocessing.pool.ThreadPool":              true,
	"multiprocessing.dummy.Pool":                   true,
}

// threadCall records calls that run a callable in another thread, and
// names bound to thread pools.
func (a *analysis) threadCall(c *callInfo) {
	t := a.t
	if executorTypes[c.qual] {
		// ex = ThreadPoolExecutor(...) or with ThreadPoolExecutor() as ex.
		p := t.Parent(c.node)
		switch {
		case p >= 0 && t.Kind(p) == syntax.KindAssignment && t.Field(c.node) == syntax.FieldRight:
			if l := t.Child(p, syntax.FieldLeft); l >= 0 {
				a.execs[t.Text(l)] = true
			}
		case p >= 0 && t.Kind(p) == syntax.KindAsPattern:
			if al := t.Child(p, syntax.FieldAlias); al >= 0 {
				a.execs[t.Text(al)] = true
			}
		}
	}
	a.work++
	start := func(how string, target int32) {
		a.starts = append(a.starts, threadStart{node: c.node, how: how, targets: a.targetNames(target), within: -1})
	}
	switch c.qual {
	case "threading.Thread", "threading.Timer":
		if kw, ok := c.keyword("target", t); ok {
			start(c.qual, kw.value)
		} else if c.qual == "threading.Thread" && len(c.args) >= 2 {
			start(c.qual, c.args[1]) // Thread(group, target)
		} else if c.qual == "threading.Timer" && len(c.args) >= 2 {
			start(c.qual, c.args[1]) // Timer(interval, function)
		}
		return
	case "asyncio.to_thread", "_thread.start_new_thread":
		if len(c.args) >= 1 {
			start(c.qual, c.args[0])
		}
		return
	}
	switch c.callee {
	case "submit", "map", "apply_async", "apply", "imap", "imap_unordered", "starmap":
		obj := t.Child(c.calleeNode, syntax.FieldObject)
		if obj < 0 || len(c.args) == 0 {
			return
		}
		recv := t.Unwrap(obj)
		// Only a name or a chain of names can be bound to an executor:
		// the text of anything else (a.map(f).map(g)...) is never looked up.
		named := t.Kind(recv) == syntax.KindIdentifier || t.Kind(recv) == syntax.KindAttribute && t.Chain(recv) != nil
		if named && a.execs[t.Text(recv)] || t.Kind(recv) == syntax.KindCall && executorTypes[a.chainQual(t.Child(recv, syntax.FieldFunction))] {
			start(t.Text(recv)+"."+c.callee, c.args[0])
		}
	case "run_in_executor":
		if len(c.args) >= 2 { // loop.run_in_executor(executor or None, fn, ...)
			start("run_in_executor", c.args[1])
		}
	}
}

// threadSubclass records the run method of a threading.Thread subclass.
func (a *analysis) threadSubclass(n int32) {
	t := a.t
	sup := t.Child(n, syntax.FieldSuperclasses)
	if sup < 0 {
		return
	}
	for _, b := range t.CodeChildren(sup) {
		if a.chainQual(b) == "threading.Thread" {
			a.starts = append(a.starts, threadStart{node: n, how: "threading.Thread subclass", targets: []string{"run"}, within: n})
			return
		}
	}
}

// targetNames returns the names of the functions a callable expression
// runs: f, obj.method, lambda: f(x), functools.partial(f, ...).
func (a *analysis) targetNames(n int32) []string {
	t := a.t
	n = t.Unwrap(n)
	switch t.Kind(n) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		if name := t.LastName(n); name != "" {
			return []string{name}
		}
	case syntax.KindLambda:
		body := t.Child(n, syntax.FieldBody)
		if body < 0 {
			return nil
		}
		var out []string
		for _, c := range a.callsIn(body) {
			out = append(out, c.callee)
		}
		return out
	case syntax.KindCall:
		if a.chainQual(t.Child(n, syntax.FieldFunction)) == "functools.partial" {
			if args := t.Child(n, syntax.FieldArguments); args >= 0 {
				if cs := t.CodeChildren(args); len(cs) > 0 {
					return a.targetNames(cs[0])
				}
			}
		}
	}
	return nil
}

// reach is what the thread starts of the buffer reach.
type reach struct {
	funcs map[int32]threadStart        // function definitions run in threads
	sites map[*compileSite]threadStart // compiled code run in threads
}

// maxCallDepth bounds how many calls deep the thread analysis follows.
const maxCallDepth = 4

// threadReach follows calls from every thread start, a few levels deep, by
// name within the buffer. Each start claims what it reaches first; a
// function already reached at the same depth or less is not followed again
// (everything it leads to is claimed already), so a function is followed
// at most maxCallDepth+1 times however many starts reach it.
func (a *analysis) threadReach() reach {
	r := reach{funcs: map[int32]threadStart{}, sites: map[*compileSite]threadStart{}}
	byTarget := map[string][]*compileSite{}
	byFn := map[int32][]*compileSite{}
	for _, s := range a.sites {
		a.work++
		if s.target != "" {
			byTarget[s.target] = append(byTarget[s.target], s)
		}
		byFn[s.fn] = append(byFn[s.fn], s)
	}
	claim := func(s *compileSite, st threadStart) {
		if _, ok := r.sites[s]; !ok {
			r.sites[s] = st
		}
	}
	targetSeen := map[string]bool{} // names whose compiled results are claimed
	reached := map[int32]int{}      // function → the least depth it was followed at
	for _, st := range a.starts {
		names := st.targets
		seen := map[string]bool{}
		for depth := 0; depth <= maxCallDepth && len(names) > 0; depth++ {
			var next []string
			for _, name := range names {
				a.work++
				if seen[name] {
					continue
				}
				seen[name] = true
				if !targetSeen[name] {
					targetSeen[name] = true
					for _, s := range byTarget[name] {
						a.work++
						claim(s, st)
					}
				}
				for _, def := range a.funcs[name] {
					a.work++
					if depth == 0 && st.within >= 0 && a.t.clsOf[def] != st.within {
						continue // another class's run
					}
					if d, ok := reached[def]; ok && d <= depth {
						continue
					}
					reached[def] = depth
					if _, ok := r.funcs[def]; !ok {
						r.funcs[def] = st
					}
					for _, s := range byFn[def] {
						a.work++
						claim(s, st)
					}
					for _, c := range a.callsIn(def) {
						a.work++
						next = append(next, c.callee)
					}
				}
			}
			names = next
		}
	}
	return r
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
