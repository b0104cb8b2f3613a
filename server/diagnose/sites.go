package diagnose

import (
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// siteKind says how a compile site compiles.
type siteKind uint8

const (
	// siteCall is torch.compile(f, ...), @torch.compile(...) or a bare
	// @torch.compile.
	siteCall siteKind = iota + 1
	// siteInPlace is model.compile(...): nn.Module.compile, which compiles
	// the module in place with torch.compile's arguments.
	siteInPlace
	// siteDerived is a call of a functools.partial of torch.compile, or
	// of a function of the buffer that returns what torch.compile made
	// (or compiles its argument in place).
	siteDerived
	// siteOptimize is torch._dynamo.optimize(backend, ...)(f) or
	// optimize_assert: Dynamo's own entry, which torch.compile calls with
	// a backend it builds from mode and options. It takes a backend
	// (Inductor by default) and no mode or options: Inductor's config
	// alone decides CUDA graphs.
	siteOptimize
)

// compileSpellings are the callables besides torch.compile that compile
// what they are handed, each by the file of the target's torch that must
// define it (confirmSpellings drops a site whose definition is not
// there): torch.compiler.compile passes its arguments to torch.compile.
var compileSpellings = map[string]string{
	"torch.compiler.compile":        "torch/compiler/__init__.py",
	"torch._dynamo.optimize":        "torch/_dynamo/eval_frame.py",
	"torch._dynamo.optimize_assert": "torch/_dynamo/eval_frame.py",
}

// setting is one of torch.compile's arguments as a site receives it.
type setting struct {
	arg   int32 // what the site's call holds: a keyword's value, a **splat, an argument of a wrapper's call
	value int32 // the expression arg resolves to through names assigned once, dicts and wrappers
	kw    int32 // the keyword_argument of the compiling call itself, when given directly; else -1
}

// compileSite is one place that compiles with torch.compile.
type compileSite struct {
	kind siteKind
	node int32     // the call, or the decorator's expression
	call *callInfo // the call whose arguments hold the settings; nil for a bare decorator
	fn   int32     // function holding node, or -1
	// targets are the names the compiled object is called by: the name
	// the result is bound to, the decorated function, the module compiled
	// in place, and the module whose forward is compiled.
	targets []string
	// inner is, for a derived site, the site of the partial or wrapper.
	inner    *compileSite
	settings map[string]setting
	// spelling is the qualified name of the callable that compiles when
	// it is not torch.compile (compileSpellings), else "".
	spelling string

	mode string // the mode as a string, when it is one
	// modeNode and optionsNode are the arguments at the call that give
	// mode and options, or -1; modeKw and optionsKw are the keyword
	// arguments of the compiling call when given directly (node -1
	// otherwise).
	modeNode, optionsNode int32
	modeKw, optionsKw     kwarg
}

// target is the first name the compiled object is called by, or "".
func (s *compileSite) target() string {
	if len(s.targets) == 0 {
		return ""
	}
	return s.targets[0]
}

// settingValue returns the resolved value of a setting, or -1.
func (s *compileSite) settingValue(name string) int32 {
	if st, ok := s.settings[name]; ok {
		return st.value
	}
	return -1
}

// compileParams are torch.compile's keyword parameters: the ones
// nn.Module.compile passes on.
var compileParams = map[string]bool{
	"fullgraph": true, "dynamic": true, "backend": true, "mode": true, "options": true, "disable": true,
}

// maxResolve bounds how many names resolve follows (A = B, B = "x").
const maxResolve = 4

// resolve follows a name to the expression it was assigned once, through
// at most maxResolve names; parentheses are stripped.
func (a *analysis) resolve(n int32) int32 {
	t := a.t
	n = t.Unwrap(n)
	for range maxResolve {
		a.work++
		if n >= 0 && t.Kind(n) == syntax.KindSubscript {
			// CFG["mode"] of a dict the file builds.
			if v := (valueFacts{a}).dictItem(n); v >= 0 {
				n = t.Unwrap(v)
				continue
			}
			return n
		}
		if n < 0 || t.Kind(n) != syntax.KindIdentifier {
			return n
		}
		v := a.buf.AssignedValue(n)
		if v < 0 {
			return n
		}
		n = t.Unwrap(v)
	}
	return n
}

// maxSites bounds the compile sites of one buffer, direct and derived:
// wrappers multiply them (a wrapper that calls another a thousand times,
// itself called a thousand times, made a million sites of a 36 KB file,
// 290 s and 5 GB), and each costs every check. Real scripts have a few.
// Sites past the bound are not made, and the checks say nothing of them.
const maxSites = 1024

// maxWrapperDepth bounds how many wrappers deep compile sites are
// followed (a wrapper calling a wrapper of torch.compile).
const maxWrapperDepth = 3

// wrapper is a function of the buffer that hands back what torch.compile
// made of its argument, or compiles its argument in place.
type wrapper struct {
	def    int32
	name   string
	params []param
	// inPlace is the parameter a siteInPlace compiles, or -1.
	inPlace int
}

// param is one parameter of a function definition.
type param struct {
	name    string
	deflt   int32 // the default value, or -1
	splat   bool  // **kwargs
	star    bool  // *args
	keyword bool  // after * or *args: keyword only
}

// params lists the parameters of a function definition, self and cls of
// methods left out; made once per definition.
func (a *analysis) params(def int32) []param {
	if ps, ok := a.paramsOf[def]; ok {
		return ps
	}
	ps := a.readParams(def)
	a.paramsOf[def] = ps
	return ps
}

func (a *analysis) readParams(def int32) []param {
	t := a.t
	var out []param
	keyword := false
	ps := t.Child(def, syntax.FieldParameters)
	for i, p := range t.CodeChildren(ps) {
		a.work++
		pr := param{deflt: -1, keyword: keyword}
		switch t.Kind(p) {
		case syntax.KindIdentifier:
			pr.name = t.Text(p)
		case syntax.KindTypedParameter:
			cs := t.CodeChildren(p)
			if len(cs) == 0 {
				continue
			}
			switch t.Kind(cs[0]) {
			case syntax.KindIdentifier:
				pr.name = t.Text(cs[0])
			case syntax.KindListSplatPattern, syntax.KindDictionarySplatPattern:
				pr.name = t.LastName(t.CodeChildren(cs[0])[0])
				pr.star, pr.splat = t.Kind(cs[0]) == syntax.KindListSplatPattern, t.Kind(cs[0]) == syntax.KindDictionarySplatPattern
			}
		case syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
			pr.name = t.Text(t.Child(p, syntax.FieldName))
			pr.deflt = t.Child(p, syntax.FieldValue)
		case syntax.KindListSplatPattern:
			if cs := t.CodeChildren(p); len(cs) > 0 {
				pr.name = t.Text(cs[0])
			}
			pr.star, keyword = true, true
		case syntax.KindDictionarySplatPattern:
			if cs := t.CodeChildren(p); len(cs) > 0 {
				pr.name = t.Text(cs[0])
			}
			pr.splat = true
		case syntax.KindKeywordSeparator:
			keyword = true
			continue
		default:
			continue
		}
		if i == 0 && (pr.name == "self" || pr.name == "cls") && t.clsOf[def] >= 0 {
			continue
		}
		out = append(out, pr)
	}
	return out
}

// within reports whether node n lies inside node outer.
func (a *analysis) within(n, outer int32) bool {
	t := a.t
	return t.Start(n) >= t.Start(outer) && t.End(n) <= t.End(outer)
}

// quoted is s as a Python string literal.
func quoted(s string) string { return strconv.Quote(s) }

// settingsOf reads the torch.compile arguments a call passes by keyword:
// keyword arguments, and **splats of a dict display, of dict(...), or of
// a name assigned one of those once, with the items the file assigns it
// or updates it with before the call (builtDict).
func (a siteFacts) settingsOf(c *callInfo) map[string]setting {
	t := a.t
	out := map[string]setting{}
	for _, sp := range c.splats {
		a.work++
		entries, _ := valueFacts(a).builtDict(sp, c.node)
		for _, e := range entries {
			a.work++
			if compileParams[e.key] && e.value >= 0 {
				out[e.key] = setting{arg: sp, value: a.resolve(e.value), kw: -1}
			}
		}
	}
	for _, kw := range c.kwargs {
		a.work++
		out[t.Text(kw.name)] = setting{arg: kw.value, value: a.resolve(kw.value), kw: kw.node}
	}
	return out
}

// newSite makes a compile site and reads its settings.
func (a siteFacts) newSite(kind siteKind, node int32, c *callInfo, settings map[string]setting) *compileSite {
	t := a.t
	s := &compileSite{kind: kind, node: node, call: c, fn: t.fnOf[node], settings: settings,
		modeNode: -1, optionsNode: -1, modeKw: kwarg{node: -1, name: -1, value: -1}, optionsKw: kwarg{node: -1, name: -1, value: -1}}
	kw := func(n int32) kwarg {
		if n < 0 {
			return kwarg{node: -1, name: -1, value: -1}
		}
		return kwarg{node: n, name: t.Child(n, syntax.FieldName), value: t.Child(n, syntax.FieldValue)}
	}
	if st, ok := settings["mode"]; ok {
		s.modeNode = st.arg
		s.mode, _ = t.PlainString(st.value)
		s.modeKw = kw(st.kw)
	}
	if st, ok := settings["options"]; ok {
		s.optionsNode = st.arg
		s.optionsKw = kw(st.kw)
	}
	return s
}

// sitesFull reports whether the buffer has maxSites compile sites.
func (a siteFacts) sitesFull() bool { return len(a.sites) >= maxSites }

// addSite records a compile site, unless the buffer has maxSites.
func (a siteFacts) addSite(s *compileSite) {
	if a.sitesFull() {
		return
	}
	a.sites = append(a.sites, s)
	for _, name := range s.targets {
		a.work++
		if name != "" {
			a.siteByTarget[name] = append(a.siteByTarget[name], s)
		}
	}
}

// compileCall records torch.compile(f, ...), @torch.compile(...) and
// torch.compile(**settings)(f), and the other spellings of a compile.
func (a siteFacts) compileCall(c *callInfo) {
	t := a.t
	if c.qual == "torch._dynamo.optimize" || c.qual == "torch._dynamo.optimize_assert" {
		a.optimizeCall(c)
		return
	}
	s := a.newSite(siteCall, c.node, c, a.settingsOf(c))
	if c.qual != "torch.compile" {
		s.spelling = c.qual
	}
	if st, ok := s.settings["options"]; ok {
		// Keys of an options dict are flag references, once per dict.
		if d := st.value; t.Kind(d) == syntax.KindDictionary && a.isModule[inductorConfig] && !a.optionDicts[d] {
			a.optionDicts[d] = true
			refFacts(a).dictRefs(c.node, inductorConfig, d, SpellOptionsKey)
		}
	}
	s.targets = a.boundNames(c.node)
	if len(c.args) > 0 {
		s.targets = append(s.targets, a.forwardOwner(c.args[0])...)
	}
	a.addSite(s)
}

// optimizeCall records torch._dynamo.optimize(backend, ...)(f), as a
// call or a decorator, and optimize_assert: the backend is the first
// argument or backend=, Inductor when not given; disable and dynamic are
// read as torch.compile's.
func (a siteFacts) optimizeCall(c *callInfo) {
	t := a.t
	settings := a.settingsOf(c)
	for k := range settings {
		if k != "backend" && k != "disable" && k != "dynamic" {
			delete(settings, k) // optimize takes no mode or options
		}
	}
	if _, ok := settings["backend"]; !ok && len(c.args) > 0 {
		settings["backend"] = setting{arg: c.args[0], value: a.resolve(c.args[0]), kw: -1}
	}
	s := a.newSite(siteOptimize, c.node, c, settings)
	s.spelling = c.qual
	s.targets = a.boundNames(c.node)
	// optimize(...)(model.forward): model's calls run it.
	if p := t.Parent(c.node); p >= 0 && t.Kind(p) == syntax.KindCall && t.Field(c.node) == syntax.FieldFunction {
		if args := t.Child(p, syntax.FieldArguments); args >= 0 {
			if cs := t.CodeChildren(args); len(cs) > 0 {
				s.targets = append(s.targets, a.forwardOwner(cs[0])...)
			}
		}
	}
	a.addSite(s)
}

// forwardOwner names the module whose forward a compiled callable is:
// model for torch.compile(model.forward), since model(x) calls it.
func (a siteFacts) forwardOwner(n int32) []string {
	t := a.t
	n = t.Unwrap(n)
	if t.Kind(n) != syntax.KindAttribute || t.Text(t.Child(n, syntax.FieldAttribute)) != "forward" {
		return nil
	}
	if name := t.LastName(t.Unwrap(t.Child(n, syntax.FieldObject))); name != "" && name != "self" {
		return []string{name}
	}
	return nil
}

// boundNames returns the name the value of expression n is bound to: the
// target of x = n (its last name for self.x = n), the function n
// decorates, or, for n called at once as in torch.compile(...)(f), what
// that call is bound to.
func (a siteFacts) boundNames(n int32) []string {
	t := a.t
	for range 3 {
		a.work++
		p := t.Parent(n)
		switch {
		case p < 0:
			return nil
		case t.Kind(p) == syntax.KindParenthesizedExpression:
			n = p
			continue
		case t.Kind(p) == syntax.KindAssignment && t.Field(n) == syntax.FieldRight:
			if l := t.Child(p, syntax.FieldLeft); l >= 0 {
				if name := t.LastName(l); name != "" {
					return []string{name}
				}
			}
		case t.Kind(p) == syntax.KindDecorator:
			if name := a.decorated(p); name != "" {
				return []string{name}
			}
		case t.Kind(p) == syntax.KindCall && t.Field(n) == syntax.FieldFunction:
			n = p
			continue
		}
		return nil
	}
	return nil
}

// decorator handles a bare @torch.compile (no call), and bare decorators
// that name a wrapper of torch.compile (found later).
func (a siteFacts) decorator(n int32) {
	t := a.t
	cs := t.CodeChildren(n)
	if len(cs) != 1 || t.Kind(cs[0]) == syntax.KindCall {
		return
	}
	q := a.chainQual(cs[0])
	if q != "torch.compile" && q != "torch.compiler.compile" {
		if t.Kind(cs[0]) == syntax.KindIdentifier {
			a.bareDecorators = append(a.bareDecorators, n)
		}
		return
	}
	s := a.newSite(siteCall, cs[0], nil, map[string]setting{})
	if q != "torch.compile" {
		s.spelling = q
	}
	if name := a.decorated(n); name != "" {
		s.targets = []string{name}
	}
	a.addSite(s)
}

// decorated returns the name of the function a decorator decorates. The
// definition follows every decorator of its stack, so finding it costs the
// stack's height: it is found once per stack (a stack of thousands of
// decorators, each asking, cost their square).
func (a siteFacts) decorated(dec int32) string {
	t := a.t
	dd := t.Parent(dec)
	if dd < 0 || t.Kind(dd) != syntax.KindDecoratedDefinition {
		return ""
	}
	a.work++
	if name, ok := a.decoratedNames[dd]; ok {
		return name
	}
	name := ""
	if def := t.Child(dd, syntax.FieldDefinition); def >= 0 {
		if n := t.Child(def, syntax.FieldName); n >= 0 {
			name = t.Text(n)
		}
	}
	a.work += t.ChildCount(dd)
	a.decoratedNames[dd] = name
	return name
}

// inPlaceCompile records model.compile(...), nn.Module.compile, when the
// call can only be that: torch is imported, the callee is an attribute
// of something that is not an imported module (re.compile is), and the
// call passes nothing but torch.compile's keyword arguments (Keras's
// model.compile(optimizer=...) passes others). Whether the target's
// nn.Module has compile is the checker's question.
func (a siteFacts) inPlaceCompile(c *callInfo) {
	t := a.t
	if c.callee != "compile" || c.qual != "" || a.torchAt < 0 || len(c.args) > 0 || t.Kind(c.calleeNode) != syntax.KindAttribute {
		return
	}
	for _, kw := range c.kwargs {
		if !compileParams[t.Text(kw.name)] {
			return
		}
	}
	obj := t.Unwrap(t.Child(c.calleeNode, syntax.FieldObject))
	if ch := t.Chain(obj); ch == nil || a.qual(ch[0]) != "" {
		return // not a name, or an imported module's compile
	}
	if a.torchNNLeaf(obj) {
		return
	}
	s := a.newSite(siteInPlace, c.node, c, a.settingsOf(c))
	if name := t.LastName(obj); name != "" {
		s.targets = []string{name}
	}
	a.addSite(s)
}

// moduleMethods return the module they are called on.
var moduleMethods = map[string]bool{
	"cuda": true, "to": true, "cpu": true, "eval": true, "train": true, "half": true, "float": true,
	"double": true, "bfloat16": true, "requires_grad_": true,
}

// torchNNContainers run the modules they hold: compiled in place, those
// may be the user's own.
var torchNNContainers = map[string]bool{
	"torch.nn.Sequential": true, "torch.nn.ModuleList": true, "torch.nn.ModuleDict": true,
}

// torchNNLeaf says whether the name n holds one of torch.nn's own
// modules (torch.nn.Linear(...), through .cuda()/.to()/.eval()): compiled
// in place, such a module compiles nothing, since Dynamo does not trace
// the frames of torch.nn's own files when they are what is compiled
// (measured on torch 2.11: TORCH_LOGS=cudagraphs silent, no thread
// fails); a module of the user's own, compiled in place, does.
func (a siteFacts) torchNNLeaf(n int32) bool {
	t := a.t
	if t.Kind(n) != syntax.KindIdentifier {
		return false
	}
	v := t.Unwrap(a.resolve(n))
	for i := 0; i < 8 && t.Kind(v) == syntax.KindCall; i++ {
		fn := t.Unwrap(t.Child(v, syntax.FieldFunction))
		if t.Kind(fn) == syntax.KindAttribute && moduleMethods[t.LastName(fn)] {
			v = t.Unwrap(t.Child(fn, syntax.FieldObject))
			continue
		}
		q := a.chainQual(fn)
		return strings.HasPrefix(q, "torch.nn.") && !torchNNContainers[q]
	}
	return false
}

// partialCall records functools.partial(torch.compile, ...): as a
// decorator it compiles the function it decorates; bound to a name, calls
// of that name compile.
func (a siteFacts) partialCall(c *callInfo) {
	t := a.t
	if len(c.args) == 0 || a.chainQual(c.args[0]) != "torch.compile" {
		return
	}
	p := t.Parent(c.node)
	switch {
	case p >= 0 && t.Kind(p) == syntax.KindDecorator:
		s := a.newSite(siteCall, c.node, c, a.settingsOf(c))
		if name := a.decorated(p); name != "" {
			s.targets = []string{name}
		}
		a.addSite(s)
	default:
		for _, name := range a.boundNames(c.node) {
			a.partials[name] = c
		}
	}
}

// derive finds the calls of partials and thin wrappers of torch.compile
// and makes each a compile site of its own.
func (a siteFacts) derive() {
	t := a.t
	for name, pc := range a.partials {
		for _, c := range a.callsNamed(name) {
			a.work++
			if a.sitesFull() {
				return
			}
			if c.node == pc.node || t.Kind(c.calleeNode) != syntax.KindIdentifier {
				continue
			}
			settings := a.settingsOf(pc)
			for k, v := range a.settingsOf(c) {
				settings[k] = v
			}
			s := a.newSite(siteDerived, c.node, c, settings)
			s.targets = a.boundNames(c.node)
			if len(c.args) > 0 {
				s.targets = append(s.targets, a.forwardOwner(c.args[0])...)
			}
			s.inner = &compileSite{kind: siteCall, node: pc.node, call: pc, fn: pc.fn}
			a.addSite(s)
		}
	}
	decorators := map[string][]int32{}
	for _, d := range a.bareDecorators {
		name := t.Text(t.CodeChildren(d)[0])
		decorators[name] = append(decorators[name], d)
	}
	// fast = torch.compile(mode=...) with no function is a decorator:
	// @fast compiles what it decorates with its settings.
	for _, inner := range a.sites {
		a.work++
		if inner.kind != siteCall || inner.call == nil || len(inner.call.args) > 0 || a.sitesFull() {
			continue
		}
		if p := t.Parent(inner.node); p >= 0 && (t.Kind(p) == syntax.KindDecorator || t.Kind(p) == syntax.KindCall) {
			continue // @torch.compile(...) itself, or torch.compile(...)(f)
		}
		for _, name := range inner.targets {
			for _, d := range decorators[name] {
				a.work++
				s := a.newSite(siteDerived, t.CodeChildren(d)[0], nil, inner.settings)
				s.inner, s.fn, s.spelling = inner, t.fnOf[d], inner.spelling
				if dn := a.decorated(d); dn != "" {
					s.targets = []string{dn}
				}
				a.addSite(s)
			}
		}
	}
	from := 0
	for depth := 0; depth < maxWrapperDepth && from < len(a.sites); depth++ {
		upto := len(a.sites)
		for _, inner := range a.sites[from:upto] {
			a.work++
			w, ok := a.wrapperOf(inner)
			if !ok {
				continue
			}
			for _, c := range a.callsNamed(w.name) {
				a.work++
				if a.sitesFull() {
					return
				}
				if a.within(c.node, w.def) {
					continue // the wrapper calling itself
				}
				a.addSite(a.derivedSite(inner, w, c))
			}
			for _, d := range decorators[w.name] {
				a.work++
				if a.sitesFull() {
					return
				}
				s := a.derivedSite(inner, w, nil)
				s.node, s.fn = t.CodeChildren(d)[0], t.fnOf[d]
				s.targets = nil
				if name := a.decorated(d); name != "" {
					s.targets = []string{name}
				}
				a.addSite(s)
			}
		}
		from = upto
	}
}

// wrapperOf reports whether site s is the body of a thin wrapper: a
// function whose return value is what s compiled, or which compiles one
// of its parameters in place.
func (a siteFacts) wrapperOf(s *compileSite) (wrapper, bool) {
	t := a.t
	if s.fn < 0 || s.kind == siteCall && s.call == nil {
		return wrapper{}, false
	}
	name := t.Child(s.fn, syntax.FieldName)
	if name < 0 {
		return wrapper{}, false
	}
	w := wrapper{def: s.fn, name: t.Text(name), params: a.params(s.fn), inPlace: -1}
	if s.kind == siteInPlace {
		obj := t.Unwrap(t.Child(s.call.calleeNode, syntax.FieldObject))
		if t.Kind(obj) != syntax.KindIdentifier {
			return wrapper{}, false
		}
		for i, p := range w.params {
			if p.name == t.Text(obj) && !p.splat && !p.star {
				w.inPlace = i
				return w, true
			}
		}
		return wrapper{}, false
	}
	// return torch.compile(...), or x = torch.compile(...) ... return x.
	n := s.node
	for p := t.Parent(n); p >= 0 && t.Kind(p) == syntax.KindParenthesizedExpression; p = t.Parent(p) {
		n = p
	}
	if p := t.Parent(n); p >= 0 && t.Kind(p) == syntax.KindReturnStatement {
		return w, true
	}
	for _, r := range a.returns[s.fn] {
		a.work++
		if v := t.Unwrap(r); t.Kind(v) == syntax.KindIdentifier && t.Text(v) == s.target() {
			return w, true
		}
	}
	return wrapper{}, false
}

// derivedSite is the compile site a call c of wrapper w makes (c is nil
// for w used as a bare decorator): inner's settings, with the arguments
// that come from w's parameters taken from c, or from their defaults.
func (a siteFacts) derivedSite(inner *compileSite, w wrapper, c *callInfo) *compileSite {
	t := a.t
	settings := map[string]setting{}
	byName := map[string]int{}
	for i, p := range w.params {
		byName[p.name] = i
	}
	for k, st := range inner.settings {
		a.work++
		settings[k] = setting{arg: st.arg, value: st.value, kw: -1}
		v := t.Unwrap(st.arg)
		i, ok := byName[t.Text(v)]
		if t.Kind(v) != syntax.KindIdentifier || !ok {
			continue
		}
		p := w.params[i]
		if p.star || p.splat {
			continue
		}
		if arg := a.argumentFor(c, w.params, i); arg >= 0 {
			settings[k] = setting{arg: arg, value: a.resolve(arg), kw: -1}
		} else if p.deflt >= 0 {
			settings[k] = setting{arg: p.deflt, value: a.resolve(p.deflt), kw: -1}
		} else {
			delete(settings, k) // not given: torch.compile's default
		}
	}
	// def w(m, **kw): return torch.compile(m, **kw) passes on the keyword
	// arguments w does not name.
	if c != nil && inner.call != nil {
		for _, sp := range inner.call.splats {
			i, ok := byName[t.Text(t.Unwrap(sp))]
			if !ok || !w.params[i].splat {
				continue
			}
			for _, kw := range c.kwargs {
				a.work++
				if _, named := byName[t.Text(kw.name)]; !named && compileParams[t.Text(kw.name)] {
					settings[t.Text(kw.name)] = setting{arg: kw.value, value: a.resolve(kw.value), kw: -1}
				}
			}
		}
	}
	node := int32(-1)
	if c != nil {
		node = c.node
	}
	s := a.newSite(siteDerived, max(node, 0), c, settings)
	s.inner = inner
	if c != nil {
		s.fn = c.fn
		s.targets = a.boundNames(c.node)
		if w.inPlace >= 0 {
			if arg := a.argumentFor(c, w.params, w.inPlace); arg >= 0 {
				if name := t.LastName(t.Unwrap(arg)); name != "" {
					s.targets = []string{name}
				}
			}
		}
	}
	return s
}

// argumentFor returns the argument call c passes for parameter i of
// params (by keyword or by position), or -1.
func (a siteFacts) argumentFor(c *callInfo, params []param, i int) int32 {
	if c == nil {
		return -1
	}
	t := a.t
	p := params[i]
	if kw, ok := c.keyword(p.name, t); ok {
		return kw.value
	}
	if p.keyword || p.star || p.splat {
		return -1
	}
	pos := 0
	for j := range i {
		if params[j].star || params[j].splat || params[j].keyword {
			return -1
		}
		pos++
	}
	if pos < len(c.args) {
		return c.args[pos]
	}
	return -1
}

// siteFacts are the analysis's facts of one family: the compile sites of the buffer: how it compiles, with what settings. They read
// and fill the analysis they embed; the rules read them.
type siteFacts struct{ *analysis }
