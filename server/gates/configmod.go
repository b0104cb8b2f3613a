package gates

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

var installMarker = []byte("install_config_module")

// mightBeConfigModule is the cheap test before parsing: a config module
// names install_config_module and passes sys.modules[__name__].
func mightBeConfigModule(b []byte) bool {
	return bytes.Contains(b, installMarker) && bytes.Contains(b, []byte("sys.modules[__name__]"))
}

// envNameRE is what an environment variable name passed to an env helper looks like.
var envNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)

// typingModules are the modules whose objects install_config_module skips
// (it tests value.__module__ == "typing" or startswith "collections.abc").
var typingModules = map[string]bool{"typing": true, "typing_extensions": true, "collections.abc": true}

// configModuleParser reads one config module the way install_config_module
// walks it at run time: it visits the final namespace of the module (and of
// each nested class), skipping dunder names, modules, functions, typing
// objects and the Config class, turning config-typed values and Config(...)
// into entries and nested classes into sub-configs.
type configModuleParser struct {
	s        *syntax.Tree
	mod      *Module
	file     string
	typeFlag map[string]bool // names bound to TYPE_CHECKING (false at run time)
	funcs    map[string]int32
}

// parseConfigModule returns the module if the tree is a config module.
func parseConfigModule(p *syntax.Parser, b []byte, file, modName string) *Module {
	s := p.Parse(b)
	root := s.Root()
	if root < 0 {
		return nil
	}
	cp := &configModuleParser{s: s, mod: &Module{Name: modName, File: file}, file: file,
		typeFlag: map[string]bool{"TYPE_CHECKING": true}, funcs: map[string]int32{}}
	stmts := s.ChildList(root)
	installers := installerNames(s, stmts)
	installed := false
	for _, st := range stmts {
		if cp.isInstallCall(st, installers) {
			installed = true
		}
	}
	if !installed {
		return nil
	}
	for _, st := range stmts {
		if s.Kind(st) == syntax.KindFunctionDefinition {
			if n := s.Child(st, syntax.FieldName); n >= 0 {
				cp.funcs[s.Text(n)] = st
			}
		}
	}
	cp.visitBlock(stmts, "")
	return cp.mod
}

// installerNames lists the names install_config_module is bound to by the
// module's top-level imports (itself, and any "as" alias).
func installerNames(s *syntax.Tree, stmts []int32) map[string]bool {
	names := map[string]bool{}
	for _, st := range stmts {
		if s.Kind(st) != syntax.KindImportFromStatement {
			continue
		}
		for c := range s.Children(st) {
			switch s.Kind(c) {
			case syntax.KindDottedName:
				if s.Text(c) == "install_config_module" {
					names["install_config_module"] = true
				}
			case syntax.KindAliasedImport:
				if n, a := s.Child(c, syntax.FieldName), s.Child(c, syntax.FieldAlias); n >= 0 && a >= 0 && s.Text(n) == "install_config_module" {
					names[s.Text(a)] = true
				}
			}
		}
	}
	return names
}

// isInstallCall reports a module-level `install_config_module(sys.modules[__name__])`
// call, under the imported name or an alias, or through a module attribute
// (torch.utils._config_module.install_config_module(...)).
func (cp *configModuleParser) isInstallCall(st int32, installers map[string]bool) bool {
	s := cp.s
	if s.Kind(st) != syntax.KindExpressionStatement || s.ChildCount(st) != 1 {
		return false
	}
	call := s.NthChild(st, 0)
	if s.Kind(call) != syntax.KindCall {
		return false
	}
	fn := s.Child(call, syntax.FieldFunction)
	args := s.Child(call, syntax.FieldArguments)
	if fn < 0 || args < 0 {
		return false
	}
	if name := cp.s.Text(fn); !installers[name] && !strings.HasSuffix(name, ".install_config_module") {
		return false
	}
	return strings.Join(strings.Fields(cp.s.Text(args)), "") == "(sys.modules[__name__])"
}

// entry is one name's final binding in a namespace being visited.
type entry struct {
	name  string
	flag  *Flag  // nil when the name is not a config entry
	class string // sub-config prefix when the name is a nested class
}

// visitBlock adds the entries of one namespace (the module or a class body)
// in first-binding order, each name judged by its final binding, as vars()
// shows the namespace once it has run.
func (cp *configModuleParser) visitBlock(stmts []int32, prefix string) {
	order := []string{}
	final := map[string]*entry{}
	bind := func(e *entry) {
		if _, ok := final[e.name]; !ok {
			order = append(order, e.name)
		}
		final[e.name] = e
	}
	unbind := func(name string) { delete(final, name) }
	var walk func(stmts []int32)
	walk = func(stmts []int32) {
		for i, st := range stmts {
			cp.statement(st, stmts, i, prefix, bind, unbind, walk)
		}
	}
	walk(stmts)
	for _, name := range order {
		e, ok := final[name]
		if !ok || strings.HasPrefix(name, "__") {
			continue
		}
		if e.flag != nil {
			cp.mod.Flags = append(cp.mod.Flags, e.flag)
		}
	}
}

func (cp *configModuleParser) statement(st int32, sibs []int32, idx int, prefix string,
	bind func(*entry), unbind func(string), walk func([]int32)) {
	s := cp.s
	switch s.Kind(st) {
	case syntax.KindImportStatement:
		// import a.b binds a module; import a.b as c binds a module.
		for c := range s.Children(st) {
			name := c
			if s.Kind(c) == syntax.KindAliasedImport {
				name = s.Child(c, syntax.FieldAlias)
			} else if s.Kind(c) == syntax.KindDottedName && s.ChildCount(c) > 0 {
				name = s.NthChild(c, 0)
			}
			if name >= 0 {
				bind(&entry{name: s.Text(name)}) // a module: skipped
			}
		}
	case syntax.KindImportFromStatement:
		m := s.Child(st, syntax.FieldModuleName)
		mod := s.Text(m)
		for c := range s.Children(st) {
			if c == m {
				continue
			}
			var orig, name string
			switch s.Kind(c) {
			case syntax.KindAliasedImport:
				orig = s.Text(s.Child(c, syntax.FieldName))
				name = s.Text(s.Child(c, syntax.FieldAlias))
			case syntax.KindDottedName:
				orig, name = s.Text(c), s.Text(c)
			default:
				continue
			}
			if typingModules[mod] && orig == "TYPE_CHECKING" {
				// typing.TYPE_CHECKING is the bool False: a config entry.
				cp.typeFlag[name] = true
				bind(&entry{name: name, flag: cp.newFlag(prefix, name, c, "False", "bool", false)})
				continue
			}
			// Typing objects, functions, modules and classes from elsewhere
			// are all skipped (a foreign class would make install fail).
			bind(&entry{name: name})
		}
	case syntax.KindFutureImportStatement:
	case syntax.KindFunctionDefinition:
		if n := s.Child(st, syntax.FieldName); n >= 0 {
			bind(&entry{name: s.Text(n)})
		}
	case syntax.KindDecoratedDefinition:
		d := s.Child(st, syntax.FieldDefinition)
		if d < 0 {
			return
		}
		if s.Kind(d) == syntax.KindClassDefinition {
			cp.classDef(d, st, prefix, bind)
			return
		}
		if n := s.Child(d, syntax.FieldName); n >= 0 {
			bind(&entry{name: s.Text(n)}) // a function (or a wrapper install would reject)
		}
	case syntax.KindClassDefinition:
		cp.classDef(st, -1, prefix, bind)
	case syntax.KindExpressionStatement:
		cp.walrusBindings(st, prefix, bind)
		if s.ChildCount(st) != 1 {
			return
		}
		e := s.NthChild(st, 0)
		if s.Kind(e) != syntax.KindAssignment {
			return
		}
		cp.assignment(e, st, sibs, idx, prefix, bind)
	case syntax.KindIfStatement:
		cond := s.Child(st, syntax.FieldCondition)
		typeChecking := cond >= 0 && s.Kind(cond) == syntax.KindIdentifier && cp.typeFlag[s.Text(cond)]
		if !typeChecking {
			if b := s.Child(st, syntax.FieldConsequence); b >= 0 {
				walk(s.ChildList(b))
			}
		}
		for alt := range s.Children(st) {
			switch s.Kind(alt) {
			case syntax.KindElifClause:
				if b := s.Child(alt, syntax.FieldConsequence); b >= 0 {
					walk(s.ChildList(b))
				}
			case syntax.KindElseClause:
				if b := s.Child(alt, syntax.FieldBody); b >= 0 {
					walk(s.ChildList(b))
				}
			}
		}
	case syntax.KindTryStatement, syntax.KindWithStatement:
		for c := range s.Children(st) {
			switch s.Kind(c) {
			case syntax.KindBlock:
				walk(s.ChildList(c))
			case syntax.KindExceptClause, syntax.KindElseClause, syntax.KindFinallyClause:
				for cc := range s.Children(c) {
					if s.Kind(cc) == syntax.KindBlock {
						walk(s.ChildList(cc))
					}
				}
			}
		}
	case syntax.KindDeleteStatement:
		for c := range s.Children(st) {
			targets := []int32{c}
			if s.Kind(c) == syntax.KindExpressionList {
				targets = s.ChildList(c)
			}
			for _, t := range targets {
				if s.Kind(t) == syntax.KindIdentifier {
					unbind(s.Text(t))
				}
			}
		}
	}
}

// classDef visits a nested class as a sub-config. A decorator
// inherit_fields_from(base) copies base's public fields that the class does
// not define itself, as torch.utils._config_module.inherit_fields_from does.
func (cp *configModuleParser) classDef(cls, decorated int32, prefix string, bind func(*entry)) {
	s := cp.s
	n := s.Child(cls, syntax.FieldName)
	body := s.Child(cls, syntax.FieldBody)
	if n < 0 || body < 0 {
		return
	}
	name := s.Text(n)
	sub := prefix + name
	cp.mod.SubConfigs = append(cp.mod.SubConfigs, sub)
	first := len(cp.mod.Flags)
	cp.visitBlock(s.ChildList(body), sub+".")
	if decorated >= 0 {
		for dec := range s.Children(decorated) {
			if s.Kind(dec) != syntax.KindDecorator || s.ChildCount(dec) != 1 {
				continue
			}
			call := s.NthChild(dec, 0)
			if s.Kind(call) != syntax.KindCall {
				continue
			}
			fn, args := s.Child(call, syntax.FieldFunction), s.Child(call, syntax.FieldArguments)
			if fn < 0 || args < 0 || !strings.HasSuffix(s.Text(fn), "inherit_fields_from") || s.ChildCount(args) != 1 {
				continue
			}
			cp.inherit(prefix+s.Text(s.NthChild(args, 0)), sub, first)
		}
	}
	bind(&entry{name: name, class: sub})
}

// inherit copies base's fields into sub, skipping private names and names
// sub's own flags (from index first on) already define.
func (cp *configModuleParser) inherit(base, sub string, first int) {
	own := map[string]bool{}
	for _, f := range cp.mod.Flags[first:] {
		own[strings.SplitN(strings.TrimPrefix(f.Key, sub+"."), ".", 2)[0]] = true
	}
	var add []*Flag
	for _, f := range cp.mod.Flags[:first] {
		if !strings.HasPrefix(f.Key, base+".") {
			continue
		}
		rel := strings.TrimPrefix(f.Key, base+".")
		top := strings.SplitN(rel, ".", 2)[0]
		if strings.HasPrefix(top, "_") || own[top] {
			continue
		}
		c := *f
		c.Key = sub + "." + rel
		add = append(add, &c)
	}
	cp.mod.Flags = append(cp.mod.Flags, add...)
}

// walrusBindings binds names assigned by := in a module- or class-level
// statement (outside lambdas): they land in the namespace too.
func (cp *configModuleParser) walrusBindings(n int32, prefix string, bind func(*entry)) {
	s := cp.s
	for c := range s.Children(n) {
		switch s.Kind(c) {
		case syntax.KindLambda, syntax.KindFunctionDefinition, syntax.KindClassDefinition:
			continue
		case syntax.KindNamedExpression:
			if name := s.Child(c, syntax.FieldName); name >= 0 {
				v := s.Child(c, syntax.FieldValue)
				def := ""
				if v >= 0 {
					def = cp.s.Text(v)
				}
				bind(&entry{name: cp.s.Text(name), flag: cp.newFlag(prefix, cp.s.Text(name), name, def, "", false)})
			}
		}
		cp.walrusBindings(c, prefix, bind)
	}
}

// assignment records `name[: T] = value` (chained and tuple targets too).
func (cp *configModuleParser) assignment(a, stmt int32, sibs []int32, idx int, prefix string, bind func(*entry)) {
	s := cp.s
	var targets []int32
	typ := int32(-1)
	value := a
	for value >= 0 && s.Kind(value) == syntax.KindAssignment {
		targets = append(targets, s.Child(value, syntax.FieldLeft))
		if t := s.Child(value, syntax.FieldType); t >= 0 {
			typ = t
		}
		value = s.Child(value, syntax.FieldRight)
	}
	if value < 0 {
		return // annotation only: no binding at run time
	}
	for _, t := range targets {
		if t < 0 {
			continue
		}
		if s.Kind(t) == syntax.KindIdentifier {
			name := s.Text(t)
			if s.Kind(value) == syntax.KindLambda || s.Kind(value) == syntax.KindYield {
				bind(&entry{name: name})
				continue
			}
			f := cp.flagFromValue(prefix, name, t, value, typ)
			f.Doc = cp.docFor(stmt, sibs, idx)
			bind(&entry{name: name, flag: f})
			continue
		}
		if s.Kind(t) == syntax.KindPatternList || s.Kind(t) == syntax.KindTuplePattern {
			for c := range s.Children(t) {
				if s.Kind(c) == syntax.KindIdentifier {
					f := cp.newFlag(prefix, s.Text(c), c, s.Text(value), "", false)
					bind(&entry{name: s.Text(c), flag: f})
				}
			}
		}
	}
}

func (cp *configModuleParser) newFlag(prefix, name string, at int32, def, typ string, isConfig bool) *Flag {
	s := cp.s
	return &Flag{Module: cp.mod.Name, Key: prefix + name, File: cp.file,
		Line: int(s.Node(at).StartRow), Col: int(s.Node(at).StartCol), Default: oneLine(def), Type: typ, IsConfig: isConfig}
}

// flagFromValue builds the entry for `name[: typ] = value`.
func (cp *configModuleParser) flagFromValue(prefix, name string, at, value, typ int32) *Flag {
	s := cp.s
	f := cp.newFlag(prefix, name, at, s.Text(value), "", false)
	if typ >= 0 {
		f.Type = oneLine(s.Text(typ))
	}
	if s.Kind(value) == syntax.KindCall && isConfigCall(s, value) {
		f.IsConfig = true
		f.Default = ""
		args := s.Child(value, syntax.FieldArguments)
		pos := 0
		for arg := range s.Children(args) {
			if s.Kind(arg) == syntax.KindComment {
				continue
			}
			if s.Kind(arg) != syntax.KindKeywordArgument {
				if pos == 0 {
					f.Default = oneLine(s.Text(arg))
					cp.collectEnv(arg, f, 0)
				}
				pos++
				continue
			}
			k := s.Text(s.Child(arg, syntax.FieldName))
			v := s.Child(arg, syntax.FieldValue)
			if v < 0 {
				continue
			}
			switch k {
			case "default":
				f.Default = oneLine(s.Text(v))
				cp.collectEnv(v, f, 0)
			case "justknob":
				f.Justknob, _ = s.PlainString(v)
			case "alias":
				f.Alias, _ = s.PlainString(v)
			case "value_type":
				if f.Type == "" {
					f.Type = oneLine(s.Text(v))
				}
			case "env_name_default":
				f.EnvDefault = appendUnique(f.EnvDefault, cp.stringList(v)...)
			case "env_name_force":
				f.EnvForce = appendUnique(f.EnvForce, cp.stringList(v)...)
			}
		}
		if f.Type == "" && f.Default != "" {
			if d := defaultNode(s, value); d >= 0 {
				f.Type = literalType(s, d)
			}
		}
		return f
	}
	if f.Type == "" {
		f.Type = literalType(s, value)
	}
	cp.collectEnv(value, f, 0)
	return f
}

func defaultNode(s *syntax.Tree, call int32) int32 {
	args := s.Child(call, syntax.FieldArguments)
	for i, arg := range s.ChildList(args) {
		if s.Kind(arg) == syntax.KindKeywordArgument {
			if s.Text(s.Child(arg, syntax.FieldName)) == "default" {
				return s.Child(arg, syntax.FieldValue)
			}
		} else if i == 0 && s.Kind(arg) != syntax.KindComment {
			return arg
		}
	}
	return -1
}

func isConfigCall(s *syntax.Tree, call int32) bool {
	fn := s.Child(call, syntax.FieldFunction)
	if fn < 0 {
		return false
	}
	t := s.Text(fn)
	return t == "Config" || strings.HasSuffix(t, ".Config")
}

// literalType infers a Python type name from a literal.
func literalType(s *syntax.Tree, n int32) string {
	switch s.Kind(n) {
	case syntax.KindTrue, syntax.KindFalse:
		return "bool"
	case syntax.KindInteger:
		return "int"
	case syntax.KindFloat:
		return "float"
	case syntax.KindString, syntax.KindConcatenatedString:
		return "str"
	case syntax.KindNone:
		return "None"
	case syntax.KindList, syntax.KindListComprehension:
		return "list"
	case syntax.KindDictionary, syntax.KindDictionaryComprehension:
		return "dict"
	case syntax.KindSet, syntax.KindSetComprehension:
		return "set"
	case syntax.KindTuple:
		return "tuple"
	case syntax.KindComparisonOperator, syntax.KindNotOperator:
		return "bool"
	case syntax.KindParenthesizedExpression:
		if s.ChildCount(n) == 1 {
			return literalType(s, s.NthChild(n, 0))
		}
	case syntax.KindUnaryOperator:
		if s.ChildCount(n) == 1 {
			return literalType(s, s.NthChild(n, 0))
		}
	}
	return ""
}

func (cp *configModuleParser) stringList(v int32) []string {
	s := cp.s
	if str, ok := s.PlainString(v); ok {
		return []string{str}
	}
	var out []string
	if s.Kind(v) == syntax.KindList || s.Kind(v) == syntax.KindTuple {
		for c := range s.Children(v) {
			if str, ok := cp.s.PlainString(c); ok {
				out = append(out, str)
			}
		}
	}
	return out
}

// collectEnv finds env var names read by an expression: string literals
// matching envNameRE passed to a call whose function name mentions "env"
// (os.environ.get, os.getenv, get_tristate_env...), os.environ["X"], and,
// one level deep, the same inside a no-argument helper defined in the module.
func (cp *configModuleParser) collectEnv(n int32, f *Flag, depth int) {
	s := cp.s
	switch s.Kind(n) {
	case syntax.KindCall:
		fn := s.Child(n, syntax.FieldFunction)
		args := s.Child(n, syntax.FieldArguments)
		if fn >= 0 && args >= 0 {
			name := s.Text(fn)
			if strings.Contains(strings.ToLower(name), "env") {
				for a := range s.Children(args) {
					if str, ok := s.PlainString(a); ok && envNameRE.MatchString(str) {
						f.EnvDefault = appendUnique(f.EnvDefault, str)
					}
				}
			}
			if body, ok := cp.funcs[name]; ok && depth == 0 && s.ChildCount(args) == 0 {
				cp.collectEnv(body, f, depth+1)
			}
		}
	case syntax.KindSubscript:
		if v := s.Child(n, syntax.FieldValue); v >= 0 && strings.HasSuffix(s.Text(v), "environ") {
			if sub := s.Child(n, syntax.FieldSubscript); sub >= 0 {
				if str, ok := s.PlainString(sub); ok && envNameRE.MatchString(str) {
					f.EnvDefault = appendUnique(f.EnvDefault, str)
				}
			}
		}
	}
	for c := range s.Children(n) {
		cp.collectEnv(c, f, depth)
	}
}

func appendUnique(list []string, vals ...string) []string {
outer:
	for _, v := range vals {
		for _, x := range list {
			if x == v {
				continue outer
			}
		}
		list = append(list, v)
	}
	return list
}

// docFor finds the documentation of the assignment statement sibs[idx]:
// the run of comment lines right above it, else a trailing comment on its
// last line, else a string statement right after it (attribute docstring).
// Comments are read from the text: tree-sitter may hang a comment that
// opens a block outside that block.
func (cp *configModuleParser) docFor(stmt int32, sibs []int32, idx int) string {
	s := cp.s
	b := cp.s.Src()
	start := int(s.Start(stmt))
	for start > 0 && b[start-1] != '\n' {
		start--
	}
	var above []string
	for lineStart := start; lineStart > 0; {
		prevEnd := lineStart - 1 // the '\n' ending the previous line
		prevStart := prevEnd
		for prevStart > 0 && b[prevStart-1] != '\n' {
			prevStart--
		}
		line := strings.TrimSpace(string(b[prevStart:prevEnd]))
		if !strings.HasPrefix(line, "#") {
			break
		}
		above = append(above, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		lineStart = prevStart
	}
	if len(above) > 0 {
		for i, j := 0, len(above)-1; i < j; i, j = i+1, j-1 {
			above[i], above[j] = above[j], above[i]
		}
		return strings.Join(above, "\n")
	}
	end := int(s.End(stmt))
	eol := end
	for eol < len(b) && b[eol] != '\n' {
		eol++
	}
	if rest := strings.TrimSpace(string(b[end:eol])); strings.HasPrefix(rest, "#") {
		return strings.TrimSpace(strings.TrimPrefix(rest, "#"))
	}
	if idx+1 < len(sibs) {
		next := sibs[idx+1]
		if s.Kind(next) == syntax.KindExpressionStatement && s.ChildCount(next) == 1 {
			if str, ok := cp.s.PlainString(s.NthChild(next, 0)); ok {
				return strings.TrimSpace(str)
			}
		}
	}
	return ""
}
