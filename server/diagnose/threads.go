package diagnose

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// threadStart is a place that runs a callable in another thread.
type threadStart struct {
	node    int32  // the call starting it, the decorator, or the class for a subclass
	how     string // threading.Thread, executor.submit, asyncio.to_thread, ...
	targets []string
	// exprs are the callable expressions the start runs (Thread's target,
	// submit's first argument, a decorated function's name), for the
	// workspace model to resolve across files; empty for a subclass.
	exprs  []int32
	within int32 // for a subclass or an instance, the class whose methods run; else -1
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
	// entry is the id of the catalogue entry that made the start.
	entry string
}

// maxStartWrappers bounds how many functions deep a callable handed to a
// wrapper of a thread start is followed.
const maxStartWrappers = 2

// callableArg returns the argument of c that an entry runs: by one of
// its keywords, else at its position; -1 when c passes none.
func (e *threadEntry) callableArg(c *callInfo, t *tree) int32 {
	for _, k := range e.kws {
		if kw, ok := c.keyword(k, t); ok {
			return kw.value
		}
	}
	if e.arg >= 0 && len(c.args) > e.arg {
		return c.args[e.arg]
	}
	if g := t.Child(c.node, syntax.FieldArguments); e.arg == 0 && t.Kind(g) == syntax.KindGeneratorExpression {
		return g // f(x for x in xs): the generator is the call's only argument
	}
	return -1
}

// isAsyncDef reports whether a function definition is an async def.
func isAsyncDef(t *tree, def int32) bool {
	return bytes.HasPrefix(t.Bytes(def), []byte("async"))
}

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

// maxClassDepth bounds how many local base classes deep a subclass of a
// catalogue class is looked for.
const maxClassDepth = 4

// reach is what the thread starts of the buffer reach.
type reach struct {
	funcs map[int32]threadStart        // function definitions run in threads
	sites map[*compileSite]threadStart // compiled code run in threads
	// starts counts the thread starts that reach each compile site.
	starts map[*compileSite]int
}

// maxCallDepth bounds how many calls deep the thread analysis follows.
const maxCallDepth = 4

// threadStarts finds every place the buffer runs a callable in another
// thread. Executors and instances are found first, so that one used in
// the text before the line that makes it is still known.
func (a threadFacts) threadStarts() {
	sc := &entryScan{a: a.analysis, insts: map[string][]string{}, bases: map[string][]string{}, classes: map[string]int32{},
		served: map[string]bool{}, off: map[string][]int32{}, methods: map[int32][]string{}, async: map[string]bool{},
		instances: map[int32]int{}}
	sc.classBases()
	for _, c := range a.calls {
		a.work++
		a.executorCall(c)
		sc.scanCall(c)
	}
	a.executorParams(sc)
	for _, c := range a.calls {
		a.work++
		sc.threadCall(c)
	}
	sc.decoratedStarts()
	for _, n := range a.classes {
		a.work++
		sc.threadSubclass(n)
	}
	a.startWrappers()
}

// boundName is the text of the name a call's value is bound to: x in
// x = f(...) or with f(...) as x; "" for none.
func (a threadFacts) boundName(c *callInfo) string {
	t := a.t
	p := t.Parent(c.node)
	switch {
	case p >= 0 && t.Kind(p) == syntax.KindAssignment && t.Field(c.node) == syntax.FieldRight:
		if l := t.Child(p, syntax.FieldLeft); l >= 0 {
			return t.Text(l)
		}
	case p >= 0 && t.Kind(p) == syntax.KindAsPattern:
		if al := t.Child(p, syntax.FieldAlias); al >= 0 {
			return t.Text(al)
		}
	}
	return ""
}

// executorCall records names bound to thread pools: ex = Pool(...), with
// Pool() as ex, self.ex = Pool(...).
func (a threadFacts) executorCall(c *callInfo) {
	if !executorTypes[c.qual] {
		return
	}
	a.makesPools = true
	if name := a.boundName(c); name != "" {
		a.execs[name] = a.poolWorkers(c)
	}
}

// poolWorkers is a pool constructor's worker count when it is a literal,
// else 0.
func (a threadFacts) poolWorkers(c *callInfo) int {
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
// to (def run(pool): pool.submit(f) ... run(ThreadPoolExecutor())); and
// those annotated with a type the catalogue asks instances of
// (background_tasks: BackgroundTasks).
func (a threadFacts) executorParams(sc *entryScan) {
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
				switch q := a.chainQual(ty); {
				case executorTypes[q]:
					a.execs[t.Text(name)] = 0
					sc.insts[t.Text(name)] = []string{q}
				case isInstanceType(q):
					sc.insts[t.Text(name)] = []string{q}
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
				arg := siteFacts(a).argumentFor(c, params, i)
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
func (a threadFacts) poolExpr(n int32) (int, bool) {
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

func (a threadFacts) addStart(st threadStart) { a.starts = append(a.starts, st) }

// paramIndex returns the index of the parameter of function def that
// expression n names, or -1.
func (a threadFacts) paramIndex(def, n int32) int {
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

// threadClassSet returns the classes of the buffer that derive from a
// catalogue class (threading.Thread, QThread, a request handler), directly
// or through at most maxClassDepth classes of the buffer named as bases,
// each with its entry; made once per analysis. It goes level by level,
// each level one pass over the bases, so it costs steps in proportion to
// the classes and bases whatever their names: a circle of bases, or a
// thousand classes of one name each naming it as a base, used to cost the
// square of the classes or more at every level.
func (a threadFacts) threadClassSet() map[int32]int {
	if a.threadClasses != nil {
		return a.threadClasses
	}
	t := a.t
	type localBase struct {
		class int32
		name  string
	}
	found := map[int32]int{}
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
			if es := byBase[a.chainQual(b)]; len(es) > 0 {
				if _, ok := found[c]; !ok {
					found[c] = es[0]
				}
			} else if t.Kind(b) == syntax.KindIdentifier {
				bases = append(bases, localBase{class: c, name: t.Text(b)})
			}
		}
	}
	type derived struct {
		class int32
		entry int
	}
	for depth := 1; depth <= maxClassDepth && len(bases) > 0; depth++ {
		// Up to two found classes of each name: a class may not count
		// as its own base, so one other is all that is asked.
		byName := map[string][]int32{}
		for c := range found {
			a.work++
			if nm, ok := names[c]; ok && len(byName[nm]) < 2 {
				byName[nm] = append(byName[nm], c)
			}
		}
		var next []derived
		rest := bases[:0]
		for _, b := range bases {
			a.work++
			if _, ok := found[b.class]; ok {
				continue
			}
			if i := slices.IndexFunc(byName[b.name], func(c int32) bool { return c != b.class }); i >= 0 {
				next = append(next, derived{b.class, found[byName[b.name][i]]})
				continue
			}
			rest = append(rest, b)
		}
		if len(next) == 0 {
			break
		}
		for _, d := range next {
			found[d.class] = d.entry
		}
		bases = rest
	}
	a.threadClasses = found
	return found
}

// startWrappers makes starts of the calls of functions that hand one of
// their parameters to a thread start: def run_async(fn, *a): return
// pool.submit(fn, *a) ... run_async(model, x) runs model in a thread.
func (a threadFacts) startWrappers() {
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
				arg := siteFacts(a).argumentFor(c, params, st.param)
				if arg < 0 {
					continue
				}
				a.addStart(threadStart{node: c.node, how: st.how + " (through " + t.Text(name) + ")",
					targets: a.targetNames(arg), within: -1, many: st.many || a.inLoop(c.node),
					param: a.paramIndex(c.fn, arg), fn: c.fn, owners: a.ownerNames(arg), entry: st.entry})
			}
		}
		from = upto
	}
}

// targetNames returns the names of the functions a callable expression
// runs: f, obj.method, lambda: f(x), functools.partial(f, ...).
func (a threadFacts) targetNames(n int32) []string {
	t := a.t
	n = t.Unwrap(n)
	switch t.Kind(n) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		if name := t.LastName(n); name != "" {
			return valueFacts(a).withHeld([]string{name}, name) // and the handlers it holds (values.go)
		}
	case syntax.KindSubscript: // Thread(target=models["a"]): what the container holds (values.go)
		if name := valueFacts(a).containerName(n); name != "" {
			return valueFacts(a).withHeld([]string{name}, name)
		}
	case syntax.KindLambda:
		body := t.Child(n, syntax.FieldBody)
		if body < 0 {
			return nil
		}
		var out []string
		for _, c := range a.callsIn(body) {
			out = valueFacts(a).calleeKeys(out, c)
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
func (a threadFacts) ownerNames(n int32) []string {
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

// threadReach follows calls from every thread start, a few levels deep, by
// name within the buffer. Each start claims what it reaches first; a
// function already reached at the same depth or less is not followed again
// (everything it leads to is claimed already), so a function is followed
// at most maxCallDepth+1 times however many starts reach it.
func (a threadFacts) threadReach() reach { return a.reachOf(a.starts) }

// reachOf follows calls from the given starts (threadReach).
func (a threadFacts) reachOf(starts []threadStart) reach {
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
						next = valueFacts(a).calleeKeys(next, c)
					}
				}
			}
			names = next
		}
	}
	return r
}

// threadFacts are the analysis's facts of one family: the thread starts of the buffer and what they reach. They read
// and fill the analysis they embed; the rules read them.
type threadFacts struct{ *analysis }
