package diagnose

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

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

// entryScan is what the catalogue's entries ask of a buffer beyond one
// call: which names hold instances of the types they name, the buffer's
// classes and the catalogue's classes they derive from, the handler
// classes handed to threading servers, and the servers told to run one
// request at a time. It is made once, in one pass over the calls.
type entryScan struct {
	insts   map[string][]string // a name's text → the types it holds an instance of
	bases   map[string][]string // a class of the buffer → its bases' quals
	classes map[string]int32    // a class of the buffer → its first definition
	served  map[string]bool     // names of classes handed to a threading server
	off     map[string][]int32  // "threaded" → app in app.run(threaded=False)
	// Made on first use, so that a class or a name started many times
	// costs its definitions once: a class's methods, and whether a name
	// is only ever an async def.
	methods map[int32][]string
	async   map[string]bool
	// instances maps a class whose instance an entry runs to its start:
	// a class handed over again makes the start many, not another one.
	instances map[int32]int
}

// threadStarts finds every place the buffer runs a callable in another
// thread. Executors and instances are found first, so that one used in
// the text before the line that makes it is still known.
func (a *analysis) threadStarts() {
	sc := &entryScan{insts: map[string][]string{}, bases: map[string][]string{}, classes: map[string]int32{},
		served: map[string]bool{}, off: map[string][]int32{}, methods: map[int32][]string{}, async: map[string]bool{},
		instances: map[int32]int{}}
	a.classBases(sc)
	for _, c := range a.calls {
		a.work++
		a.executorCall(c)
		a.scanCall(sc, c)
	}
	a.executorParams(sc)
	for _, c := range a.calls {
		a.work++
		a.threadCall(sc, c)
	}
	a.decoratedStarts()
	for _, n := range a.classes {
		a.work++
		a.threadSubclass(sc, n)
	}
	a.startWrappers()
}

// classBases records the buffer's classes and the quals of their bases.
func (a *analysis) classBases(sc *entryScan) {
	t := a.t
	for _, c := range a.classes {
		a.work++
		nm := t.Child(c, syntax.FieldName)
		if nm < 0 {
			continue
		}
		name := t.Text(nm)
		if _, ok := sc.classes[name]; !ok {
			sc.classes[name] = c
		}
		sup := t.Child(c, syntax.FieldSuperclasses)
		if sup < 0 {
			continue
		}
		for _, b := range t.CodeChildren(sup) {
			a.work++
			if q := a.chainQual(b); q != "" && len(sc.bases[name]) < 8 {
				sc.bases[name] = append(sc.bases[name], q)
			}
		}
	}
}

// makes returns what a call of callee makes: its qual, or the bases of
// the buffer's class it names.
func (a *analysis) makes(sc *entryScan, callee int32) []string {
	t := a.t
	callee = t.Unwrap(callee)
	if t.Kind(callee) == syntax.KindIdentifier {
		if bs, ok := sc.bases[t.Text(callee)]; ok {
			return bs
		}
	}
	if q := a.chainQual(callee); q != "" {
		return []string{q}
	}
	return nil
}

// boundName is the text of the name a call's value is bound to: x in
// x = f(...) or with f(...) as x; "" for none.
func (a *analysis) boundName(c *callInfo) string {
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

// scanCall records what one call tells the catalogue's entries: a name
// bound to an instance they ask about, a handler class handed to a
// threading server, a server run with threaded=False.
func (a *analysis) scanCall(sc *entryScan, c *callInfo) {
	t := a.t
	kinds := a.makes(sc, c.calleeNode)
	for _, q := range kinds {
		a.work++
		if isInstanceType(q) {
			if name := a.boundName(c); name != "" {
				sc.insts[name] = kinds
			}
			break
		}
	}
	if slices.ContainsFunc(kinds, isThreadingServer) {
		for _, arg := range c.args {
			a.work++
			if name := a.handlerName(arg); name != "" {
				sc.served[name] = true
			}
		}
		if kw, ok := c.keyword("RequestHandlerClass", t); ok {
			if name := a.handlerName(kw.value); name != "" {
				sc.served[name] = true
			}
		}
	}
	if len(c.kwargs) == 0 || t.Kind(c.calleeNode) != syntax.KindAttribute {
		return
	}
	for _, kw := range c.kwargs {
		a.work++
		if k := t.Text(kw.name); offKws[k] && t.Kind(t.Unwrap(kw.value)) == syntax.KindFalse && len(sc.off[k]) < 4 {
			sc.off[k] = append(sc.off[k], t.Child(c.calleeNode, syntax.FieldObject))
		}
	}
}

// handlerName names the class a server is handed: Handler, or
// functools.partial(Handler, directory=...).
func (a *analysis) handlerName(n int32) string {
	t := a.t
	n = t.Unwrap(n)
	if t.Kind(n) == syntax.KindCall && a.chainQual(t.Child(n, syntax.FieldFunction)) == "functools.partial" {
		if args := t.CodeChildren(t.Child(n, syntax.FieldArguments)); len(args) > 0 {
			n = t.Unwrap(args[0])
		}
	}
	if t.Kind(n) == syntax.KindIdentifier {
		return t.Text(n)
	}
	return ""
}

// turnedOff reports whether the buffer runs an instance of the entry's
// types one request at a time (app.run(threaded=False)): then neither the
// app's views nor its blueprints' run on other threads.
func (a *analysis) turnedOff(sc *entryScan, e *threadEntry) bool {
	if e.offKw == "" {
		return false
	}
	for _, r := range sc.off[e.offKw] {
		if a.isInstance(sc, r, e.on) {
			return true
		}
	}
	return false
}

// isInstance reports whether expression n holds an instance of one of
// types: a name bound to one, or a call making one. No types is any.
func (a *analysis) isInstance(sc *entryScan, n int32, types []string) bool {
	if len(types) == 0 {
		return true
	}
	t := a.t
	n = t.Unwrap(n)
	var kinds []string
	switch t.Kind(n) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		if t.Chain(n) != nil {
			kinds = sc.insts[t.Text(n)]
		}
	case syntax.KindCall:
		kinds = a.makes(sc, t.Child(n, syntax.FieldFunction))
	}
	for _, q := range kinds {
		a.work++
		if isType(q, types) {
			return true
		}
	}
	return false
}

// executorCall records names bound to thread pools: ex = Pool(...), with
// Pool() as ex, self.ex = Pool(...).
func (a *analysis) executorCall(c *callInfo) {
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
// to (def run(pool): pool.submit(f) ... run(ThreadPoolExecutor())); and
// those annotated with a type the catalogue asks instances of
// (background_tasks: BackgroundTasks).
func (a *analysis) executorParams(sc *entryScan) {
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

// threadCall records a call that runs a callable in another thread.
func (a *analysis) threadCall(sc *entryScan, c *callInfo) {
	t := a.t
	start := func(how string, target int32, many bool) {
		a.addStart(threadStart{node: c.node, how: how, targets: a.targetNames(target), exprs: []int32{target}, within: -1,
			many: many || a.inLoop(c.node), param: a.paramIndex(c.fn, target), fn: c.fn, owners: a.ownerNames(target)})
	}
	if p := t.Parent(c.node); p >= 0 && t.Kind(p) == syntax.KindDecorator {
		a.decoratorStart(sc, c, p)
	}
	if es := byQual[c.qual]; len(es) > 0 {
		e := &threadCatalogue[es[0]]
		switch e.kind {
		case entryCall:
			if target := e.callableArg(c, t); target >= 0 {
				a.entryStart(sc, e, c, target)
			}
		case entryBackward:
			// Backward recomputes the checkpointed function on autograd's
			// own threads.
			if target := e.callableArg(c, t); target >= 0 {
				a.backwardStarts = append(a.backwardStarts, threadStart{node: c.node, how: e.how,
					targets: a.targetNames(target), exprs: []int32{target}, within: -1, param: -1, fn: c.fn,
					owners: a.ownerNames(target), entry: e.id})
			}
		case entryPool:
			// The initializer runs in every worker thread.
			if target := e.callableArg(c, t); target >= 0 {
				start(c.qual+" initializer", target, a.poolWorkers(c) != 1)
				a.starts[len(a.starts)-1].entry = e.id
			}
		}
		return
	}
	if poolMethods[c.callee] && a.poolMethodCall(sc, c, start) {
		return
	}
	for _, i := range byMethod[c.callee] {
		e := &threadCatalogue[i]
		switch e.kind {
		case entryLoopExecutor:
			if target := e.callableArg(c, t); target >= 0 { // loop.run_in_executor(executor or None, fn, ...)
				w, _ := a.poolExpr(c.args[0])
				start(e.how, target, false)
				st := &a.starts[len(a.starts)-1]
				st.entry = e.id
				if w == 1 {
					st.many = false
				}
				return
			}
		case entryMethod:
			recv := t.Child(c.calleeNode, syntax.FieldObject)
			if recv >= 0 && e.signal != "" { // thread.started.connect(slot): the signal's owner
				if r := t.Unwrap(recv); t.Kind(r) == syntax.KindAttribute && t.LastName(r) == e.signal {
					recv = t.Child(r, syntax.FieldObject)
				} else {
					continue
				}
			}
			if recv < 0 || t.Kind(c.calleeNode) != syntax.KindAttribute || !a.isInstance(sc, recv, e.on) {
				continue
			}
			if a.turnedOff(sc, e) {
				continue
			}
			if target := e.callableArg(c, t); target >= 0 {
				a.entryStart(sc, e, c, target)
				return
			}
		}
	}
	if strings.HasPrefix(c.callee, "add_") && strings.HasSuffix(c.callee, "Servicer_to_server") {
		a.servicerStart(sc, c)
	}
}

// poolMethodCall records pool.submit(f), pool.map(f, xs) and the like,
// when the receiver is a thread pool.
func (a *analysis) poolMethodCall(sc *entryScan, c *callInfo, start func(string, int32, bool)) bool {
	t := a.t
	obj := t.Child(c.calleeNode, syntax.FieldObject)
	if obj < 0 || len(c.args) == 0 {
		return false
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
	if !ok {
		return false
	}
	start(oneLineText(t.Text(recv), 40)+"."+c.callee, c.args[0], workers != 1 && manyMethods[c.callee])
	st := &a.starts[len(a.starts)-1]
	if workers == 1 {
		st.many = false
	}
	st.entry = a.poolEntry(sc, recv, c.callee)
	return true
}

// poolEntry names the pool entry of a pool method's call: the one whose
// pool the receiver is known to be, else the first whose methods include
// the method (a pool handed in as a parameter).
func (a *analysis) poolEntry(sc *entryScan, recv int32, method string) string {
	id := ""
	for i := range threadCatalogue {
		e := &threadCatalogue[i]
		if e.kind != entryPool || !slices.Contains(e.methods, method) {
			continue
		}
		if a.isInstance(sc, recv, e.quals) {
			return e.id
		}
		if id == "" {
			id = e.id
		}
	}
	return id
}

// entryStart records an entry's start of the callable expression target,
// passed by call c: an async def where only a plain def goes to a
// thread is not one; an instance of a class of the buffer runs the
// methods the entry names.
func (a *analysis) entryStart(sc *entryScan, e *threadEntry, c *callInfo, target int32) {
	if k := a.t.Kind(a.t.Unwrap(target)); k == syntax.KindNone {
		return // app.load(None, ...): nothing runs
	}
	if e.syncOnly && !e.iterates && !a.syncCallable(sc, target) {
		return
	}
	how := e.how
	if how == "" {
		how = c.qual
	}
	st := threadStart{node: c.node, how: how, within: -1, many: e.many || a.inLoop(c.node),
		param: -1, fn: c.fn, entry: e.id}
	if e.iterates {
		names, fn, sync := a.iterated(sc, target)
		if len(names) == 0 || e.syncOnly && !sync {
			return
		}
		st.targets = names
		if fn >= 0 {
			st.exprs = []int32{fn}
		}
		a.addStart(st)
		return
	}
	if cls, names := a.instanceMethods(sc, target, e.instance); cls >= 0 {
		st.within, st.targets = cls, names
		a.addInstanceStart(sc, st)
		return
	}
	st.targets, st.exprs = a.targetNames(target), []int32{target}
	st.param, st.owners = a.paramIndex(c.fn, target), a.ownerNames(target)
	a.addStart(st)
}

// decoratorStart records @app.get(...) and the like on a def: the
// decorated function runs on the framework's threads. dec is the
// decorator whose expression is the call c.
func (a *analysis) decoratorStart(sc *entryScan, c *callInfo, dec int32) {
	t := a.t
	dd := t.Parent(dec)
	if dd < 0 || t.Kind(dd) != syntax.KindDecoratedDefinition || t.Kind(c.calleeNode) != syntax.KindAttribute {
		return
	}
	def := t.Child(dd, syntax.FieldDefinition)
	name := t.Child(def, syntax.FieldName)
	if def < 0 || t.Kind(def) != syntax.KindFunctionDefinition || name < 0 {
		return
	}
	recv := t.Child(c.calleeNode, syntax.FieldObject)
	for _, i := range byDecorator[c.callee] {
		a.work++
		e := &threadCatalogue[i]
		if !a.isInstance(sc, recv, e.on) || a.turnedOff(sc, e) {
			continue
		}
		if e.syncOnly && isAsyncDef(t, def) {
			return
		}
		a.addStart(threadStart{node: c.node, how: e.how, targets: []string{t.Text(name)}, exprs: []int32{name},
			within: -1, many: e.many || a.inLoop(c.node), param: -1, fn: c.fn, entry: e.id})
		return
	}
}

// decoratedStarts records the defs decorated with a catalogue decorator
// (@st.cache_resource, bare or called), in source order.
func (a *analysis) decoratedStarts() {
	t := a.t
	imported := false // one of the decorators' packages, else no def is looked at
	for _, imp := range a.buf.Imports() {
		a.work++
		root, _, _ := strings.Cut(imp.Qualname, ".")
		imported = imported || decoratedRoots[root]
	}
	if !imported {
		return
	}
	var defs []int32
	for _, ds := range a.funcs {
		for _, d := range ds {
			a.work++
			if p := t.Parent(d); p >= 0 && t.Kind(p) == syntax.KindDecoratedDefinition {
				defs = append(defs, d)
			}
		}
	}
	slices.Sort(defs)
	for _, d := range defs {
		name := t.Child(d, syntax.FieldName)
		for _, dec := range t.CodeChildren(t.Parent(d)) {
			a.work++
			if t.Kind(dec) != syntax.KindDecorator {
				continue
			}
			cs := t.CodeChildren(dec)
			if len(cs) != 1 {
				continue
			}
			x := t.Unwrap(cs[0])
			if t.Kind(x) == syntax.KindCall {
				x = t.Child(x, syntax.FieldFunction)
			}
			es := byDecorated[a.chainQual(x)]
			if len(es) == 0 || name < 0 {
				continue
			}
			e := &threadCatalogue[es[0]]
			a.addStart(threadStart{node: dec, how: e.how, targets: []string{t.Text(name)}, exprs: []int32{name},
				within: -1, many: e.many, param: -1, fn: t.fnOf[dec], entry: e.id})
			break
		}
	}
}

// servicerStart records a generated add_<Service>Servicer_to_server(
// servicer, server) with a server of the catalogue (grpc.server, not
// grpc.aio.server): the servicer's methods run in the server's pool.
func (a *analysis) servicerStart(sc *entryScan, c *callInfo) {
	t := a.t
	for i := range threadCatalogue {
		e := &threadCatalogue[i]
		if e.kind != entryServicer {
			continue
		}
		server := int32(-1)
		if kw, ok := c.keyword("server", t); ok {
			server = kw.value
		} else if len(c.args) >= 2 {
			server = c.args[1]
		}
		servicer := int32(-1)
		if kw, ok := c.keyword("servicer", t); ok {
			servicer = kw.value
		} else if len(c.args) >= 1 {
			servicer = c.args[0]
		}
		if server < 0 || servicer < 0 || !a.isInstance(sc, server, e.on) {
			continue
		}
		if cls, names := a.instanceMethods(sc, servicer, e.instance); cls >= 0 {
			a.addInstanceStart(sc, threadStart{node: c.node, how: e.how, targets: names, within: cls,
				many: e.many || a.inLoop(c.node), param: -1, fn: c.fn, entry: e.id})
		}
	}
}

// iterated returns what runs when a framework iterates n: the function
// a call of it makes a generator of (gen(prompt): gen, its name node, and
// whether it is known to be a plain def), or the calls a generator
// expression makes.
func (a *analysis) iterated(sc *entryScan, n int32) (names []string, fn int32, sync bool) {
	t := a.t
	v := a.resolve(n)
	switch t.Kind(v) {
	case syntax.KindCall:
		f := t.Unwrap(t.Child(v, syntax.FieldFunction))
		if k := t.Kind(f); k != syntax.KindIdentifier && k != syntax.KindAttribute {
			return nil, -1, false
		}
		if name := t.LastName(f); name != "" {
			return []string{name}, f, a.syncCallable(sc, f)
		}
	case syntax.KindGeneratorExpression:
		for _, c := range a.callsIn(v) {
			names = append(names, c.callee)
		}
		return names, -1, true
	}
	return nil, -1, false
}

// addInstanceStart adds a start that runs methods of an instance of a
// class of the buffer, once per class: handed over again, the class's
// methods run in several threads at once.
func (a *analysis) addInstanceStart(sc *entryScan, st threadStart) {
	if i, ok := sc.instances[st.within]; ok {
		a.starts[i].many = true
		return
	}
	sc.instances[st.within] = len(a.starts)
	a.addStart(st)
}

// instanceMethods returns, when n is an instance of a class of the buffer
// (a call of it, of its as_view(), or a name bound once to one), the
// class and those of its methods that methods names ("*": every one not
// starting with "_"); -1 otherwise.
func (a *analysis) instanceMethods(sc *entryScan, n int32, methods []string) (int32, []string) {
	if len(methods) == 0 {
		return -1, nil
	}
	t := a.t
	v := a.resolve(n)
	if t.Kind(v) != syntax.KindCall {
		return -1, nil
	}
	f := t.Unwrap(t.Child(v, syntax.FieldFunction))
	if t.Kind(f) == syntax.KindAttribute && t.LastName(f) == "as_view" { // Django's PredictView.as_view()
		f = t.Unwrap(t.Child(f, syntax.FieldObject))
	}
	if t.Kind(f) != syntax.KindIdentifier {
		return -1, nil
	}
	cls, ok := sc.classes[t.Text(f)]
	if !ok {
		return -1, nil
	}
	if _, ok := sc.instances[cls]; ok || !slices.Contains(methods, "*") {
		return cls, methods // started already, or the methods named
	}
	var names []string
	for _, m := range a.classMethods(sc, cls) {
		if !strings.HasPrefix(m, "_") {
			names = append(names, m)
		}
	}
	return cls, names
}

// classMethods names the functions a class's body defines.
func (a *analysis) classMethods(sc *entryScan, cls int32) []string {
	if ms, ok := sc.methods[cls]; ok {
		return ms
	}
	t := a.t
	out := []string{}
	for _, s := range t.CodeChildren(t.Child(cls, syntax.FieldBody)) {
		a.work++
		if t.Kind(s) == syntax.KindDecoratedDefinition {
			s = t.Child(s, syntax.FieldDefinition)
		}
		if s >= 0 && t.Kind(s) == syntax.KindFunctionDefinition {
			if nm := t.Child(s, syntax.FieldName); nm >= 0 {
				out = append(out, t.Text(nm))
			}
		}
	}
	sc.methods[cls] = out
	return out
}

// isAsyncDef reports whether a function definition is an async def.
func isAsyncDef(t *tree, def int32) bool {
	return bytes.HasPrefix(t.Bytes(def), []byte("async"))
}

// syncCallable reports whether expression n is known to be called as it
// is, not awaited: a lambda, a generator expression, a name the buffer
// defines with a plain def, or one bound to what torch.compile made. A
// name from elsewhere may be an async def: not known, so not a start
// (no false warning where a framework awaits it on its event loop).
func (a *analysis) syncCallable(sc *entryScan, n int32) bool {
	t := a.t
	n = t.Unwrap(n)
	switch t.Kind(n) {
	case syntax.KindLambda, syntax.KindGeneratorExpression:
		return true
	case syntax.KindIdentifier, syntax.KindAttribute:
		name := t.LastName(n)
		if len(a.funcs[name]) > 0 {
			return !a.asyncName(sc, name)
		}
		return len(a.siteByTarget[name]) > 0
	case syntax.KindCall: // functools.partial(f, ...)
		if names := a.targetNames(n); len(names) == 1 && len(a.funcs[names[0]]) > 0 {
			return !a.asyncName(sc, names[0])
		}
	}
	return false
}

// asyncName reports whether the buffer defines name only as async defs:
// a framework awaits those on its event loop.
func (a *analysis) asyncName(sc *entryScan, name string) bool {
	t := a.t
	if v, ok := sc.async[name]; ok {
		return v
	}
	defs := a.funcs[name]
	async := len(defs) > 0
	for _, d := range defs {
		a.work++
		if !isAsyncDef(t, d) {
			async = false
			break
		}
	}
	sc.async[name] = async
	return async
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

// threadSubclass records the methods that run on a thread of a subclass
// of a catalogue class (threading.Thread's run, a request handler's
// handle and do_GET, …), directly or through subclasses defined in the
// buffer, and a target handed to the base's __init__ in it
// (super().__init__(target=f)).
func (a *analysis) threadSubclass(sc *entryScan, n int32) {
	t := a.t
	i, ok := a.threadClassSet()[n]
	if !ok {
		return
	}
	e := &threadCatalogue[i]
	name := ""
	if nm := t.Child(n, syntax.FieldName); nm >= 0 {
		name = t.Text(nm)
	}
	if e.served && !sc.served[name] {
		return
	}
	many := e.many
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
	targets := e.methods
	if e.prefix != "" {
		targets = slices.Clone(targets)
		for _, m := range a.classMethods(sc, n) {
			if strings.HasPrefix(m, e.prefix) {
				targets = append(targets, m)
			}
		}
	}
	a.addStart(threadStart{node: n, how: e.how, targets: targets, within: n,
		many: many || made > 1, param: -1, fn: -1, entry: e.id})
	if len(e.kws) == 0 {
		return
	}
	// super().__init__(target=f) or threading.Thread.__init__(self, target=f)
	for _, c := range a.callsIn(n) {
		a.work++
		if c.callee != "__init__" {
			continue
		}
		for _, k := range e.kws {
			if kw, ok := c.keyword(k, t); ok {
				a.addStart(threadStart{node: c.node, how: e.how, targets: a.targetNames(kw.value), exprs: []int32{kw.value},
					within: -1, many: many || made > 1, param: -1, fn: c.fn, entry: e.id})
			}
		}
	}
}

// maxClassDepth bounds how many local base classes deep a subclass of a
// catalogue class is looked for.
const maxClassDepth = 4

// threadClassSet returns the classes of the buffer that derive from a
// catalogue class (threading.Thread, QThread, a request handler), directly
// or through at most maxClassDepth classes of the buffer named as bases,
// each with its entry; made once per analysis. It goes level by level,
// each level one pass over the bases, so it costs steps in proportion to
// the classes and bases whatever their names: a circle of bases, or a
// thousand classes of one name each naming it as a base, used to cost the
// square of the classes or more at every level.
func (a *analysis) threadClassSet() map[int32]int {
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
					param: a.paramIndex(c.fn, arg), fn: c.fn, owners: a.ownerNames(arg), entry: st.entry})
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
	case syntax.KindSubscript: // Thread(target=models["a"]): what the container holds (values.go)
		if name := a.containerName(n); name != "" {
			return []string{name}
		}
	case syntax.KindLambda:
		body := t.Child(n, syntax.FieldBody)
		if body < 0 {
			return nil
		}
		var out []string
		for _, c := range a.callsIn(body) {
			out = a.calleeKeys(out, c)
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
						next = a.calleeKeys(next, c)
					}
				}
			}
			names = next
		}
	}
	return r
}
