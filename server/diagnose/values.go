package diagnose

import (
	"slices"
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// Values, not spellings: a compiled callable is a value, and the file
// hands it on. followValues follows each compile site's result from the
// names it is bound to into what holds it next (names, attributes,
// containers, the parameters of the functions it is passed to, directly
// or through a thread's or pool's arguments) and adds those holders to the
// site's targets, so that the thread analysis, which follows calls by
// name, finds models[k](x), self.fn(x) and fn(x) in a worker that was
// handed the compiled callable.
//
// A parameter is a holder of its function only: its key is paramKey(def,
// name), never the bare name, so that another function's parameter of the
// same name is not taken for it; calleeKeys gives the thread analysis the
// same key for a call of the parameter. Names, attributes and containers
// are the file's plain names, as the compile sites' own targets are.
// What Name(...) gives back (a class's instances, a function's result) is
// keyed classKey(Name).
//
// The same flows carry two other kinds of value: functions of the file
// (a dispatch table's handlers, callbacks: heldFuncs, which the thread
// analysis follows by name where their holder is called) and thread
// pools (poolValues, into the names threadStarts reads pools by). And
// the dicts the file builds are read back for settings (builtDict).

// valueFlow follows the values of one analysis, and keeps what it found
// for the checks to ask later; the analysis keeps only the entry points
// (followValues, builtDict, calleeKeys, containerName).
type valueFlow struct {
	a      *analysis
	siteAt map[int32][]*compileSite // an expression that makes a compiled callable → its sites
	has    map[siteKey]bool         // targets already added
	added  int                      // targets added, bounded by maxValueTargets
	// itemWrites are the assignments name[...] = v by name, updates the
	// calls name.update(...): dicts built up after their display (made
	// on first use).
	itemWrites map[string][]int32
	updates    map[string][]*callInfo
	inits      map[string][]int32       // class name → its __init__ definitions (made on first use)
	classes    map[string]bool          // the buffer's class names (made on first use)
	byName     map[int32]map[string]int // function definition → its parameters' indexes by name
	flows      []int32                  // assignments and for clauses, in source order (walk collects them)
	calls      []*callInfo              // calls with arguments: they may pass a compiled callable on
	srcBuf     []valueSrc               // scratch for sourcesOf
	edges      map[valueEdge]bool       // flows followed this round
	// forwards are, by class name, the forward and __call__ methods of
	// the buffer's classes (flowForwards; made on first use).
	forwards map[string][]int32
	// returned memoizes, for the current round, the sites a function's
	// returns may be (returnSites); nil while one is being computed.
	returned map[int32][]*compileSite
	// heldFuncs are, by holder key, the functions of the buffer a holder
	// may be or hold: HANDLERS = {"gen": generate}, self.cb = on_batch.
	heldFuncs map[string][]string
	// resultsCalled are the names of functions whose result the file
	// calls at once (get("fast")(x)), for flowReturns; made on first use.
	resultsCalled map[string]bool
}

// valueSrc is one place an expression's compiled callables come from: a
// target key (a name, an attribute, a parameter's key), the sites a call
// makes, or a function's returns.
type valueSrc struct {
	key  string
	node int32 // the call (siteAt) or the function (returnSites); -1 for a key
	ret  bool
	// fn is, for a function of the buffer handed on as a value (a
	// dispatch table's handler), its name; key, node and ret are unset.
	fn string
}

// valueEdge is one flow from a source into a holder's key: followed once
// per round, however many statements make it (a thousand h = load()
// cost one).
type valueEdge struct {
	src valueSrc
	dst string
}

type siteKey struct {
	s    *compileSite
	name string
}

// maxValueRounds bounds how many times the flows are followed: a value
// handed on through a name, into a container, then into a parameter takes
// three. Each round is one pass over the file's assignments and calls.
const maxValueRounds = 3

// maxValueNesting bounds how deep sourcesOf looks into displays and
// comprehensions ({"a": [torch.compile(f)]}), so an expression costs its
// size, never more.
const maxValueNesting = 4

// maxValueTargets bounds the targets the flows add to the sites of one
// buffer: every flow adds at most one key to each site it carries, and a
// file of a thousand aliases of a thousand sites must not make a million.
const maxValueTargets = 4096

// maxValueDefs bounds the definitions of one name a call is matched to: a
// name defined more often than that (overloads, many classes' methods of
// one name) passes nothing on, so calls × definitions stays linear.
const maxValueDefs = 4

// paramKey is the target key of parameter name of function definition def.
func paramKey(def int32, name string) string {
	return name + "\x00" + strconv.Itoa(int(def))
}

// addTarget makes key a target of every site in ss.
func (v *valueFlow) addTarget(ss []*compileSite, key string) {
	a := v.a
	if key == "" {
		return
	}
	for _, s := range ss {
		a.work++
		k := siteKey{s, key}
		if v.has[k] || v.added >= maxValueTargets {
			continue
		}
		v.has[k] = true
		v.added++
		s.targets = append(s.targets, key)
		a.siteByTarget[key] = append(a.siteByTarget[key], s)
	}
}

// sourcesOf returns where the compiled callables that expression n, in
// function fn, may be or hold come from: a name or attribute bound to
// one, a parameter handed one, a container holding one, an element or
// .get of such a container, a display or comprehension of them, a call of
// a function returning one, the compiling call itself. Only sources with
// sites are given; the result is valid until the next call.
func (v *valueFlow) sourcesOf(n, fn int32) []valueSrc {
	a := v.a
	a.vals.srcBuf = a.vals.srcBuf[:0]
	v.collectSources(n, fn, 0)
	return a.vals.srcBuf
}

// srcSites are the sites of a source.
func (v *valueFlow) srcSites(src valueSrc) []*compileSite {
	a := v.a
	switch {
	case src.key != "":
		return a.siteByTarget[src.key]
	case src.ret:
		return v.returnSites(src.node)
	}
	return a.vals.siteAt[src.node]
}

func (v *valueFlow) collectSources(n, fn int32, depth int) {
	a := v.a
	t := a.t
	a.work++
	n = t.Unwrap(n)
	if n < 0 || depth > maxValueNesting {
		return
	}
	add := func(src valueSrc) {
		if len(v.srcSites(src)) > 0 {
			v.srcBuf = append(v.srcBuf, src)
		}
		if src.key != "" {
			for _, f := range v.heldFuncs[src.key] {
				v.srcBuf = append(v.srcBuf, valueSrc{node: -1, fn: f})
			}
		}
	}
	// A function of the buffer named as a value, or called by a lambda
	// or a forward: a holder of it runs it when called.
	addFn := func(name string) {
		if defs := a.funcs[name]; len(defs) > 0 && len(defs) <= maxValueDefs {
			v.srcBuf = append(v.srcBuf, valueSrc{node: -1, fn: name})
		}
	}
	switch t.Kind(n) {
	case syntax.KindIdentifier:
		add(valueSrc{key: t.Text(n), node: -1})
		if k := v.paramOf(fn, t.Text(n)); k != "" {
			add(valueSrc{key: k, node: -1})
		}
		addFn(t.Text(n))
	case syntax.KindAttribute:
		if t.Chain(n) != nil {
			add(valueSrc{key: t.LastName(n), node: -1})
			addFn(t.LastName(n)) // self.handle, a bound method
		}
	case syntax.KindSubscript:
		v.collectSources(t.Child(n, syntax.FieldValue), fn, depth+1)
	case syntax.KindCall:
		if len(v.siteAt[n]) > 0 {
			add(valueSrc{node: n})
			return // a wrapper's call is its own site
		}
		f := t.Child(n, syntax.FieldFunction)
		if t.Kind(f) == syntax.KindAttribute && (containerReads[t.LastName(f)] || returnsSelf[t.LastName(f)]) {
			v.collectSources(t.Child(f, syntax.FieldObject), fn, depth+1)
		}
		ch := t.Chain(f)
		if ch == nil {
			return
		}
		if q := a.qual(ch[len(ch)-1]); holdsArgs[q] || q == "" && len(ch) == 1 && holdsArgs[t.Text(f)] {
			// list(models), nn.Sequential(compiled, head), zip(names, models)
			if args := t.Child(n, syntax.FieldArguments); args >= 0 {
				for _, arg := range t.CodeChildren(args) {
					if t.Kind(arg) == syntax.KindKeywordArgument {
						arg = t.Child(arg, syntax.FieldValue)
					}
					v.collectSources(arg, fn, depth+1)
				}
			}
			return
		}
		name := t.LastName(f)
		add(valueSrc{key: classKey(name), node: -1}) // Net() of a class whose forward is compiled
		if defs := a.funcs[name]; len(defs) <= maxValueDefs && a.qual(ch[0]) == "" {
			for _, def := range defs {
				add(valueSrc{node: def, ret: true})
			}
		}
	case syntax.KindDictionary:
		for _, p := range t.CodeChildren(n) {
			switch t.Kind(p) {
			case syntax.KindPair:
				v.collectSources(t.Child(p, syntax.FieldValue), fn, depth+1)
			case syntax.KindDictionarySplat: // {**base, "a": ...}
				if cs := t.CodeChildren(p); len(cs) == 1 {
					v.collectSources(cs[0], fn, depth+1)
				}
			}
		}
	case syntax.KindList, syntax.KindTuple, syntax.KindSet, syntax.KindExpressionList, syntax.KindConditionalExpression:
		for _, c := range t.CodeChildren(n) {
			v.collectSources(c, fn, depth+1)
		}
	case syntax.KindDictionaryComprehension:
		if b := t.Child(n, syntax.FieldBody); b >= 0 && t.Kind(b) == syntax.KindPair {
			v.collectSources(t.Child(b, syntax.FieldValue), fn, depth+1)
		}
	case syntax.KindListComprehension, syntax.KindSetComprehension, syntax.KindGeneratorExpression:
		v.collectSources(t.Child(n, syntax.FieldBody), fn, depth+1)
	case syntax.KindLambda:
		// lambda x: compiled(x) runs what its body calls.
		if body := t.Child(n, syntax.FieldBody); body >= 0 {
			for _, c := range a.callsIn(body) {
				v.collectSources(c.calleeNode, fn, depth+1)
			}
		}
	}
}

// ownerKey is the target key of the methods of an object that holds
// compiled code in an attribute (model.model = torch.compile(...)):
// model.generate(...) runs it. An object that is compiled code itself
// is not its own owner: torch.compile(model).generate runs uncompiled.
func ownerKey(object string) string { return object + "." }

// classKey is the target key of the instances of a class whose calls run
// compiled code (instanceSite), and of what a function returns
// (flowReturns): what Name(...) gives back.
func classKey(class string) string { return class + "()" }

// flowInto follows each source into holder key dst, once per round.
func (v *valueFlow) flowInto(srcs []valueSrc, dst string) {
	a := v.a
	if dst == "" {
		return
	}
	for _, src := range srcs {
		a.work++
		e := valueEdge{src, dst}
		if v.edges[e] {
			continue
		}
		v.edges[e] = true
		if src.fn != "" {
			v.holdFunc(dst, src.fn)
			continue
		}
		v.addTarget(v.srcSites(src), dst)
	}
}

// maxHeldFuncs bounds the functions one holder is known to hold: a
// dispatch table has a few handlers, and each is followed from every
// call of the holder.
const maxHeldFuncs = 16

// holdFunc records that holder key dst holds function name.
func (v *valueFlow) holdFunc(dst, name string) {
	if dst == name || len(v.heldFuncs[dst]) >= maxHeldFuncs || v.added >= maxValueTargets || slices.Contains(v.heldFuncs[dst], name) {
		return
	}
	v.heldFuncs[dst] = append(v.heldFuncs[dst], name)
	v.added++
}

// containerReads are the methods that give back what a container holds.
var containerReads = map[string]bool{
	"get": true, "values": true, "items": true, "pop": true, "setdefault": true, "popitem": true,
	"get_nowait": true, "popleft": true,
}

// holdsArgs are the builtins and torch.nn containers whose result holds
// (or, for Sequential, calls) what they are given.
var holdsArgs = map[string]bool{
	"list": true, "tuple": true, "dict": true, "set": true, "sorted": true, "reversed": true, "iter": true,
	"zip": true, "enumerate": true, "collections.OrderedDict": true, "collections.deque": true,
	"torch.nn.ModuleList": true, "torch.nn.ModuleDict": true, "torch.nn.Sequential": true,
	"torch.nn.modules.container.ModuleList": true, "torch.nn.modules.container.ModuleDict": true,
	"torch.nn.modules.container.Sequential": true,
}

// returnsSelf are nn.Module's methods that return the module itself:
// Net().cuda() and compiled.to(device) are what they are called on.
var returnsSelf = map[string]bool{
	"cuda": true, "to": true, "eval": true, "train": true, "cpu": true, "half": true, "float": true,
	"double": true, "bfloat16": true, "requires_grad_": true, "to_empty": true, "share_memory": true,
}

// containerWrites are the methods that put their arguments into the
// container they are called on.
var containerWrites = map[string]bool{
	"append": true, "insert": true, "add": true, "update": true, "setdefault": true, "extend": true, "appendleft": true,
	"put": true, "put_nowait": true, // queue.Queue: a worker's get() gives it back
}

// flowAssign follows x = v, x.a = v, x[k] = v and for x in v: what v may
// be or hold, x now holds.
func (v *valueFlow) flowAssign(n int32) {
	a := v.a
	t := a.t
	r := t.Child(n, syntax.FieldRight)
	l := t.Unwrap(t.Child(n, syntax.FieldLeft))
	if r < 0 || l < 0 {
		return
	}
	srcs := v.sourcesOf(r, t.fnOf[n])
	if len(srcs) == 0 {
		return
	}
	srcs = slices.Clone(srcs)
	for _, k := range v.holderKeys(l) {
		v.flowInto(srcs, k)
	}
	// pipe.unet = torch.compile(pipe.unet, ...): calling pipe runs its
	// compiled part (a class's own self.x = ... is flowForwards' to judge).
	if t.Kind(l) == syntax.KindAttribute {
		if obj := t.Unwrap(t.Child(l, syntax.FieldObject)); t.Kind(obj) == syntax.KindIdentifier && t.Text(obj) != "self" && t.Text(obj) != "cls" {
			v.flowInto(srcs, t.Text(obj))
			v.flowInto(srcs, ownerKey(t.Text(obj))) // and its methods: model.generate(...)
		}
	}
}

// holderKeys are the target keys an assignment's left side binds: a
// name, an attribute's last name, the container of a subscript, each name
// of a pattern.
func (v *valueFlow) holderKeys(l int32) []string {
	a := v.a
	t := a.t
	l = t.Unwrap(l)
	switch t.Kind(l) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		return []string{t.LastName(l)}
	case syntax.KindSubscript:
		return []string{(valueFacts{a}).containerName(l)}
	case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindTuple, syntax.KindListPattern, syntax.KindExpressionList, syntax.KindList:
		var out []string
		for _, c := range t.CodeChildren(l) {
			a.work++
			if k := t.Unwrap(c); t.Kind(k) == syntax.KindIdentifier || t.Kind(k) == syntax.KindAttribute {
				out = append(out, t.LastName(k))
			}
		}
		return out
	}
	return nil
}

// flowCall follows a call's arguments into the parameters of the function
// it runs (f(compiled), Thread(target=f, args=(compiled,)),
// pool.submit(f, compiled), partial(f, compiled), Runner(compiled) into
// __init__), and container writes (models.append(compiled)).
func (v *valueFlow) flowCall(c *callInfo) {
	a := v.a
	t := a.t
	if t.Kind(c.calleeNode) == syntax.KindAttribute && containerWrites[c.callee] {
		into := (valueFacts{a}).containerName(t.Child(c.calleeNode, syntax.FieldObject))
		for _, arg := range c.args {
			v.flowInto(v.sourcesOf(arg, c.fn), into)
		}
		for _, kw := range c.kwargs {
			v.flowInto(v.sourcesOf(kw.value, c.fn), into)
		}
	}
	fnExpr, args, kwargs := v.invoked(c)
	if fnExpr < 0 {
		return
	}
	defs := v.defsCalled(fnExpr, c)
	if len(defs) == 0 && t.Kind(t.Unwrap(fnExpr)) == syntax.KindIdentifier && (classFlow{v}).classNames()[t.Text(t.Unwrap(fnExpr))] {
		// Config(model=compiled) of a class without __init__ (a
		// dataclass, a NamedTuple): cfg.model holds it.
		for _, kw := range kwargs {
			a.work++
			v.flowInto(v.sourcesOf(kw.value, c.fn), kw.name)
		}
	}
	for _, def := range defs {
		params := a.params(def)
		idx := v.paramIndexes(def)
		for i, arg := range args {
			a.work++
			if i >= len(params) || params[i].star || params[i].splat || params[i].keyword {
				break
			}
			v.flowInto(v.sourcesOf(arg, c.fn), paramKey(def, params[i].name))
		}
		for _, kw := range kwargs {
			a.work++
			i, ok := idx[kw.name]
			if !ok {
				continue
			}
			v.flowInto(v.sourcesOf(kw.value, c.fn), paramKey(def, params[i].name))
		}
	}
}

// invoked says what function call c runs and with which arguments: the
// callee itself, or the callable a thread, pool or partial is handed and
// the arguments handed with it. fnExpr is -1 when it is neither.
func (v *valueFlow) invoked(c *callInfo) (fnExpr int32, args []int32, kwargs []namedArg) {
	a := v.a
	t := a.t
	switch {
	case c.qual == "threading.Thread" || c.qual == "threading.Timer":
		fnExpr = -1
		if kw, ok := c.keyword("target", t); ok && c.qual == "threading.Thread" {
			fnExpr = kw.value
		} else if kw, ok := c.keyword("function", t); ok {
			fnExpr = kw.value
		} else if len(c.args) >= 2 {
			fnExpr = c.args[1] // Thread(group, target), Timer(interval, function)
		}
		if kw, ok := c.keyword("args", t); ok {
			args = (dictFlow{v}).displayItems(kw.value)
		} else if len(c.args) >= 3 && c.qual == "threading.Timer" {
			args = (dictFlow{v}).displayItems(c.args[2])
		}
		if kw, ok := c.keyword("kwargs", t); ok {
			kwargs = (dictFlow{v}).dictKwargs(kw.value)
		}
		return fnExpr, args, kwargs
	case threadRunners[c.qual] || c.qual == "functools.partial" ||
		t.Kind(c.calleeNode) == syntax.KindAttribute && (c.callee == "submit" || c.callee == "apply_async" || c.callee == "apply"):
		if len(c.args) == 0 {
			return -1, nil, nil
		}
		args = c.args[1:]
		if kw, ok := c.keyword("args", t); ok && (c.callee == "apply_async" || c.callee == "apply") {
			args = (dictFlow{v}).displayItems(kw.value)
		}
		return c.args[0], args, (dictFlow{v}).named(c.kwargs)
	case c.callee == "run_in_executor" && t.Kind(c.calleeNode) == syntax.KindAttribute:
		if len(c.args) < 2 {
			return -1, nil, nil
		}
		return c.args[1], c.args[2:], nil
	case c.qual == "":
		return c.calleeNode, c.args, (dictFlow{v}).named(c.kwargs)
	}
	return -1, nil, nil
}

// namedArg is an argument passed by name.
type namedArg struct {
	name  string
	value int32
}

// defsCalled are the definitions of the buffer a callable expression
// runs: f, obj.method, and a class's __init__ for Class(...); none for a
// name defined more than maxValueDefs times.
func (v *valueFlow) defsCalled(fnExpr int32, c *callInfo) []int32 {
	a := v.a
	t := a.t
	fnExpr = t.Unwrap(fnExpr)
	if t.Chain(fnExpr) == nil {
		return nil
	}
	name := t.LastName(fnExpr)
	if defs := a.funcs[name]; len(defs) > 0 {
		if len(defs) > maxValueDefs {
			return nil
		}
		return defs
	}
	inits := (classFlow{v}).classInits()[name]
	if len(inits) > maxValueDefs {
		return nil
	}
	return inits
}

// paramIndexes maps a definition's parameter names to their indexes;
// made once per definition.
func (v *valueFlow) paramIndexes(def int32) map[string]int {
	a := v.a
	if v.byName == nil {
		v.byName = map[int32]map[string]int{}
	}
	if m, ok := v.byName[def]; ok {
		return m
	}
	m := map[string]int{}
	for i, p := range a.params(def) {
		a.work++
		if !p.star && !p.splat {
			m[p.name] = i
		}
	}
	v.byName[def] = m
	return m
}

// maxClosureDepth bounds how many enclosing functions a name is looked
// up in as a parameter (def start(model): def loop(): model(x)).
const maxClosureDepth = 3

// paramOf is the target key of the parameter name is in function fn: a
// parameter of fn, or of a function enclosing it (a closure's); "" when
// it is none, within maxClosureDepth functions.
func (v *valueFlow) paramOf(fn int32, name string) string {
	t := v.a.t
	for range maxClosureDepth {
		if fn < 0 {
			return ""
		}
		v.a.work++
		if _, ok := v.paramIndexes(fn)[name]; ok {
			return paramKey(fn, name)
		}
		fn = t.fnOf[fn]
	}
	return ""
}

// dictEntry is one string key of a dict the file builds, and the value
// written for it.
type dictEntry struct {
	key   string
	value int32
}

// maxDictWrites bounds the item assignments and updates read for one
// dict: each compile site reads its settings' dicts, so a dict written a
// thousand times costs each site at most this many.
const maxDictWrites = 64

// maxDictCalls bounds how many functions deep builtDict follows a dict
// that a function of the buffer builds and returns (options=opts()).
const maxDictCalls = 2

// confirmSpellings drops the compile sites made by a spelling other than
// torch.compile (compileSpellings), and what derives from them, when the
// target's torch does not define it as a compile: torch.compiler.compile
// must hand its arguments to torch.compile, optimize must be Dynamo's
// entry in eval_frame.py. Without a mirror nothing is dropped, as for
// model.compile.
func (c *checker) confirmSpellings() {
	a := c.a
	if c.opts.SiteDir == "" {
		return
	}
	confirmed := map[string]bool{}
	drop := func(s *compileSite) bool {
		for ; s != nil; s = s.inner {
			if s.spelling == "" {
				continue
			}
			ok, asked := confirmed[s.spelling]
			if !asked {
				ok = c.spellingDefined(s.spelling)
				confirmed[s.spelling] = ok
			}
			if !ok {
				return true
			}
		}
		return false
	}
	some := false
	for _, s := range a.sites {
		some = some || s.spelling != "" || s.inner != nil && s.inner.spelling != ""
	}
	if !some {
		return
	}
	kept := a.sites[:0]
	for _, s := range a.sites {
		if !drop(s) {
			kept = append(kept, s)
		}
	}
	a.sites = kept
	for name, ss := range a.siteByTarget {
		var k []*compileSite
		for _, s := range ss {
			if !drop(s) {
				k = append(k, s)
			}
		}
		a.siteByTarget[name] = k
	}
}

// spellingDefined reports whether the target's torch defines spelling as
// a compile: its definition in the file compileSpellings names, and, for
// torch.compiler.compile, a call of torch.compile in it.
func (c *checker) spellingDefined(spelling string) bool {
	file := compileSpellings[spelling]
	name := spelling[strings.LastIndexByte(spelling, '.')+1:]
	def := c.files.findStatement(file, 0, "def", "def "+name+"(")
	if def < 0 {
		return false
	}
	if spelling == "torch.compiler.compile" {
		return c.files.find(file, def, "torch.compile(") >= 0
	}
	return true
}

// returnSites are the sites function def's returned values may be: a
// loader returning {"a": torch.compile(...)} or a name bound to one.
// Memoized per round, so a function costs its returns once per round
// however often it is called; a function returning a call of itself
// (directly or not) finds nothing more there.
func (v *valueFlow) returnSites(def int32) []*compileSite {
	a := v.a
	if ss, ok := v.returned[def]; ok {
		return ss
	}
	v.returned[def] = nil
	// collectSources appends to the shared scratch: keep what is there.
	saved := v.srcBuf
	v.srcBuf = nil
	for _, r := range a.returns[def] {
		a.work++
		v.collectSources(r, def, 1)
	}
	var ss []*compileSite
	for _, src := range v.srcBuf {
		a.work++
		ss = append(ss, v.srcSites(src)...)
	}
	v.srcBuf = saved
	v.returned[def] = ss
	return ss
}

// maxPoolRounds bounds how many hand-overs of a pool are followed: into a
// constructor's parameter, then onto self.
const maxPoolRounds = 2

// compiler names what compiles at site s, for messages: torch.compile, or
// the spelling it was written with (torch._dynamo.optimize).
func (s *compileSite) compiler() string {
	for in := s; in != nil; in = in.inner {
		if in.spelling != "" {
			return in.spelling
		}
	}
	return "torch.compile"
}

// flowForwards makes the instances of a class whose forward (or
// __call__) calls compiled code hold it: model(x) of
// class Model: forward(self, x): return self.encoder(x), with
// self.encoder compiled, runs it. Only the calls forward makes itself
// count (not those of the methods it calls), so a round costs the
// forwards' calls once.
func (v *valueFlow) flowForwards() {
	a := v.a
	t := a.t
	if v.forwards == nil {
		v.forwards = map[string][]int32{}
		for _, name := range [...]string{"forward", "__call__"} {
			for _, def := range a.funcs[name] {
				a.work++
				cls := t.clsOf[def]
				if cls < 0 || t.fnOf[def] != t.fnOf[cls] {
					continue
				}
				if nm := t.Child(cls, syntax.FieldName); nm >= 0 {
					v.forwards[t.Text(nm)] = append(v.forwards[t.Text(nm)], def)
				}
			}
		}
	}
	for class, defs := range v.forwards {
		for _, def := range defs {
			for _, c := range a.callsIn(def) {
				a.work++
				v.flowInto(v.sourcesOf(c.calleeNode, c.fn), classKey(class))
			}
		}
	}
}

// onlyReturn is, for a call of a function the buffer defines once with
// one return statement, the value it returns; else -1.
func (v *valueFlow) onlyReturn(call int32) int32 {
	a := v.a
	t := a.t
	call = t.Unwrap(call)
	if t.Kind(call) != syntax.KindCall {
		return -1
	}
	f := t.Child(call, syntax.FieldFunction)
	if t.Kind(f) != syntax.KindIdentifier || a.qual(f) != "" {
		return -1
	}
	defs := a.funcs[t.Text(f)]
	if len(defs) != 1 || len(a.returns[defs[0]]) != 1 {
		return -1
	}
	return a.returns[defs[0]][0]
}

// flowReturns makes what a function of the buffer returns a holder of
// its own, keyed as classKey(name): get("fast")(x) calls it. A round
// costs the returns once.
func (v *valueFlow) flowReturns() {
	a := v.a
	t := a.t
	if v.resultsCalled == nil {
		// Only functions whose result the file calls at once need it.
		v.resultsCalled = map[string]bool{}
		for _, c := range a.calls {
			a.work++
			if f := t.Child(c.calleeNode, syntax.FieldFunction); t.Kind(c.calleeNode) == syntax.KindCall && t.Chain(f) != nil {
				v.resultsCalled[t.LastName(f)] = true
			}
		}
	}
	if len(v.resultsCalled) == 0 {
		return
	}
	for def, rs := range a.returns {
		nm := t.Child(def, syntax.FieldName)
		if nm < 0 || !v.resultsCalled[t.Text(nm)] || len(a.funcs[t.Text(nm)]) > maxValueDefs {
			continue
		}
		for _, r := range rs {
			a.work++
			v.flowInto(v.sourcesOf(r, def), classKey(t.Text(nm)))
		}
	}
}

// followValues follows the compile sites' results into what holds them
// next (see valueFlow); run once, after every site is made.
func (a valueFacts) followValues() {
	t := a.t
	v := a.valueState()
	(classFlow{v}).poolFactories()
	if len(a.sites) == 0 {
		return
	}
	for _, s := range a.sites {
		a.work++
		for _, k := range s.targets {
			v.has[siteKey{s, k}] = true
		}
		(classFlow{v}).instanceSite(s)
		if s.node < 0 || s.kind == siteInPlace || s.call == nil && t.Kind(t.Parent(s.node)) == syntax.KindDecorator {
			// A decorator's site is its function's name, and
			// model.compile(...) returns None: neither is a value.
			continue
		}
		v.siteAt[s.node] = append(v.siteAt[s.node], s)
		// torch.compile(mode=...)(f) and torch._dynamo.optimize(...)(f):
		// the outer call is the compiled callable.
		if p := t.Parent(s.node); p >= 0 && t.Kind(p) == syntax.KindCall && t.Field(s.node) == syntax.FieldFunction {
			v.siteAt[p] = append(v.siteAt[p], s)
		}
	}
	for _, c := range a.calls {
		a.work++
		if len(c.args) > 0 || len(c.kwargs) > 0 {
			v.calls = append(v.calls, c)
		}
	}
	for range maxValueRounds {
		before := v.added
		clear(v.returned)
		clear(v.edges)
		for _, n := range v.flows {
			a.work++
			v.flowAssign(n)
		}
		for _, c := range v.calls {
			a.work++
			v.flowCall(c)
		}
		v.flowForwards()
		v.flowReturns()
		if v.added == before {
			break
		}
	}
}

// valueState returns the buffer's valueFlow, made on first use: settings
// read dicts the file builds before the flows are followed.
func (a valueFacts) valueState() *valueFlow {
	if a.vals == nil {
		a.vals = &valueFlow{a: a.analysis, siteAt: map[int32][]*compileSite{}, has: map[siteKey]bool{},
			returned: map[int32][]*compileSite{}, edges: map[valueEdge]bool{}, heldFuncs: map[string][]string{}}
	}
	return a.vals
}

// withHeld appends to dst the functions holder key holds (a dispatch
// table's handlers), for the thread analysis to follow by name.
func (a valueFacts) withHeld(dst []string, key string) []string {
	if a.vals == nil {
		return dst
	}
	return append(dst, a.vals.heldFuncs[key]...)
}

// containerName is the name of the container a subscript reads or
// writes: models for models[k] and self.models[a][b]; "" for anything
// else.
func (a valueFacts) containerName(n int32) string {
	t := a.t
	for range maxValueNesting {
		n = t.Unwrap(n)
		if t.Kind(n) != syntax.KindSubscript {
			break
		}
		n = t.Child(n, syntax.FieldValue)
	}
	if t.Chain(n) == nil {
		return ""
	}
	return t.LastName(n)
}

// calleeKeys appends to dst the target keys a call reaches compiled code
// by: its callee's name, the container a subscript callee reads
// (models[k](x) → models), and the parameter key of a callee that is a
// parameter of the calling function or of one enclosing it.
func (a valueFacts) calleeKeys(dst []string, c *callInfo) []string {
	dst = append(dst, c.callee)
	if a.vals == nil || a.vals.added == 0 {
		return dst
	}
	t := a.t
	dst = a.withHeld(dst, c.callee)
	name := c.callee
	switch t.Kind(c.calleeNode) {
	case syntax.KindAttribute: // model.generate(x) of a model holding compiled parts
		if obj := t.Unwrap(t.Child(c.calleeNode, syntax.FieldObject)); t.Kind(obj) == syntax.KindIdentifier {
			if k := ownerKey(t.Text(obj)); len(a.siteByTarget[k]) > 0 {
				dst = append(dst, k)
			}
		}
		return dst
	case syntax.KindCall: // get("fast")(x): what get returns
		if f := t.Child(c.calleeNode, syntax.FieldFunction); t.Chain(f) != nil {
			dst = append(dst, classKey(t.LastName(f)))
		}
		return dst
	case syntax.KindSubscript:
		if name = a.containerName(c.calleeNode); name != "" {
			dst = append(dst, name)
			dst = a.withHeld(dst, name)
		}
	case syntax.KindIdentifier:
	default:
		return dst
	}
	if k := a.vals.paramOf(c.fn, name); k != "" {
		if len(a.siteByTarget[k]) > 0 {
			dst = append(dst, k)
		}
		dst = a.withHeld(dst, k)
	}
	return dst
}

// builtDict returns the entries of the dict that expression n is or is
// bound to, as the file has built it before node at: a display, dict(...)
// of a display, of pairs or of keywords, then, for a name bound once, its
// item assignments (d["k"] = v) and updates (d.update({...}), d.update(k=v))
// in the same function, in source order. ok is false when n is no dict
// the file builds.
func (a valueFacts) builtDict(n, at int32) (out []dictEntry, ok bool) {
	return (dictFlow{a.valueState()}).builtDictDepth(n, at, 0)
}

// dictItem is the value a subscript with a string key reads from a dict
// the file builds (CFG["mode"], CFG = {"mode": "reduce-overhead"}): the
// last write of the key before the subscript; -1 when not known.
func (a valueFacts) dictItem(n int32) int32 {
	t := a.t
	key, ok := t.PlainString(t.Child(n, syntax.FieldSubscript))
	obj := t.Unwrap(t.Child(n, syntax.FieldValue))
	if !ok || t.Kind(obj) != syntax.KindIdentifier {
		return -1
	}
	entries, _ := a.builtDict(obj, n)
	v := int32(-1)
	for _, e := range entries {
		a.work++
		if e.key == key {
			v = e.value
		}
	}
	return v
}

// valueFacts: where compiled values flow in the buffer (valueFlow holds the flow's state). It reads and fills the analysis it embeds.
type valueFacts struct{ *analysis }
