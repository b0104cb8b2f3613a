package diagnose

import (
	"slices"
	"strconv"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// threadStart is a place that runs a callable in another thread.
type threadStart struct {
	node    int32  // the call starting it, or the class for a Thread subclass
	how     string // threading.Thread, executor.submit, asyncio.to_thread, ...
	targets []string
	// exprs are the callable expressions the start runs (Thread's target,
	// submit's first argument), for the workspace model to resolve
	// across files; empty for a Thread subclass.
	exprs  []int32
	within int32 // for a Thread subclass, the class whose run it is; else -1
	// many is set when the start runs its callable in several threads at
	// once: started in a loop or comprehension, or mapped over a pool
	// with more than one worker.
	many bool
	// param is, for a start inside a function whose callable is one of
	// that function's parameters, the parameter's index; else -1.
	param int
	fn    int32 // function holding node, or -1
	// owners are the objects whose methods the start runs: model for
	// Thread(target=model.generate). A module compiled in place, or whose
	// forward was replaced by a compiled one, runs compiled code whatever
	// method of it runs (torch.compile(model) compiles only its calls).
	owners []string
	// ext is, for a start the workspace model found through other files,
	// what it said of it; nil for the buffer's own starts.
	ext *ExternalStart
}

// executorTypes are the thread pools whose submit/map run callables in
// other threads.
var executorTypes = map[string]bool{
	"concurrent.futures.ThreadPoolExecutor":        true,
	"concurrent.futures.thread.ThreadPoolExecutor": true,
	"multiprocessing.pool.ThreadPool":              true,
	"multiprocessing.dummy.Pool":                   true,
}

// threadRunners run their first argument in a worker thread.
var threadRunners = map[string]bool{
	"asyncio.to_thread":                       true,
	"_thread.start_new_thread":                true,
	"anyio.to_thread.run_sync":                true,
	"starlette.concurrency.run_in_threadpool": true,
	"fastapi.concurrency.run_in_threadpool":   true,
}

// poolMethods run their first argument in a pool's threads.
var poolMethods = map[string]bool{
	"submit": true, "map": true, "apply_async": true, "apply": true,
	"imap": true, "imap_unordered": true, "starmap": true, "starmap_async": true, "map_async": true,
}

// manyMethods run their first argument over several inputs at once.
var manyMethods = map[string]bool{
	"map": true, "imap": true, "imap_unordered": true, "starmap": true, "starmap_async": true, "map_async": true,
}

// maxStartWrappers bounds how many functions deep a callable handed to a
// wrapper of a thread start is followed.
const maxStartWrappers = 2

// threadStarts finds every place the buffer runs a callable in another
// thread. Executors are found first, so that a pool used in the text
// before the line that makes it is still known.
func (a *analysis) threadStarts() {
	for _, c := range a.calls {
		a.work++
		a.executorCall(c)
	}
	a.executorParams()
	for _, c := range a.calls {
		a.work++
		a.threadCall(c)
	}
	for _, n := range a.classes {
		a.work++
		a.threadSubclass(n)
	}
	a.startWrappers()
}

// executorCall records names bound to thread pools: ex = Pool(...), with
// Pool() as ex, self.ex = Pool(...).
func (a *analysis) executorCall(c *callInfo) {
	t := a.t
	if !executorTypes[c.qual] {
		return
	}
	a.makesPools = true
	workers := a.poolWorkers(c)
	p := t.Parent(c.node)
	switch {
	case p >= 0 && t.Kind(p) == syntax.KindAssignment && t.Field(c.node) == syntax.FieldRight:
		if l := t.Child(p, syntax.FieldLeft); l >= 0 {
			a.execs[t.Text(l)] = workers
		}
	case p >= 0 && t.Kind(p) == syntax.KindAsPattern:
		if al := t.Child(p, syntax.FieldAlias); al >= 0 {
			a.execs[t.Text(al)] = workers
		}
	}
}

// poolWorkers is a pool constructor's worker count when it is a literal,
// else 0.
func (a *analysis) poolWorkers(c *callInfo) int {
	t := a.t
	n := int32(-1)
	if kw, ok := c.keyword("max_workers", t); ok {
		n = kw.value
	} else if kw, ok := c.keyword("processes", t); ok {
		n = kw.value
	} else if len(c.args) > 0 {
		n = c.args[0]
	}
	if n < 0 {
		return 0
	}
	v, err := strconv.Atoi(t.Text(a.resolve(n)))
	if err != nil || v < 1 {
		return 0
	}
	return v
}

// executorParams records the parameters that hold a thread pool: ones
// annotated with a pool type, and ones a call of the buffer passes a pool
// to (def run(pool): pool.submit(f) ... run(ThreadPoolExecutor())).
func (a *analysis) executorParams() {
	t := a.t
	for _, defs := range a.funcs {
		for _, def := range defs {
			ps := t.Child(def, syntax.FieldParameters)
			for _, p := range t.CodeChildren(ps) {
				a.work++
				typ := t.Child(p, syntax.FieldType)
				if typ < 0 {
					continue
				}
				name := t.Child(p, syntax.FieldName)
				if t.Kind(p) == syntax.KindTypedParameter {
					if cs := t.CodeChildren(p); len(cs) > 0 && t.Kind(cs[0]) == syntax.KindIdentifier {
						name = cs[0]
					}
				}
				if name < 0 {
					continue
				}
				ty := t.Unwrap(typ)
				if t.Kind(ty) == syntax.KindType {
					if cs := t.CodeChildren(ty); len(cs) == 1 {
						ty = cs[0]
					}
				}
				if executorTypes[a.chainQual(ty)] {
					a.execs[t.Text(name)] = 0
				}
			}
		}
	}
	// A pool passed to a function of the buffer; twice, for a pool handed
	// on one more level.
	if len(a.execs) == 0 && !a.makesPools {
		return
	}
	for range 2 {
		for _, c := range a.calls {
			a.work++
			defs := a.funcs[c.callee]
			if len(defs) != 1 || c.qual != "" {
				continue
			}
			params := a.params(defs[0])
			for i := range params {
				arg := a.argumentFor(c, params, i)
				if arg < 0 {
					continue
				}
				if w, ok := a.poolExpr(arg); ok {
					if _, known := a.execs[params[i].name]; !known {
						a.execs[params[i].name] = w
					}
				}
			}
		}
	}
}

// poolExpr reports whether expression n is a thread pool: a name bound to
// one, or a pool constructor call; and its worker count.
func (a *analysis) poolExpr(n int32) (int, bool) {
	t := a.t
	n = t.Unwrap(n)
	switch t.Kind(n) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		if t.Chain(n) == nil {
			return 0, false
		}
		w, ok := a.execs[t.Text(n)]
		return w, ok
	case syntax.KindCall:
		if executorTypes[a.chainQual(t.Child(n, syntax.FieldFunction))] {
			for _, c := range a.callsIn(n) {
				if c.node == n {
					return a.poolWorkers(c), true
				}
			}
			return 0, true
		}
	}
	return 0, false
}

// threadCall records a call that runs a callable in another thread.
func (a *analysis) threadCall(c *callInfo) {
	t := a.t
	start := func(how string, target int32, many bool) {
		a.addStart(threadStart{node: c.node, how: how, targets: a.targetNames(target), exprs: []int32{target}, within: -1,
			many: many || a.inLoop(c.node), param: a.paramIndex(c.fn, target), fn: c.fn, owners: a.ownerNames(target)})
	}
	switch c.qual {
	case "threading.Thread", "threading.Timer":
		if kw, ok := c.keyword("target", t); ok {
			start(c.qual, kw.value, false)
		} else if c.qual == "threading.Thread" && len(c.args) >= 2 {
			start(c.qual, c.args[1], false) // Thread(group, target)
		} else if c.qual == "threading.Timer" && len(c.args) >= 2 {
			start(c.qual, c.args[1], false) // Timer(interval, function)
		}
		return
	}
	if c.qual == "torch.utils.checkpoint.checkpoint" && len(c.args) >= 1 {
		// Backward recomputes the checkpointed function on autograd's
		// own threads.
		a.backwardStarts = append(a.backwardStarts, threadStart{node: c.node, how: "autograd's backward (torch.utils.checkpoint runs it again there)",
			targets: a.targetNames(c.args[0]), exprs: []int32{c.args[0]}, within: -1, param: -1, fn: c.fn, owners: a.ownerNames(c.args[0])})
		return
	}
	if threadRunners[c.qual] {
		if len(c.args) >= 1 {
			start(c.qual, c.args[0], false)
		}
		return
	}
	if executorTypes[c.qual] {
		// The initializer runs in every worker thread.
		if kw, ok := c.keyword("initializer", t); ok {
			start(c.qual+" initializer", kw.value, a.poolWorkers(c) != 1)
		}
		return
	}
	switch {
	case poolMethods[c.callee]:
		obj := t.Child(c.calleeNode, syntax.FieldObject)
		if obj < 0 || len(c.args) == 0 {
			return
		}
		recv := t.Unwrap(obj)
		// Only a name or a chain of names can be bound to an executor:
		// the text of anything else (a.map(f).map(g)...) is never looked up.
		var workers int
		ok := false
		switch {
		case t.Kind(recv) == syntax.KindIdentifier || t.Kind(recv) == syntax.KindAttribute && t.Chain(recv) != nil:
			workers, ok = a.execs[t.Text(recv)]
		case t.Kind(recv) == syntax.KindCall:
			workers, ok = a.poolExpr(recv)
		}
		if ok {
			start(oneLineText(t.Text(recv), 40)+"."+c.callee, c.args[0], workers != 1 && manyMethods[c.callee])
			if workers == 1 {
				a.starts[len(a.starts)-1].many = false
			}
		}
	case c.callee == "run_in_executor":
		if len(c.args) >= 2 { // loop.run_in_executor(executor or None, fn, ...)
			w, _ := a.poolExpr(c.args[0])
			start("run_in_executor", c.args[1], false)
			if w == 1 {
				a.starts[len(a.starts)-1].many = false
			}
		}
	}
}

func (a *analysis) addStart(st threadStart) { a.starts = append(a.starts, st) }

// oneLineText shortens text for a message.
func oneLineText(s string, limit int) string {
	s = syntax.OneLine(s)
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}

// inLoop reports whether node n runs in a loop or a comprehension of its
// own function (or of the module).
func (a *analysis) inLoop(n int32) bool {
	a.work++
	return a.t.loop[n] >= 0
}

// paramIndex returns the index of the parameter of function def that
// expression n names, or -1.
func (a *analysis) paramIndex(def, n int32) int {
	t := a.t
	n = t.Unwrap(n)
	if def < 0 || t.Kind(n) != syntax.KindIdentifier {
		return -1
	}
	for i, p := range a.params(def) {
		if p.name == t.Text(n) && !p.star && !p.splat {
			return i
		}
	}
	return -1
}

// threadSubclass records the run method of a threading.Thread subclass
// (or of a subclass of one defined in the buffer), and a target handed
// to Thread.__init__ in it.
func (a *analysis) threadSubclass(n int32) {
	t := a.t
	if !a.threadClassSet()[n] {
		return
	}
	name := ""
	if nm := t.Child(n, syntax.FieldName); nm >= 0 {
		name = t.Text(nm)
	}
	many := false
	made := 0
	if name != "" {
		for _, c := range a.callsNamed(name) {
			a.work++
			if c.node != n {
				made++
				many = many || a.inLoop(c.node)
			}
		}
	}
	a.addStart(threadStart{node: n, how: "threading.Thread subclass", targets: []string{"run"}, within: n,
		many: many || made > 1, param: -1, fn: -1})
	// super().__init__(target=f) or threading.Thread.__init__(self, target=f)
	for _, c := range a.callsIn(n) {
		a.work++
		if c.callee != "__init__" {
			continue
		}
		if kw, ok := c.keyword("target", t); ok {
			a.addStart(threadStart{node: c.node, how: "threading.Thread subclass", targets: a.targetNames(kw.value),
				within: -1, many: many || made > 1, param: -1, fn: c.fn})
		}
	}
}

// maxClassDepth bounds how many local base classes deep a Thread
// subclass is looked for.
const maxClassDepth = 4

// threadClassSet returns the classes of the buffer that derive from
// threading.Thread, directly or through at most maxClassDepth classes of
// the buffer named as bases; made once per analysis. It goes level by
// level, each level one pass over the bases, so it costs steps in
// proportion to the classes and bases whatever their names: a circle of
// bases, or a thousand classes of one name each naming it as a base, used
// to cost the square of the classes or more at every level.
func (a *analysis) threadClassSet() map[int32]bool {
	if a.threadClasses != nil {
		return a.threadClasses
	}
	t := a.t
	type localBase struct {
		class int32
		name  string
	}
	found := map[int32]bool{}
	var bases []localBase
	names := map[int32]string{}
	for _, c := range a.classes {
		a.work++
		if nm := t.Child(c, syntax.FieldName); nm >= 0 {
			names[c] = t.Text(nm)
		}
		sup := t.Child(c, syntax.FieldSuperclasses)
		if sup < 0 {
			continue
		}
		for _, b := range t.CodeChildren(sup) {
			a.work++
			switch {
			case a.chainQual(b) == "threading.Thread":
				found[c] = true
			case t.Kind(b) == syntax.KindIdentifier:
				bases = append(bases, localBase{class: c, name: t.Text(b)})
			}
		}
	}
	for depth := 1; depth <= maxClassDepth && len(bases) > 0; depth++ {
		// Up to two Thread classes of each name: a class may not count
		// as its own base, so one other is all that is asked.
		byName := map[string][]int32{}
		for c := range found {
			a.work++
			if nm, ok := names[c]; ok && len(byName[nm]) < 2 {
				byName[nm] = append(byName[nm], c)
			}
		}
		var next []int32
		rest := bases[:0]
		for _, b := range bases {
			a.work++
			if found[b.class] {
				continue
			}
			if slices.ContainsFunc(byName[b.name], func(c int32) bool { return c != b.class }) {
				next = append(next, b.class)
				continue
			}
			rest = append(rest, b)
		}
		if len(next) == 0 {
			break
		}
		for _, c := range next {
			found[c] = true
		}
		bases = rest
	}
	a.threadClasses = found
	return found
}

// startWrappers makes starts of the calls of functions that hand one of
// their parameters to a thread start: def run_async(fn, *a): return
// pool.submit(fn, *a) ... run_async(model, x) runs model in a thread.
func (a *analysis) startWrappers() {
	t := a.t
	from := 0
	for depth := 0; depth < maxStartWrappers && from < len(a.starts); depth++ {
		upto := len(a.starts)
		for _, st := range a.starts[from:upto] {
			a.work++
			if st.param < 0 || st.fn < 0 {
				continue
			}
			name := t.Child(st.fn, syntax.FieldName)
			if name < 0 {
				continue
			}
			params := a.params(st.fn)
			for _, c := range a.callsNamed(t.Text(name)) {
				a.work++
				if a.within(c.node, st.fn) {
					continue
				}
				arg := a.argumentFor(c, params, st.param)
				if arg < 0 {
					continue
				}
				a.addStart(threadStart{node: c.node, how: st.how + " (through " + t.Text(name) + ")",
					targets: a.targetNames(arg), within: -1, many: st.many || a.inLoop(c.node),
					param: a.paramIndex(c.fn, arg), fn: c.fn, owners: a.ownerNames(arg)})
			}
		}
		from = upto
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

// ownerNames names the object a bound method belongs to: model for
// model.generate, self.model for ... self.model.generate ("model").
func (a *analysis) ownerNames(n int32) []string {
	t := a.t
	n = t.Unwrap(n)
	if t.Kind(n) != syntax.KindAttribute {
		return nil
	}
	obj := t.Unwrap(t.Child(n, syntax.FieldObject))
	if t.Chain(obj) == nil {
		return nil
	}
	if name := t.LastName(obj); name != "" && name != "self" && name != "cls" {
		return []string{name}
	}
	return nil
}

// reach is what the thread starts of the buffer reach.
type reach struct {
	funcs map[int32]threadStart        // function definitions run in threads
	sites map[*compileSite]threadStart // compiled code run in threads
	// starts counts the thread starts that reach each compile site.
	starts map[*compileSite]int
}

// maxCallDepth bounds how many calls deep the thread analysis follows.
const maxCallDepth = 4

// threadReach follows calls from every thread start, a few levels deep, by
// name within the buffer. Each start claims what it reaches first; a
// function already reached at the same depth or less is not followed again
// (everything it leads to is claimed already), so a function is followed
// at most maxCallDepth+1 times however many starts reach it.
func (a *analysis) threadReach() reach { return a.reachOf(a.starts) }

// reachOf follows calls from the given starts (threadReach).
func (a *analysis) reachOf(starts []threadStart) reach {
	r := reach{funcs: map[int32]threadStart{}, sites: map[*compileSite]threadStart{}, starts: map[*compileSite]int{}}
	byFn := map[int32][]*compileSite{}
	for _, s := range a.sites {
		a.work++
		byFn[s.fn] = append(byFn[s.fn], s)
	}
	counted := map[*compileSite]bool{} // sites the current start has counted
	seen := map[string]bool{}          // names the current start has followed
	claim := func(s *compileSite, st threadStart) {
		if _, ok := r.sites[s]; !ok {
			r.sites[s] = st
		}
		if !counted[s] {
			counted[s] = true
			r.starts[s]++
		}
	}
	// A name's compiled results and a function's compile sites are
	// claimed for at most two starts: the checks ask only whether one or
	// several starts reach a site, and the work stays bounded.
	nameClaims := map[string]int{}
	ownerClaims := map[string]int{}
	// The definitions of a name walked twice are claimed twice and
	// followed from the shallower depth: a third walk at that depth or
	// deeper would change nothing, and a buffer that defines one name a
	// thousand times and starts it a thousand times would cost their
	// product.
	type walk struct{ times, depth int }
	walks := map[string]walk{}
	fnClaims := map[int32]int{}
	reached := map[int32]int{} // function → the least depth it was followed at
	// A Thread subclass's start runs its own class's run, not every
	// run of the buffer: methods by class, made on first use, so that a
	// buffer of many Thread subclasses costs each start its own methods.
	type methodKey struct {
		class int32
		name  string
	}
	var methods map[methodKey][]int32
	defsOf := func(name string, within int32, depth int) []int32 {
		if depth > 0 || within < 0 {
			return a.funcs[name]
		}
		if methods == nil {
			methods = map[methodKey][]int32{}
			for fn, defs := range a.funcs {
				for _, d := range defs {
					a.work++
					k := methodKey{a.t.clsOf[d], fn}
					methods[k] = append(methods[k], d)
				}
			}
		}
		return methods[methodKey{within, name}]
	}
	for _, st := range starts {
		names := st.targets
		clear(seen)
		clear(counted)
		for _, o := range st.owners {
			a.work++
			if ownerClaims[o] >= 2 {
				continue
			}
			ownerClaims[o]++
			for _, s := range a.siteByTarget[o] {
				a.work++
				if s.kind == siteInPlace || len(s.targets) > 1 && s.targets[1] == o {
					claim(s, st)
				}
			}
		}
		for depth := 0; depth <= maxCallDepth && len(names) > 0; depth++ {
			var next []string
			for _, name := range names {
				a.work++
				if seen[name] {
					continue
				}
				seen[name] = true
				if nameClaims[name] < 2 {
					nameClaims[name]++
					for _, s := range a.siteByTarget[name] {
						a.work++
						claim(s, st)
					}
				}
				if depth > 0 || st.within < 0 {
					w, ok := walks[name]
					if ok && w.times >= 2 && w.depth <= depth {
						continue
					}
					if !ok {
						w.depth = depth
					}
					walks[name] = walk{times: w.times + 1, depth: min(w.depth, depth)}
				}
				for _, def := range defsOf(name, st.within, depth) {
					a.work++
					if fnClaims[def] < 2 {
						fnClaims[def]++
						for _, s := range byFn[def] {
							a.work++
							claim(s, st)
						}
					}
					if d, ok := reached[def]; ok && d <= depth {
						continue
					}
					reached[def] = depth
					if _, ok := r.funcs[def]; !ok {
						r.funcs[def] = st
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
