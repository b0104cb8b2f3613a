package diagnose

import (
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Spelling says how user code names a config flag.
type Spelling string

// The spellings of a flag reference.
const (
	// SpellAttribute is a chain through the config module:
	// torch._inductor.config.triton.cudagraphs, or t.cudagraphs with t
	// bound to the triton sub-config.
	SpellAttribute Spelling = "attribute"
	// SpellOptionsKey is a key of torch.compile(options={...}).
	SpellOptionsKey Spelling = "options-key"
	// SpellPatchString is config.patch("key", value).
	SpellPatchString Spelling = "patch-string"
	// SpellPatchDict is a key of config.patch({"key": value}).
	SpellPatchDict Spelling = "patch-dict"
	// SpellPatchKwarg is config.patch(key=value).
	SpellPatchKwarg Spelling = "patch-kwarg"
	// SpellEnvVar is an environment variable torch reads for the flag,
	// named in os.environ[...], os.environ.get, os.getenv, setdefault,
	// os.putenv or monkeypatch.setenv.
	SpellEnvVar Spelling = "env-var"
	// SpellGetattr is getattr/setattr/hasattr(config, "key", ...).
	SpellGetattr Spelling = "getattr"
)

// FlagRef is one place user code names a config flag.
type FlagRef struct {
	// Flag is the flag in the target's catalog; nil when the key is not a
	// flag of Module in the target's torch.
	Flag *gates.Flag
	// Module is the config module (torch._inductor.config).
	Module string
	// Key is the module-relative key (triton.cudagraphs), whether or not
	// it exists.
	Key string
	// KeyPrefix is the leading part of Key that the text does not spell
	// within Span, reached through an alias (t.cudagraphs with t bound to
	// torch._inductor.config.triton has KeyPrefix "triton."); usually "".
	KeyPrefix string
	// Span covers the key as written: the dotted names after the module,
	// the text between a string's quotes, a keyword's name, or the
	// environment variable's name.
	Span     pybuf.Span
	Spelling Spelling
	// Write is set when the code sets the flag (assignment, setattr,
	// patch, options, or setting the environment variable).
	Write bool
	// Value is the source text of the value set, when there is one.
	Value string
	// EnvVar is the environment variable for SpellEnvVar.
	EnvVar string

	probe     bool  // hasattr, or getattr with a default: the key may be missing
	valueNode int32 // the value's node, or -1
	stmt      int32 // the statement holding the reference
	fn        int32 // innermost enclosing function definition, or -1
	call      int32 // the call the key is an argument of, or -1
}

// configModuleAPI names attributes of a config module that are functions
// install_config_module adds, not flags.
var configModuleAPI = map[string]bool{
	"patch": true, "save_config": true, "save_config_portable": true,
	"codegen_config": true, "get_hash": true, "to_dict": true,
	"shallow_copy_dict": true, "load_config": true, "get_config_copy": true,
	"get_serializable_config_copy": true, "get_type": true,
}

// FlagRefs returns every reference to a config flag in the buffer (read
// from the syntax tree it was analysed from), in source order, in all
// spellings. References to keys that are not flags of the target's torch
// are included with a nil Flag.
func FlagRefs(buf *pybuf.Buffer, cat *gates.Catalog) []FlagRef {
	if buf == nil {
		return nil
	}
	return (refFacts{analyze(buf, cat)}).exportedRefs()
}

// FlagAt returns the first of refs (a buffer's FlagRefs) that names a flag
// and whose span holds pos (or ends at it): the flag hover, definition and
// references are about.
func FlagAt(refs []FlagRef, pos pybuf.Pos) (FlagRef, bool) {
	for _, r := range refs {
		if r.Flag != nil && contains(r.Span, pos) {
			return r, true
		}
	}
	return FlagRef{}, false
}

func contains(s pybuf.Span, p pybuf.Pos) bool {
	return !less(p, s.Start) && !less(s.End, p)
}

func less(a, b pybuf.Pos) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
}

// lookupFlag finds the flag key of module mod in the target's catalog.
func (a *analysis) lookupFlag(mod, key string) *gates.Flag {
	f, ok := a.cat.Flag(mod + "." + key)
	if !ok || f.Module != mod {
		return nil
	}
	return f
}

// envFuncs are the calls that name an environment variable in their first
// argument, and whether they set it.
var envFuncs = map[string]bool{
	"os.environ.get": false, "os.getenv": false, "os.environ.pop": true,
	"os.environ.setdefault": true, "os.putenv": true, "os.unsetenv": true,
}

// assigned is the value the right side n of an assignment gives its
// targets: v for each target of a = b = v. Chains are walked once, however
// many targets they have.
func (a *analysis) assigned(n int32) int32 {
	t := a.t
	var path []int32
	for t.Kind(n) == syntax.KindAssignment {
		a.work++
		if v, ok := a.finals[n]; ok {
			n = v
			break
		}
		path = append(path, n)
		n = t.Child(n, syntax.FieldRight)
	}
	for _, p := range path {
		a.finals[p] = n
	}
	return n
}

// valueText is the source text of value node n, made once: the targets of
// a chained assignment share it.
func (a *analysis) valueText(n int32) string {
	a.work++
	if s, ok := a.texts[n]; ok {
		return s
	}
	s := a.t.Text(n)
	a.texts[n] = s
	return s
}

func (a refFacts) exportedRefs() []FlagRef {
	out := append([]FlagRef(nil), a.refs...)
	sort.SliceStable(out, func(i, j int) bool { return less(out[i].Span.Start, out[j].Span.Start) })
	return out
}

// splitModule splits a qualified name into the config module that is its
// longest prefix and the rest.
func (a refFacts) splitModule(q string) (mod, rest string, ok bool) {
	for _, m := range a.modules { // longest first
		if strings.HasPrefix(q, m) && len(q) > len(m) && q[len(m)] == '.' {
			return m, q[len(m)+1:], true
		}
	}
	return "", "", false
}

// isSubconfig reports whether key names a nested class of module mod.
func (a refFacts) isSubconfig(mod, key string) bool {
	return a.subconfigs[mod+"."+key]
}

// attributeRef records the flag an outermost dotted chain names.
func (a refFacts) attributeRef(n int32) {
	t := a.t
	parts := t.Chain(n)
	if len(parts) < 2 {
		return
	}
	// The last identifier resolves to the full qualified name; the name's
	// trailing components are the ones written after the chain's head
	// (the head may be an alias standing for several).
	q := a.qual(parts[len(parts)-1])
	mod, rest, ok := a.splitModule(q)
	if !ok {
		return
	}
	comps := strings.Split(rest, ".")
	written := min(len(comps), len(parts)-1) // components spelled after the chain's head
	firstWritten := len(comps) - written
	// partOf maps component i to its identifier in the chain.
	partOf := func(i int) int32 { return parts[len(parts)-len(comps)+i] }
	key := ""
	for i, c := range comps {
		a.work++
		if key != "" {
			key += "."
		}
		key += c
		f := a.lookupFlag(mod, key)
		if f == nil && a.isSubconfig(mod, key) {
			continue
		}
		if f == nil && (i == 0 && configModuleAPI[c] || strings.HasPrefix(c, "_")) {
			return
		}
		if i < firstWritten { // the head alias itself is not a config object
			return
		}
		id := partOf(i)
		node := t.Parent(id) // the attribute node ending at this component
		if f == nil && (i != len(comps)-1 || a.isCallee(node)) {
			// Calls and deeper chains on an unknown name are more likely
			// helpers the config module imports than flags.
			return
		}
		r := FlagRef{
			Flag: f, Module: mod, Key: key, Spelling: SpellAttribute,
			Span:      pybuf.Span{Start: t.StartPos(partOf(firstWritten)), End: t.EndPos(id)},
			valueNode: -1, call: -1,
		}
		if firstWritten > 0 {
			r.KeyPrefix = strings.Join(comps[:firstWritten], ".") + "."
		}
		if p := t.Parent(node); p >= 0 && t.Field(node) == syntax.FieldLeft {
			switch t.Kind(p) {
			case syntax.KindAssignment, syntax.KindAugmentedAssignment:
				r.Write = true
				if v := a.assigned(t.Child(p, syntax.FieldRight)); v >= 0 {
					r.Value, r.valueNode = a.valueText(v), v
				}
			}
		}
		a.addRef(r, node)
		return
	}
}

func (a refFacts) isCallee(n int32) bool {
	p := a.t.Parent(n)
	return p >= 0 && a.t.Kind(p) == syntax.KindCall && a.t.Field(n) == syntax.FieldFunction
}

func (a refFacts) addRef(r FlagRef, at int32) {
	t := a.t
	a.work++
	r.stmt = t.stmt[at]
	r.fn = t.fnOf[at]
	if r.call >= 0 {
		// @config.patch(...) changes the config while the function it
		// decorates runs: count it as inside that function.
		if p := t.Parent(r.call); p >= 0 && t.Kind(p) == syntax.KindDecorator {
			if dd := t.Parent(p); dd >= 0 && t.Kind(dd) == syntax.KindDecoratedDefinition {
				if def := t.Child(dd, syntax.FieldDefinition); def >= 0 && t.Kind(def) == syntax.KindFunctionDefinition {
					r.fn = def
				}
			}
		}
	}
	a.refs = append(a.refs, r)
}

// keyRef records a flag named by a string or keyword inside a call.
func (a refFacts) keyRef(call int32, mod string, keyNode int32, key string, sp Spelling, value int32) {
	t := a.t
	r := FlagRef{
		Flag: a.lookupFlag(mod, key), Module: mod, Key: key, Spelling: sp,
		Span: t.ContentSpan(keyNode), Write: sp != SpellGetattr, valueNode: -1, call: call,
	}
	if value >= 0 {
		r.Value, r.valueNode, r.Write = a.valueText(value), value, true
	}
	a.addRef(r, keyNode)
}

// patchRefs records the keys of a config module's patch(...) call.
func (a refFacts) patchRefs(c *callInfo, mod string) {
	t := a.t
	args := c.args
	if len(args) >= 1 {
		if key, ok := t.PlainString(args[0]); ok {
			v := int32(-1)
			if len(args) >= 2 {
				v = args[1]
			}
			a.keyRef(c.node, mod, args[0], key, SpellPatchString, v)
		} else if d := t.Unwrap(args[0]); t.Kind(d) == syntax.KindDictionary {
			a.dictRefs(c.node, mod, d, SpellPatchDict)
		}
	}
	for _, kw := range c.kwargs {
		a.keyRef(c.node, mod, kw.name, t.Text(kw.name), SpellPatchKwarg, kw.value)
	}
	for _, d := range c.dictSplats {
		a.dictRefs(c.node, mod, d, SpellPatchDict)
	}
}

// dictRefs records the string keys of a dict display as flag keys.
func (a refFacts) dictRefs(call int32, mod string, d int32, sp Spelling) {
	t := a.t
	for _, p := range t.CodeChildren(d) {
		a.work++
		if t.Kind(p) != syntax.KindPair {
			continue
		}
		k, v := t.Child(p, syntax.FieldKey), t.Child(p, syntax.FieldValue)
		if key, ok := t.PlainString(k); ok && v >= 0 {
			a.keyRef(call, mod, k, key, sp, v)
		}
	}
}

// getattrRef records getattr/setattr/hasattr/delattr(config, "key", ...).
func (a refFacts) getattrRef(c *callInfo) {
	t := a.t
	if len(c.args) < 2 {
		return
	}
	obj := t.Chain(t.Unwrap(c.args[0]))
	if obj == nil {
		return
	}
	q := a.qual(obj[len(obj)-1])
	mod, prefix := "", ""
	if a.isModule[q] {
		mod = q
	} else if m, rest, ok := a.splitModule(q); ok && a.isSubconfig(m, rest) {
		mod, prefix = m, rest+"."
	} else {
		return
	}
	name, ok := t.PlainString(c.args[1])
	if !ok {
		return
	}
	key := prefix + name
	if a.isSubconfig(mod, key) {
		return
	}
	r := FlagRef{
		Flag: a.lookupFlag(mod, key), Module: mod, Key: key, KeyPrefix: prefix,
		Span: t.ContentSpan(c.args[1]), Spelling: SpellGetattr, valueNode: -1, call: c.node,
	}
	switch c.callee {
	case "hasattr":
		r.probe = true
	case "getattr":
		r.probe = len(c.args) >= 3
	case "setattr":
		r.Write = true
		if len(c.args) >= 3 {
			r.Value, r.valueNode = a.valueText(c.args[2]), c.args[2]
		}
	case "delattr":
		r.Write = true
	}
	a.addRef(r, c.args[1])
}

// envCallRefs records environment variables named by calls.
func (a refFacts) envCallRefs(c *callInfo) {
	t := a.t
	if c.qual == "os.environ.update" {
		for _, arg := range c.args {
			if d := t.Unwrap(arg); t.Kind(d) == syntax.KindDictionary {
				for _, p := range t.CodeChildren(d) {
					k, v := t.Child(p, syntax.FieldKey), t.Child(p, syntax.FieldValue)
					if name, ok := t.PlainString(k); ok && t.Kind(p) == syntax.KindPair {
						a.envRef(k, name, true, v)
					}
				}
			}
		}
		for _, kw := range c.kwargs {
			a.envRef(kw.name, t.Text(kw.name), true, kw.value)
		}
		return
	}
	write, known := envFuncs[c.qual]
	if !known {
		// pytest's monkeypatch fixture is a parameter, not an import, so
		// its setenv/delenv are known by name only.
		if c.qual != "" || c.callee != "setenv" && c.callee != "delenv" {
			return
		}
		write = true
	}
	if len(c.args) == 0 {
		return
	}
	name, ok := t.PlainString(c.args[0])
	if !ok {
		return
	}
	v := int32(-1)
	if write && len(c.args) >= 2 {
		v = c.args[1]
	}
	a.envRef(c.args[0], name, write, v)
}

// subscriptEnvRef records os.environ["NAME"], read or written.
func (a refFacts) subscriptEnvRef(n int32) {
	t := a.t
	val, sub := t.Child(n, syntax.FieldValue), t.Child(n, syntax.FieldSubscript)
	if val < 0 || sub < 0 {
		return
	}
	ch := t.Chain(val)
	if ch == nil || a.qual(ch[len(ch)-1]) != "os.environ" {
		return
	}
	name, ok := t.PlainString(sub)
	if !ok {
		return
	}
	write, v := false, int32(-1)
	if p := t.Parent(n); p >= 0 {
		switch t.Kind(p) {
		case syntax.KindAssignment, syntax.KindAugmentedAssignment:
			if t.Field(n) == syntax.FieldLeft {
				write, v = true, a.assigned(t.Child(p, syntax.FieldRight))
			}
		case syntax.KindDeleteStatement:
			write = true
		}
	}
	a.envRef(sub, name, write, v)
}

func (a refFacts) envRef(nameNode int32, name string, write bool, value int32) {
	flags := a.cat.FlagForEnv(name)
	for _, f := range flags {
		r := FlagRef{
			Flag: f, Module: f.Module, Key: f.Key, Spelling: SpellEnvVar, EnvVar: name,
			Span: a.t.ContentSpan(nameNode), Write: write, valueNode: -1, call: -1,
		}
		if value >= 0 {
			r.Value, r.valueNode = a.valueText(value), value
		}
		a.addRef(r, nameNode)
	}
}

// refFacts are the analysis's facts of one family: the references of torch's config flags in every spelling. They read
// and fill the analysis they embed; the rules read them.
type refFacts struct{ *analysis }
