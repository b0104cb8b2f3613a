package diagnose

import (
	"slices"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// How a buffer reaches the entries of the thread catalogue (threadcat.go):
// one scan of the buffer per analysis, whose methods turn each entry the
// buffer reaches into threadStarts.

// entryScan is what the catalogue's entries ask of a buffer beyond one
// call: which names hold instances of the types they name, the buffer's
// classes and the catalogue's classes they derive from, the handler
// classes handed to threading servers, and the servers told to run one
// request at a time. It is made once, in one pass over the calls.
type entryScan struct {
	a       *analysis
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

// classBases records the buffer's classes and the quals of their bases.
func (sc *entryScan) classBases() {
	a := sc.a
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
func (sc *entryScan) makes(callee int32) []string {
	a := sc.a
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

// scanCall records what one call tells the catalogue's entries: a name
// bound to an instance they ask about, a handler class handed to a
// threading server, a server run with threaded=False.
func (sc *entryScan) scanCall(c *callInfo) {
	a := sc.a
	t := a.t
	kinds := sc.makes(c.calleeNode)
	for _, q := range kinds {
		a.work++
		if isInstanceType(q) {
			if name := (threadFacts{a}).boundName(c); name != "" {
				sc.insts[name] = kinds
			}
			break
		}
	}
	if slices.ContainsFunc(kinds, isThreadingServer) {
		for _, arg := range c.args {
			a.work++
			if name := sc.handlerName(arg); name != "" {
				sc.served[name] = true
			}
		}
		if kw, ok := c.keyword("RequestHandlerClass", t); ok {
			if name := sc.handlerName(kw.value); name != "" {
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
func (sc *entryScan) handlerName(n int32) string {
	a := sc.a
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
func (sc *entryScan) turnedOff(e *threadEntry) bool {
	if e.offKw == "" {
		return false
	}
	for _, r := range sc.off[e.offKw] {
		if sc.isInstance(r, e.on) {
			return true
		}
	}
	return false
}

// isInstance reports whether expression n holds an instance of one of
// types: a name bound to one, or a call making one. No types is any.
func (sc *entryScan) isInstance(n int32, types []string) bool {
	a := sc.a
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
		kinds = sc.makes(t.Child(n, syntax.FieldFunction))
	}
	for _, q := range kinds {
		a.work++
		if isType(q, types) {
			return true
		}
	}
	return false
}

// threadCall records a call that runs a callable in another thread.
func (sc *entryScan) threadCall(c *callInfo) {
	a := sc.a
	t := a.t
	start := func(how string, target int32, many bool) {
		(threadFacts{a}).addStart(threadStart{node: c.node, how: how, targets: (threadFacts{a}).targetNames(target), exprs: []int32{target}, within: -1,
			many: many || a.inLoop(c.node), param: (threadFacts{a}).paramIndex(c.fn, target), fn: c.fn, owners: (threadFacts{a}).ownerNames(target)})
	}
	if p := t.Parent(c.node); p >= 0 && t.Kind(p) == syntax.KindDecorator {
		sc.decoratorStart(c, p)
	}
	if es := byQual[c.qual]; len(es) > 0 {
		e := &threadCatalogue[es[0]]
		switch e.kind {
		case entryCall:
			if target := e.callableArg(c, t); target >= 0 {
				sc.entryStart(e, c, target)
			}
		case entryBackward:
			// Backward recomputes the checkpointed function on autograd's
			// own threads.
			if target := e.callableArg(c, t); target >= 0 {
				a.backwardStarts = append(a.backwardStarts, threadStart{node: c.node, how: e.how,
					targets: (threadFacts{a}).targetNames(target), exprs: []int32{target}, within: -1, param: -1, fn: c.fn,
					owners: (threadFacts{a}).ownerNames(target), entry: e.id})
			}
		case entryPool:
			// The initializer runs in every worker thread.
			if target := e.callableArg(c, t); target >= 0 {
				start(c.qual+" initializer", target, (threadFacts{a}).poolWorkers(c) != 1)
				a.starts[len(a.starts)-1].entry = e.id
			}
		}
		return
	}
	if poolMethods[c.callee] && sc.poolMethodCall(c, start) {
		return
	}
	for _, i := range byMethod[c.callee] {
		e := &threadCatalogue[i]
		switch e.kind {
		case entryLoopExecutor:
			if target := e.callableArg(c, t); target >= 0 { // loop.run_in_executor(executor or None, fn, ...)
				w, _ := (threadFacts{a}).poolExpr(c.args[0])
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
			if recv < 0 || t.Kind(c.calleeNode) != syntax.KindAttribute || !sc.isInstance(recv, e.on) {
				continue
			}
			if sc.turnedOff(e) {
				continue
			}
			if target := e.callableArg(c, t); target >= 0 {
				sc.entryStart(e, c, target)
				return
			}
		}
	}
	if strings.HasPrefix(c.callee, "add_") && strings.HasSuffix(c.callee, "Servicer_to_server") {
		sc.servicerStart(c)
	}
}

// poolMethodCall records pool.submit(f), pool.map(f, xs) and the like,
// when the receiver is a thread pool.
func (sc *entryScan) poolMethodCall(c *callInfo, start func(string, int32, bool)) bool {
	a := sc.a
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
		workers, ok = (threadFacts{a}).poolExpr(recv)
	}
	if !ok {
		return false
	}
	start(oneLineText(t.Text(recv), 40)+"."+c.callee, c.args[0], workers != 1 && manyMethods[c.callee])
	st := &a.starts[len(a.starts)-1]
	if workers == 1 {
		st.many = false
	}
	st.entry = sc.poolEntry(recv, c.callee)
	return true
}

// poolEntry names the pool entry of a pool method's call: the one whose
// pool the receiver is known to be, else the first whose methods include
// the method (a pool handed in as a parameter).
func (sc *entryScan) poolEntry(recv int32, method string) string {
	id := ""
	for i := range threadCatalogue {
		e := &threadCatalogue[i]
		if e.kind != entryPool || !slices.Contains(e.methods, method) {
			continue
		}
		if sc.isInstance(recv, e.quals) {
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
func (sc *entryScan) entryStart(e *threadEntry, c *callInfo, target int32) {
	a := sc.a
	if k := a.t.Kind(a.t.Unwrap(target)); k == syntax.KindNone {
		return // app.load(None, ...): nothing runs
	}
	if e.syncOnly && !e.iterates && !sc.syncCallable(target) {
		return
	}
	how := e.how
	if how == "" {
		how = c.qual
	}
	st := threadStart{node: c.node, how: how, within: -1, many: e.many || a.inLoop(c.node),
		param: -1, fn: c.fn, entry: e.id}
	if e.iterates {
		names, fn, sync := sc.iterated(target)
		if len(names) == 0 || e.syncOnly && !sync {
			return
		}
		st.targets = names
		if fn >= 0 {
			st.exprs = []int32{fn}
		}
		(threadFacts{a}).addStart(st)
		return
	}
	if cls, names := sc.instanceMethods(target, e.instance); cls >= 0 {
		st.within, st.targets = cls, names
		sc.addInstanceStart(st)
		return
	}
	st.targets, st.exprs = (threadFacts{a}).targetNames(target), []int32{target}
	st.param, st.owners = (threadFacts{a}).paramIndex(c.fn, target), (threadFacts{a}).ownerNames(target)
	(threadFacts{a}).addStart(st)
}

// decoratorStart records @app.get(...) and the like on a def: the
// decorated function runs on the framework's threads. dec is the
// decorator whose expression is the call c.
func (sc *entryScan) decoratorStart(c *callInfo, dec int32) {
	a := sc.a
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
		if !sc.isInstance(recv, e.on) || sc.turnedOff(e) {
			continue
		}
		if e.syncOnly && isAsyncDef(t, def) {
			return
		}
		(threadFacts{a}).addStart(threadStart{node: c.node, how: e.how, targets: []string{t.Text(name)}, exprs: []int32{name},
			within: -1, many: e.many || a.inLoop(c.node), param: -1, fn: c.fn, entry: e.id})
		return
	}
}

// decoratedStarts records the defs decorated with a catalogue decorator
// (@st.cache_resource, bare or called), in source order.
func (sc *entryScan) decoratedStarts() {
	a := sc.a
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
			(threadFacts{a}).addStart(threadStart{node: dec, how: e.how, targets: []string{t.Text(name)}, exprs: []int32{name},
				within: -1, many: e.many, param: -1, fn: t.fnOf[dec], entry: e.id})
			break
		}
	}
}

// servicerStart records a generated add_<Service>Servicer_to_server(
// servicer, server) with a server of the catalogue (grpc.server, not
// grpc.aio.server): the servicer's methods run in the server's pool.
func (sc *entryScan) servicerStart(c *callInfo) {
	a := sc.a
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
		if server < 0 || servicer < 0 || !sc.isInstance(server, e.on) {
			continue
		}
		if cls, names := sc.instanceMethods(servicer, e.instance); cls >= 0 {
			sc.addInstanceStart(threadStart{node: c.node, how: e.how, targets: names, within: cls,
				many: e.many || a.inLoop(c.node), param: -1, fn: c.fn, entry: e.id})
		}
	}
}

// iterated returns what runs when a framework iterates n: the function
// a call of it makes a generator of (gen(prompt): gen, its name node, and
// whether it is known to be a plain def), or the calls a generator
// expression makes.
func (sc *entryScan) iterated(n int32) (names []string, fn int32, sync bool) {
	a := sc.a
	t := a.t
	v := a.resolve(n)
	switch t.Kind(v) {
	case syntax.KindCall:
		f := t.Unwrap(t.Child(v, syntax.FieldFunction))
		if k := t.Kind(f); k != syntax.KindIdentifier && k != syntax.KindAttribute {
			return nil, -1, false
		}
		if name := t.LastName(f); name != "" {
			return []string{name}, f, sc.syncCallable(f)
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
func (sc *entryScan) addInstanceStart(st threadStart) {
	a := sc.a
	if i, ok := sc.instances[st.within]; ok {
		a.starts[i].many = true
		return
	}
	sc.instances[st.within] = len(a.starts)
	(threadFacts{a}).addStart(st)
}

// instanceMethods returns, when n is an instance of a class of the buffer
// (a call of it, of its as_view(), or a name bound once to one), the
// class and those of its methods that methods names ("*": every one not
// starting with "_"); -1 otherwise.
func (sc *entryScan) instanceMethods(n int32, methods []string) (int32, []string) {
	a := sc.a
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
	for _, m := range sc.classMethods(cls) {
		if !strings.HasPrefix(m, "_") {
			names = append(names, m)
		}
	}
	return cls, names
}

// classMethods names the functions a class's body defines.
func (sc *entryScan) classMethods(cls int32) []string {
	a := sc.a
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

// syncCallable reports whether expression n is known to be called as it
// is, not awaited: a lambda, a generator expression, a name the buffer
// defines with a plain def, or one bound to what torch.compile made. A
// name from elsewhere may be an async def: not known, so not a start
// (no false warning where a framework awaits it on its event loop).
func (sc *entryScan) syncCallable(n int32) bool {
	a := sc.a
	t := a.t
	n = t.Unwrap(n)
	switch t.Kind(n) {
	case syntax.KindLambda, syntax.KindGeneratorExpression:
		return true
	case syntax.KindIdentifier, syntax.KindAttribute:
		name := t.LastName(n)
		if len(a.funcs[name]) > 0 {
			return !sc.asyncName(name)
		}
		return len(a.siteByTarget[name]) > 0
	case syntax.KindCall: // functools.partial(f, ...)
		if names := (threadFacts{a}).targetNames(n); len(names) == 1 && len(a.funcs[names[0]]) > 0 {
			return !sc.asyncName(names[0])
		}
	}
	return false
}

// asyncName reports whether the buffer defines name only as async defs:
// a framework awaits those on its event loop.
func (sc *entryScan) asyncName(name string) bool {
	a := sc.a
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

// threadSubclass records the methods that run on a thread of a subclass
// of a catalogue class (threading.Thread's run, a request handler's
// handle and do_GET, …), directly or through subclasses defined in the
// buffer, and a target handed to the base's __init__ in it
// (super().__init__(target=f)).
func (sc *entryScan) threadSubclass(n int32) {
	a := sc.a
	t := a.t
	i, ok := (threadFacts{a}).threadClassSet()[n]
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
		for _, m := range sc.classMethods(n) {
			if strings.HasPrefix(m, e.prefix) {
				targets = append(targets, m)
			}
		}
	}
	(threadFacts{a}).addStart(threadStart{node: n, how: e.how, targets: targets, within: n,
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
				(threadFacts{a}).addStart(threadStart{node: c.node, how: e.how, targets: (threadFacts{a}).targetNames(kw.value), exprs: []int32{kw.value},
					within: -1, many: many || made > 1, param: -1, fn: c.fn, entry: e.id})
			}
		}
	}
}
