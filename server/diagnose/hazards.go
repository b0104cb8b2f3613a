package diagnose

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// The field hazards: each is decided by a line of the target's torch
// that makes it happen, and says nothing on a torch without that line.
const (
	fileTrees        = "torch/_inductor/cudagraph_trees.py"
	fileConfigModule = "torch/utils/_config_module.py"
	fileOutputCode   = "torch/_inductor/output_code.py"
	fileConvertFrame = "torch/_dynamo/convert_frame.py"
	dynamoConfig     = "torch._dynamo.config"
)

// overwriteCheck is the line of the target's cudagraph_trees.py that
// reports an output overwritten by a later run, or -1.
func (c *checker) overwriteCheck() int {
	return c.files.find(fileTrees, 0, "overwritten by a subsequent run")
}

// perThreadConfig is the line of the target's _config_module.py that
// keeps config overrides in a ContextVar (per thread), or -1.
func (c *checker) perThreadConfig() int {
	for from := 0; ; {
		i := c.files.find(fileConfigModule, from, "ContextVar(")
		if i < 0 {
			return -1
		}
		if code := strings.TrimSpace(c.files.text(fileConfigModule, i)); !strings.HasPrefix(code, "#") {
			return i
		}
		from = i + 1
	}
}

// sharedCallable is the line where the target's CompiledFxGraph keeps
// current_callable as a plain attribute, or -1 when it keeps it per
// thread (a property) or has no such class.
func (c *checker) sharedCallable() int {
	class := c.files.find(fileOutputCode, 0, "class CompiledFxGraph")
	if class < 0 || c.files.find(fileOutputCode, 0, "def current_callable(") >= 0 {
		return -1
	}
	if i := c.files.find(fileOutputCode, class, "current_callable:"); i >= 0 {
		return i
	}
	return c.files.find(fileOutputCode, class, "self.current_callable =")
}

// callsNamed returns the calls of the buffer whose callee's last name is
// name (f(x), self.f(x)), made once per analysis.
func (a *analysis) callsNamed(name string) []*callInfo {
	if a.byCallee == nil {
		a.byCallee = map[string][]*callInfo{}
		for _, c := range a.calls {
			a.work++
			if c.callee != "" {
				a.byCallee[c.callee] = append(a.byCallee[c.callee], c)
			}
		}
	}
	return a.byCallee[name]
}

// maxScan bounds the nodes a check looks at past a binary search: beyond
// it, the check gives up (and says nothing).
const maxScan = 64

// firstFrom returns the index of the first node of nodes (in source
// order) that starts at or after off.
func (a *analysis) firstFrom(nodes []int32, off int) int {
	t := a.t
	a.work += 1 + bits.Len(uint(len(nodes)))
	return sort.Search(len(nodes), func(i int) bool { return t.Start(nodes[i]) >= off })
}

// configNotInThreads reports config overrides made on one thread while
// compiled code runs on others, on a torch that keeps overrides per
// thread (TL012).
func (c *checker) configNotInThreads(rc reach, ctx int) {
	a := c.a
	var hot *compileSite
	var hotStart threadStart
	for _, s := range a.sites {
		if st, ok := rc.sites[s]; ok {
			hot, hotStart = s, st
			break
		}
	}
	if hot == nil {
		return
	}
	inThreads := map[string]bool{}
	for i := range a.refs {
		a.work++
		r := &a.refs[i]
		if _, ok := rc.funcs[r.fn]; ok && r.Write && r.fn >= 0 {
			inThreads[r.Module+"."+r.Key] = true
			if r.Flag != nil && r.Flag.Alias != "" {
				inThreads[r.Flag.Alias] = true
			}
		}
	}
	for i := range a.refs {
		a.work++
		r := &a.refs[i]
		if !r.Write || r.Flag == nil || r.Spelling == SpellOptionsKey || r.Spelling == SpellEnvVar {
			continue
		}
		if _, ok := rc.funcs[r.fn]; ok && r.fn >= 0 {
			continue
		}
		full := r.Module + "." + r.Key
		if inThreads[full] || r.Flag.Alias != "" && inThreads[r.Flag.Alias] {
			continue
		}
		deflt := r.Flag.Default
		if target, ok := c.cat.Flag(r.Flag.Alias); r.Flag.Alias != "" && ok {
			deflt = target.Default
		}
		d := Diagnostic{
			Code: CodeConfigPerThread, Severity: SeverityWarning, Span: r.Span,
			Message: fmt.Sprintf("%s keeps config overrides per thread (a ContextVar, %s:%d): %s set here is not seen by the compiled code run by %s, which uses the default (%s); set it in the function the thread runs, or with %s.patch there",
				c.torchName(), fileConfigModule, ctx+1, full, c.runBy(hotStart), oneLineText(deflt, 24), r.Module),
			Related: []Related{
				{File: fileConfigModule, Line: ctx, Message: c.files.text(fileConfigModule, ctx)},
				c.flagRelated(r.Flag, r.Key+" is defined here"),
			},
		}
		if fix, ok := c.setInThreadFix(r, hotStart); ok {
			d.Fixes = append(d.Fixes, fix)
		}
		c.add(d)
	}
}

// setInThreadFix copies a one-line module-level config write to the top
// of the function a thread start runs.
func (c *checker) setInThreadFix(r *FlagRef, st threadStart) (Fix, bool) {
	a, t := c.a, c.t
	if r.fn >= 0 || r.Spelling != SpellAttribute || r.stmt < 0 || t.StartPos(r.stmt).Line != t.EndPos(r.stmt).Line {
		return Fix{}, false
	}
	def := int32(-1)
	switch {
	case st.within >= 0:
		for _, d := range a.funcs["run"] {
			if t.clsOf[d] == st.within {
				def = d
			}
		}
	case len(st.targets) == 1 && len(a.funcs[st.targets[0]]) == 1:
		def = a.funcs[st.targets[0]][0]
	}
	if def < 0 {
		return Fix{}, false
	}
	if name := t.Text(t.Child(def, syntax.FieldName)); len(a.siteByTarget[name]) > 0 || t.Kind(t.Parent(def)) == syntax.KindDecoratedDefinition {
		return Fix{}, false // compiled (or wrapped) code: a config write there is traced, not run
	}
	text := t.Text(r.stmt)
	head := text
	if i := strings.IndexAny(head, ". ="); i > 0 {
		head = head[:i]
	}
	if _, ok := a.moduleImports()[head]; !ok {
		return Fix{}, false
	}
	body := t.Child(def, syntax.FieldBody)
	stmts := t.CodeChildren(body)
	if len(stmts) == 0 {
		return Fix{}, false
	}
	first := stmts[0]
	if t.Kind(first) == syntax.KindExpressionStatement && len(t.CodeChildren(first)) == 1 && t.Kind(t.CodeChildren(first)[0]) == syntax.KindString {
		if len(stmts) < 2 {
			return Fix{}, false
		}
		first = stmts[1]
	}
	at := t.StartPos(first)
	if at.Line == t.StartPos(def).Line {
		return Fix{}, false // def f(): body on one line
	}
	name := t.Text(t.Child(def, syntax.FieldName))
	return Fix{
		Title:     fmt.Sprintf("Set it in %s, on the thread that runs the compiled code", name),
		Preferred: true,
		Edits:     []Edit{{Span: pybuf.Span{Start: at, End: at}, NewText: text + "\n" + strings.Repeat(" ", at.Col)}},
	}, true
}

// sharedCallableInThreads reports compiled code with CUDA graphs first
// compiled in several threads at once, on a torch whose compiled graphs
// share one callable between threads (TL014).
func (c *checker) sharedCallableInThreads(s *compileSite, st threadStart, cg cudagraphState, rc reach, field int) {
	_, compiledInThread := rc.funcs[s.fn]
	compiledInThread = compiledInThread && s.fn >= 0
	several := st.many || rc.starts[s] >= 2
	if !several || !compiledInThread && c.warmedUp(s, rc) {
		return
	}
	how := "its first calls come from several threads at once"
	if compiledInThread {
		how = "every thread compiles this code"
	}
	mutation := c.files.find(fileOutputCode, 0, "current_callable = cudagraphify(")
	d := Diagnostic{
		Code: CodeSharedCallable, Severity: SeverityWarning, Span: c.siteSpan(s),
		Message: fmt.Sprintf("%s turns on CUDA graphs, and %s (%s): in %s, threads that compile equal graphs share one compiled graph, whose callable (current_callable, %s:%d) CUDA-graph wrapping in one thread replaces for all; call it once on one thread before starting the others, or turn CUDA graphs off for threaded use",
			cg.why, how, c.where(st), c.torchName(), fileOutputCode, field+1),
		Related: []Related{{File: fileOutputCode, Line: field, Message: c.files.text(fileOutputCode, field)}},
	}
	if mutation >= 0 {
		d.Related = append(d.Related, Related{File: fileOutputCode, Line: mutation, Message: c.files.text(fileOutputCode, mutation)})
	}
	if st.ext != nil {
		d.Related = append(append([]Related(nil), st.ext.Path...), d.Related...)
	}
	d.Fixes = c.cudagraphsOffFixes(s, cg)
	c.add(d)
}

// warmedUp reports whether compiled code is also called outside the
// functions threads run: a warm-up that compiles it on one thread.
func (c *checker) warmedUp(s *compileSite, rc reach) bool {
	a := c.a
	for _, name := range s.targets {
		for _, call := range a.callsNamed(name) {
			a.work++
			if call.node == s.node {
				continue
			}
			if _, inThread := rc.funcs[call.fn]; inThread && call.fn >= 0 {
				continue
			}
			if c.t.fnOf[call.node] >= 0 && c.t.Kind(c.t.fnOf[call.node]) != syntax.KindFunctionDefinition {
				continue
			}
			if a.inLambda(call.node) {
				continue // pool.submit(lambda: f(x)) runs in the thread
			}
			return true
		}
	}
	return false
}

// inLambda reports whether node n is inside a lambda.
func (a *analysis) inLambda(n int32) bool {
	t := a.t
	for p, k := t.Parent(n), 0; p >= 0 && k < 256; p, k = t.Parent(p), k+1 {
		switch t.Kind(p) {
		case syntax.KindLambda:
			return true
		case syntax.KindFunctionDefinition, syntax.KindClassDefinition:
			return false
		}
	}
	return false
}

// tensorFactories make a tensor whose size their positional arguments
// give.
var tensorFactories = map[string]bool{
	"torch.randn": true, "torch.rand": true, "torch.zeros": true, "torch.ones": true, "torch.empty": true,
	"torch.full": true, "torch.arange": true, "torch.randint": true, "torch.randperm": true, "torch.eye": true,
}

// loopValues describes the values a loop variable takes.
type loopValues struct {
	n    int    // distinct values
	kind string // "int", "shape", "dtype"
}

// maxLoopValues bounds how many literal values of an iterable are read.
const maxLoopValues = 4096

// iterValues reads a literal iterable: a list, tuple or set of int
// literals, of tuples of them, or of torch dtypes; range() of int
// literals; or a name assigned one of those once.
func (a *analysis) iterValues(n int32) (loopValues, bool) {
	t := a.t
	n = a.resolve(n)
	switch t.Kind(n) {
	case syntax.KindList, syntax.KindTuple, syntax.KindSet:
		seen := map[string]bool{}
		kind := ""
		for _, e := range t.CodeChildren(n) {
			a.work++
			if len(seen) > maxLoopValues {
				return loopValues{}, false
			}
			k := ""
			switch {
			case t.literalKind(e) == "int":
				k = "int"
			case t.Kind(t.Unwrap(e)) == syntax.KindTuple && allInts(t, t.Unwrap(e)):
				k = "shape"
			case strings.HasPrefix(a.chainQual(e), "torch.") && torchDtypes[strings.TrimPrefix(a.chainQual(e), "torch.")]:
				k = "dtype"
			default:
				return loopValues{}, false
			}
			if kind != "" && k != kind {
				return loopValues{}, false
			}
			kind = k
			seen[strings.Join(strings.Fields(t.Text(e)), "")] = true
		}
		return loopValues{n: len(seen), kind: kind}, len(seen) > 0
	case syntax.KindCall:
		f := t.Child(n, syntax.FieldFunction)
		if t.Kind(f) != syntax.KindIdentifier || t.Text(f) != "range" || a.qual(f) != "" {
			return loopValues{}, false
		}
		var nums []int
		for _, arg := range t.CodeChildren(t.Child(n, syntax.FieldArguments)) {
			v, err := strconv.Atoi(strings.ReplaceAll(t.Text(t.Unwrap(arg)), "_", ""))
			if err != nil || t.literalKind(arg) != "int" {
				return loopValues{}, false
			}
			nums = append(nums, v)
		}
		start, stop, step := 0, 0, 1
		switch len(nums) {
		case 1:
			stop = nums[0]
		case 2:
			start, stop = nums[0], nums[1]
		case 3:
			start, stop, step = nums[0], nums[1], nums[2]
		default:
			return loopValues{}, false
		}
		if step == 0 {
			return loopValues{}, false
		}
		count := (stop - start + step - sign(step)) / step
		if count <= 0 {
			return loopValues{}, false
		}
		return loopValues{n: count, kind: "int"}, true
	}
	return loopValues{}, false
}

func sign(x int) int {
	if x < 0 {
		return -1
	}
	return 1
}

func allInts(t *tree, n int32) bool {
	cs := t.CodeChildren(n)
	for _, c := range cs {
		if t.literalKind(c) != "int" {
			return false
		}
	}
	return len(cs) > 0
}

// torchDtypes are the dtype attributes of the torch module.
var torchDtypes = map[string]bool{
	"float16": true, "float32": true, "float64": true, "bfloat16": true, "half": true, "float": true, "double": true,
	"int8": true, "int16": true, "int32": true, "int64": true, "uint8": true, "long": true, "int": true, "short": true,
	"bool": true, "complex64": true, "complex128": true, "float8_e4m3fn": true, "float8_e5m2": true,
}

// loopOf returns the loop variable and iterable of the innermost for
// statement or comprehension clause whose body holds call c, in c's own
// function.
func (a *analysis) loopOf(c *callInfo) (v, iter, body int32, ok bool) {
	t := a.t
	p := t.loop[c.node]
	a.work++
	switch t.Kind(p) {
	case syntax.KindForStatement:
		l, r := t.Unwrap(t.Child(p, syntax.FieldLeft)), t.Child(p, syntax.FieldRight)
		return l, r, p, t.Kind(l) == syntax.KindIdentifier && r >= 0
	case syntax.KindListComprehension, syntax.KindGeneratorExpression, syntax.KindSetComprehension, syntax.KindDictionaryComprehension:
		for _, cl := range t.CodeChildren(p) {
			if t.Kind(cl) == syntax.KindForInClause {
				l, r := t.Unwrap(t.Child(cl, syntax.FieldLeft)), t.Child(cl, syntax.FieldRight)
				return l, r, p, t.Kind(l) == syntax.KindIdentifier && r >= 0
			}
		}
	}
	return -1, -1, -1, false
}

// varies says what of argument expression n changes with loop variable
// v: "size" (a tensor made or sliced with it), "dtype", "value" (v
// itself), or "".
func (a *analysis) varies(n int32, v string, body int32, depth int) string {
	t := a.t
	n = t.Unwrap(n)
	a.work++
	switch t.Kind(n) {
	case syntax.KindIdentifier:
		if t.Text(n) == v {
			return "value"
		}
		if depth > 0 {
			return ""
		}
		// x = torch.randn(n, 8) earlier in the loop body: the last one
		// before n.
		as := a.bindsOf(t.Text(n))
		i := a.firstFrom(as, t.Start(n)) - 1
		if i >= 0 && a.within(as[i], body) {
			if r := t.Child(as[i], syntax.FieldRight); r >= 0 && t.Kind(as[i]) == syntax.KindAssignment {
				if k := a.varies(r, v, body, depth+1); k != "" && k != "value" {
					return k
				}
			}
		}
	case syntax.KindCall:
		if !tensorFactories[a.chainQual(t.Child(n, syntax.FieldFunction))] {
			return ""
		}
		for _, arg := range t.CodeChildren(t.Child(n, syntax.FieldArguments)) {
			a.work++
			switch t.Kind(arg) {
			case syntax.KindKeywordArgument:
				name, val := t.Text(t.Child(arg, syntax.FieldName)), t.Unwrap(t.Child(arg, syntax.FieldValue))
				if name == "dtype" && t.Kind(val) == syntax.KindIdentifier && t.Text(val) == v {
					return "dtype"
				}
				if name == "size" && mentions(t, val, v) {
					return "size"
				}
			default:
				if mentions(t, arg, v) {
					return "size"
				}
			}
		}
	case syntax.KindSubscript:
		if s := t.Child(n, syntax.FieldSubscript); s >= 0 && mentions(t, s, v) {
			return "size"
		}
	}
	return ""
}

// mentions reports whether expression n is v, or a tuple, list, slice or
// arithmetic of parts that include v, a few levels deep.
func mentions(t *tree, n int32, v string) bool {
	var walk func(n int32, depth int) bool
	walk = func(n int32, depth int) bool {
		n = t.Unwrap(n)
		if depth > 4 || n < 0 {
			return false
		}
		switch t.Kind(n) {
		case syntax.KindIdentifier:
			return t.Text(n) == v
		case syntax.KindTuple, syntax.KindList, syntax.KindSlice, syntax.KindBinaryOperator, syntax.KindUnaryOperator:
			for _, c := range t.CodeChildren(n) {
				if walk(c, depth+1) {
					return true
				}
			}
		}
		return false
	}
	return walk(n, 0)
}

// recompileLimit is the target's recompile limit as the buffer leaves it:
// a module-level write of recompile_limit (or its older name
// cache_size_limit) to an int, else the flag's default.
func (c *checker) recompileLimit() (limit int, key string, cite Related, ok bool) {
	a := c.a
	flag := a.lookupFlag(dynamoConfig, "recompile_limit")
	if flag == nil || flag.Alias != "" {
		flag = a.lookupFlag(dynamoConfig, "cache_size_limit")
	}
	if flag == nil {
		return 0, "", Related{}, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(flag.Default))
	if err != nil {
		return 0, "", Related{}, false
	}
	cite = c.flagRelated(flag, fmt.Sprintf("%s = %d", flag.Key, v))
	for i := range a.refs {
		r := &a.refs[i]
		if r.Write && r.fn < 0 && r.Flag != nil && r.Module == dynamoConfig && r.valueNode >= 0 &&
			(r.Flag == flag || r.Flag.Alias == flag.FullKey() || flag.Alias == r.Flag.FullKey()) {
			if n, err := strconv.Atoi(c.t.Text(r.valueNode)); err == nil {
				v = n
			}
		}
	}
	return v, flag.Key, cite, true
}

// staticShapes reports whether site s compiles every shape on its own:
// dynamic=False, or automatic dynamic shapes turned off at module level.
func (c *checker) staticShapes(s *compileSite) (bool, string) {
	t := c.t
	if v := s.settingValue("dynamic"); v >= 0 && t.Kind(v) == syntax.KindFalse {
		return true, "dynamic=False"
	}
	for i := range c.a.refs {
		r := &c.a.refs[i]
		if r.Write && r.fn < 0 && r.Module == dynamoConfig && r.Key == "automatic_dynamic_shapes" && r.Value == "False" {
			return true, fmt.Sprintf("automatic_dynamic_shapes = False (line %d)", r.Span.Start.Line+1)
		}
	}
	return false, ""
}

// recompiles reports compiled code called with more distinct shapes,
// values or dtypes than the target compiles or records CUDA graphs for
// before it gives up or warns (TL013).
func (c *checker) recompiles() {
	a, t := c.a, c.t
	limit, limitKey, limitCite, haveLimit := c.recompileLimit()
	seen := map[string]bool{}
	for _, s := range a.sites {
		for _, name := range s.targets {
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			for _, call := range a.callsNamed(name) {
				if call.node == s.node || call.qual == "torch.compile" {
					continue
				}
				v, iter, body, ok := a.loopOf(call)
				if !ok {
					continue
				}
				vals, ok := a.iterValues(iter)
				if !ok {
					continue
				}
				kind := ""
				args := append([]int32(nil), call.args...)
				for _, kw := range call.kwargs {
					args = append(args, kw.value)
				}
				for _, arg := range args {
					if k := a.varies(arg, t.Text(v), body, 0); k != "" {
						kind = k
						break
					}
				}
				if kind == "value" && vals.kind == "dtype" {
					kind = "dtype"
				}
				if kind == "" || kind == "value" && vals.kind != "int" {
					continue
				}
				static, why := c.staticShapes(s)
				compiles := vals.n
				if kind != "dtype" && !static {
					compiles = min(vals.n, 2) // automatic dynamic shapes: once static, once dynamic
				}
				switch {
				case haveLimit && compiles > limit:
					c.add(c.pastRecompileLimit(s, call, name, kind, vals.n, limit, limitKey, limitCite, why, iter))
				case kind != "dtype" && !static:
					if d, ok := c.cudagraphReRecords(s, call, name, vals.n, iter); ok {
						c.add(d)
					}
				}
			}
		}
	}
}

// pastRecompileLimit's fix names the limit as the target's config does:
// recompile_limit, or cache_size_limit on a torch older than that name.
func (c *checker) pastRecompileLimit(s *compileSite, call *callInfo, name, kind string, n, limit int, limitKey string, cite Related, static string, iter int32) Diagnostic {
	t := c.t
	what := map[string]string{"size": "shape", "value": "int value", "dtype": "dtype"}[kind]
	fate := "runs uncompiled (eager) for the inputs past the limit"
	d := Diagnostic{Code: CodeRecompileLimit, Severity: SeverityWarning, Span: t.Span(call.calleeNode), Related: []Related{cite}}
	fullgraph := s.settingValue("fullgraph")
	if fullgraph >= 0 && t.Kind(fullgraph) == syntax.KindTrue {
		if l := c.files.find(fileConvertFrame, 0, "Hard failure due to fullgraph=True"); l >= 0 {
			fate = "raises FailOnRecompileLimitHit (fullgraph=True)"
			d.Related = append(d.Related, Related{File: fileConvertFrame, Line: l, Message: c.files.text(fileConvertFrame, l)})
		}
	}
	d.Message = fmt.Sprintf("torch.compile compiles %s once per %s it is called with, and this loop (line %d) calls it with %d different ones: past %s's recompile limit (%d), it %s",
		name, what, t.StartPos(iter).Line+1, n, c.torchName(), limit, fate)
	if static != "" {
		d.Message += fmt.Sprintf("; %s keeps Dynamo from compiling one graph for every size", static)
	}
	d.Message += "; pad or bucket the inputs to a few " + what + "s, or raise torch._dynamo.config." + limitKey
	if dyn, ok := s.settings["dynamic"]; ok && dyn.kw >= 0 && kind == "size" && s.kind == siteCall && s.call != nil {
		d.Fixes = append(d.Fixes, Fix{Title: "Remove dynamic=False (compile one graph for all sizes)", Preferred: true,
			Edits: []Edit{c.deleteArg(s.call, dyn.kw)}})
	}
	return d
}

// cudagraphReRecords reports compiled code with CUDA graphs called with
// more distinct sizes than the target records graphs for without warning.
func (c *checker) cudagraphReRecords(s *compileSite, call *callInfo, name string, n int, iter int32) (Diagnostic, bool) {
	a, t := c.a, c.t
	cg := c.cudagraphs(s)
	if !cg.on {
		return Diagnostic{}, false
	}
	warn := a.lookupFlag(inductorConfig, "triton.cudagraph_dynamic_shape_warn_limit")
	skip := a.lookupFlag(inductorConfig, "triton.cudagraph_skip_dynamic_graphs")
	if warn == nil {
		return Diagnostic{}, false
	}
	limit, err := strconv.Atoi(strings.TrimSpace(warn.Default))
	if err != nil {
		return Diagnostic{}, false
	}
	skipped := skip != nil && skip.Default == "True"
	for i := range a.refs {
		r := &a.refs[i]
		mine := r.Spelling == SpellOptionsKey && r.call == s.node
		global := r.Spelling != SpellOptionsKey && r.Spelling != SpellEnvVar && r.fn < 0
		if !r.Write || !mine && !global {
			continue
		}
		switch {
		case r.Flag == warn:
			if v, err := strconv.Atoi(r.Value); err == nil {
				limit = v
			} else if r.Value == "None" {
				return Diagnostic{}, false
			}
		case skip != nil && r.Flag == skip:
			skipped = r.Value == "True"
		}
	}
	if skipped || n <= limit {
		return Diagnostic{}, false
	}
	d := Diagnostic{
		Code: CodeRecompileLimit, Severity: SeverityWarning, Span: t.Span(call.calleeNode),
		Message: fmt.Sprintf("%s turns on CUDA graphs, which record one graph per distinct input size, and this loop (line %d) calls %s with %d sizes: past %s's triton.cudagraph_dynamic_shape_warn_limit (%d) every new size costs a recording and its own memory; pad or bucket the sizes, or skip CUDA graphs for dynamic shapes (triton.cudagraph_skip_dynamic_graphs)",
			cg.why, t.StartPos(iter).Line+1, name, n, c.torchName(), limit),
		Related: []Related{c.flagRelated(warn, fmt.Sprintf("cudagraph_dynamic_shape_warn_limit = %s", warn.Default))},
	}
	if skip != nil {
		d.Related = append(d.Related, c.flagRelated(skip, "cudagraph_skip_dynamic_graphs = "+skip.Default))
		if cg.kind == "mode" && s.modeKw.node >= 0 && s.optionsNode < 0 {
			flags := map[string]string{}
			for k, v := range c.cat.Modes[s.mode] {
				flags[k] = v
			}
			flags["triton.cudagraph_skip_dynamic_graphs"] = "True"
			var parts []string
			for _, k := range sortedKeys(flags) {
				parts = append(parts, fmt.Sprintf("%q: %s", k, flags[k]))
			}
			d.Fixes = append(d.Fixes, Fix{
				Title:     fmt.Sprintf("Replace mode=%q with its options, skipping CUDA graphs for dynamic shapes", s.mode),
				Preferred: true,
				Edits:     []Edit{{Span: t.Span(s.modeKw.node), NewText: "options={" + strings.Join(parts, ", ") + "}"}},
			})
		}
	}
	return d, true
}
