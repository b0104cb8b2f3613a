package gates

import (
	"bytes"
	"regexp"
	"strings"
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
	s        *src
	mod      *Module
	file     string
	typeFlag map[string]bool // names bound to TYPE_CHECKING (false at run time)
	funcs    map[string]*node
}

// parseConfigModule returns the module if the tree is a config module.
func parseConfigModule(p *parser, b []byte, file, modName string) *Module {
	tree := p.parse(b)
	if tree == nil {
		return nil
	}
	root := tree.Root()
	s := &src{b: b}
	cp := &configModuleParser{s: s, mod: &Module{Name: modName, File: file}, file: file,
		typeFlag: map[string]bool{"TYPE_CHECKING": true}, funcs: map[string]*node{}}
	stmts := childrenOf(root)
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
		if st.Kind() == "function_definition" {
			if n := st.ChildByFieldName("name"); n != nil {
				cp.funcs[s.text(n)] = st
			}
		}
	}
	cp.visitBlock(stmts, "")
	return cp.mod
}

// installerNames lists the names install_config_module is bound to by the
// module's top-level imports (itself, and any "as" alias).
func installerNames(s *src, stmts []*node) map[string]bool {
	names := map[string]bool{}
	for _, st := range stmts {
		if st.Kind() != "import_from_statement" {
			continue
		}
		for _, c := range childrenOf(st) {
			switch c.Kind() {
			case "dotted_name":
				if s.text(c) == "install_config_module" {
					names["install_config_module"] = true
				}
			case "aliased_import":
				if n, a := c.ChildByFieldName("name"), c.ChildByFieldName("alias"); n != nil && a != nil && s.text(n) == "install_config_module" {
					names[s.text(a)] = true
				}
			}
		}
	}
	return names
}

// isInstallCall reports a module-level `install_config_module(sys.modules[__name__])`
// call, under the imported name or an alias, or through a module attribute
// (torch.utils._config_module.install_config_module(...)).
func (cp *configModuleParser) isInstallCall(st *node, installers map[string]bool) bool {
	if st.Kind() != "expression_statement" || st.NamedChildCount() != 1 {
		return false
	}
	call := st.NamedChild(0)
	if call.Kind() != "call" {
		return false
	}
	fn := call.ChildByFieldName("function")
	args := call.ChildByFieldName("arguments")
	if fn == nil || args == nil {
		return false
	}
	if name := cp.s.text(fn); !installers[name] && !strings.HasSuffix(name, ".install_config_module") {
		return false
	}
	return strings.Join(strings.Fields(cp.s.text(args)), "") == "(sys.modules[__name__])"
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
func (cp *configModuleParser) visitBlock(stmts []*node, prefix string) {
	order := []string{}
	final := map[string]*entry{}
	bind := func(e *entry) {
		if _, ok := final[e.name]; !ok {
			order = append(order, e.name)
		}
		final[e.name] = e
	}
	unbind := func(name string) { delete(final, name) }
	var walk func(stmts []*node)
	walk = func(stmts []*node) {
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

func (cp *configModuleParser) statement(st *node, sibs []*node, idx int, prefix string,
	bind func(*entry), unbind func(string), walk func([]*node)) {
	s := cp.s
	switch st.Kind() {
	case "import_statement":
		// import a.b binds a module; import a.b as c binds a module.
		for _, c := range childrenOf(st) {
			name := c
			if c.Kind() == "aliased_import" {
				name = c.ChildByFieldName("alias")
			} else if c.Kind() == "dotted_name" && c.NamedChildCount() > 0 {
				name = c.NamedChild(0)
			}
			if name != nil {
				bind(&entry{name: s.text(name)}) // a module: skipped
			}
		}
	case "import_from_statement":
		mod := ""
		if m := st.ChildByFieldName("module_name"); m != nil {
			mod = s.text(m)
		}
		for _, c := range childrenOf(st) {
			if c == nil || c.StartByte() == st.ChildByFieldName("module_name").StartByte() {
				continue
			}
			var orig, name string
			switch c.Kind() {
			case "aliased_import":
				orig = s.text(c.ChildByFieldName("name"))
				name = s.text(c.ChildByFieldName("alias"))
			case "dotted_name":
				orig, name = s.text(c), s.text(c)
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
	case "future_import_statement":
	case "function_definition":
		if n := st.ChildByFieldName("name"); n != nil {
			bind(&entry{name: s.text(n)})
		}
	case "decorated_definition":
		d := st.ChildByFieldName("definition")
		if d == nil {
			return
		}
		if d.Kind() == "class_definition" {
			cp.classDef(d, st, prefix, bind)
			return
		}
		if n := d.ChildByFieldName("name"); n != nil {
			bind(&entry{name: s.text(n)}) // a function (or a wrapper install would reject)
		}
	case "class_definition":
		cp.classDef(st, nil, prefix, bind)
	case "expression_statement":
		cp.walrusBindings(st, prefix, bind)
		if st.NamedChildCount() != 1 {
			return
		}
		e := st.NamedChild(0)
		if e.Kind() != "assignment" {
			return
		}
		cp.assignment(e, st, sibs, idx, prefix, bind)
	case "if_statement":
		cond := st.ChildByFieldName("condition")
		typeChecking := cond != nil && cond.Kind() == "identifier" && cp.typeFlag[s.text(cond)]
		if !typeChecking {
			if b := st.ChildByFieldName("consequence"); b != nil {
				walk(childrenOf(b))
			}
		}
		for _, alt := range childrenOf(st) {
			switch alt.Kind() {
			case "elif_clause":
				if b := alt.ChildByFieldName("consequence"); b != nil {
					walk(childrenOf(b))
				}
			case "else_clause":
				if b := alt.ChildByFieldName("body"); b != nil {
					walk(childrenOf(b))
				}
			}
		}
	case "try_statement", "with_statement":
		for _, c := range childrenOf(st) {
			switch c.Kind() {
			case "block":
				walk(childrenOf(c))
			case "except_clause", "else_clause", "finally_clause":
				for _, cc := range childrenOf(c) {
					if cc.Kind() == "block" {
						walk(childrenOf(cc))
					}
				}
			}
		}
	case "delete_statement":
		for _, c := range childrenOf(st) {
			targets := []*node{c}
			if c.Kind() == "expression_list" {
				targets = childrenOf(c)
			}
			for _, t := range targets {
				if t.Kind() == "identifier" {
					unbind(s.text(t))
				}
			}
		}
	}
}

// classDef visits a nested class as a sub-config. A decorator
// inherit_fields_from(base) copies base's public fields that the class does
// not define itself, as torch.utils._config_module.inherit_fields_from does.
func (cp *configModuleParser) classDef(cls, decorated *node, prefix string, bind func(*entry)) {
	s := cp.s
	n := cls.ChildByFieldName("name")
	body := cls.ChildByFieldName("body")
	if n == nil || body == nil {
		return
	}
	name := s.text(n)
	sub := prefix + name
	cp.mod.SubConfigs = append(cp.mod.SubConfigs, sub)
	first := len(cp.mod.Flags)
	cp.visitBlock(childrenOf(body), sub+".")
	if decorated != nil {
		for _, dec := range childrenOf(decorated) {
			if dec.Kind() != "decorator" || dec.NamedChildCount() != 1 {
				continue
			}
			call := dec.NamedChild(0)
			if call.Kind() != "call" {
				continue
			}
			fn, args := call.ChildByFieldName("function"), call.ChildByFieldName("arguments")
			if fn == nil || args == nil || !strings.HasSuffix(s.text(fn), "inherit_fields_from") || args.NamedChildCount() != 1 {
				continue
			}
			cp.inherit(prefix+s.text(args.NamedChild(0)), sub, first)
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
func (cp *configModuleParser) walrusBindings(n *node, prefix string, bind func(*entry)) {
	for _, c := range childrenOf(n) {
		switch c.Kind() {
		case "lambda", "function_definition", "class_definition":
			continue
		case "named_expression":
			if name := c.ChildByFieldName("name"); name != nil {
				v := c.ChildByFieldName("value")
				def := ""
				if v != nil {
					def = cp.s.text(v)
				}
				bind(&entry{name: cp.s.text(name), flag: cp.newFlag(prefix, cp.s.text(name), name, def, "", false)})
			}
		}
		cp.walrusBindings(c, prefix, bind)
	}
}

// assignment records `name[: T] = value` (chained and tuple targets too).
func (cp *configModuleParser) assignment(a, stmt *node, sibs []*node, idx int, prefix string, bind func(*entry)) {
	s := cp.s
	var targets []*node
	var typ *node
	value := a
	for value != nil && value.Kind() == "assignment" {
		targets = append(targets, value.ChildByFieldName("left"))
		if t := value.ChildByFieldName("type"); t != nil {
			typ = t
		}
		value = value.ChildByFieldName("right")
	}
	if value == nil {
		return // annotation only: no binding at run time
	}
	for _, t := range targets {
		if t == nil {
			continue
		}
		if t.Kind() == "identifier" {
			name := s.text(t)
			if value.Kind() == "lambda" || value.Kind() == "yield" {
				bind(&entry{name: name})
				continue
			}
			f := cp.flagFromValue(prefix, name, t, value, typ)
			f.Doc = cp.docFor(stmt, sibs, idx)
			bind(&entry{name: name, flag: f})
			continue
		}
		if t.Kind() == "pattern_list" || t.Kind() == "tuple_pattern" {
			for _, c := range childrenOf(t) {
				if c.Kind() == "identifier" {
					f := cp.newFlag(prefix, s.text(c), c, s.text(value), "", false)
					bind(&entry{name: s.text(c), flag: f})
				}
			}
		}
	}
}

func (cp *configModuleParser) newFlag(prefix, name string, at *node, def, typ string, isConfig bool) *Flag {
	return &Flag{Module: cp.mod.Name, Key: prefix + name, File: cp.file,
		Line: at.Row() + cp.s.lineBase, Col: at.Col(), Default: oneLine(def), Type: typ, IsConfig: isConfig}
}

// flagFromValue builds the entry for `name[: typ] = value`.
func (cp *configModuleParser) flagFromValue(prefix, name string, at, value, typ *node) *Flag {
	s := cp.s
	f := cp.newFlag(prefix, name, at, s.text(value), "", false)
	if typ != nil {
		f.Type = oneLine(s.text(typ))
	}
	if value.Kind() == "call" && isConfigCall(s, value) {
		f.IsConfig = true
		f.Default = ""
		args := value.ChildByFieldName("arguments")
		pos := 0
		for _, arg := range childrenOf(args) {
			if arg.Kind() == "comment" {
				continue
			}
			if arg.Kind() != "keyword_argument" {
				if pos == 0 {
					f.Default = oneLine(s.text(arg))
					cp.collectEnv(arg, f, 0)
				}
				pos++
				continue
			}
			k := s.text(arg.ChildByFieldName("name"))
			v := arg.ChildByFieldName("value")
			if v == nil {
				continue
			}
			switch k {
			case "default":
				f.Default = oneLine(s.text(v))
				cp.collectEnv(v, f, 0)
			case "justknob":
				f.Justknob, _ = s.stringValue(v)
			case "alias":
				f.Alias, _ = s.stringValue(v)
			case "value_type":
				if f.Type == "" {
					f.Type = oneLine(s.text(v))
				}
			case "env_name_default":
				f.EnvDefault = appendUnique(f.EnvDefault, cp.stringList(v)...)
			case "env_name_force":
				f.EnvForce = appendUnique(f.EnvForce, cp.stringList(v)...)
			}
		}
		if f.Type == "" && f.Default != "" {
			if d := defaultNode(s, value); d != nil {
				f.Type = literalType(d)
			}
		}
		return f
	}
	if f.Type == "" {
		f.Type = literalType(value)
	}
	cp.collectEnv(value, f, 0)
	return f
}

func defaultNode(s *src, call *node) *node {
	args := call.ChildByFieldName("arguments")
	for i, arg := range childrenOf(args) {
		if arg.Kind() == "keyword_argument" {
			if s.text(arg.ChildByFieldName("name")) == "default" {
				return arg.ChildByFieldName("value")
			}
		} else if i == 0 && arg.Kind() != "comment" {
			return arg
		}
	}
	return nil
}

func isConfigCall(s *src, call *node) bool {
	fn := call.ChildByFieldName("function")
	if fn == nil {
		return false
	}
	t := s.text(fn)
	return t == "Config" || strings.HasSuffix(t, ".Config")
}

// literalType infers a Python type name from a literal.
func literalType(n *node) string {
	switch n.Kind() {
	case "true", "false":
		return "bool"
	case "integer":
		return "int"
	case "float":
		return "float"
	case "string", "concatenated_string":
		return "str"
	case "none":
		return "None"
	case "list", "list_comprehension":
		return "list"
	case "dictionary", "dictionary_comprehension":
		return "dict"
	case "set", "set_comprehension":
		return "set"
	case "tuple":
		return "tuple"
	case "comparison_operator", "not_operator":
		return "bool"
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return literalType(n.NamedChild(0))
		}
	case "unary_operator":
		if n.NamedChildCount() == 1 {
			return literalType(n.NamedChild(0))
		}
	}
	return ""
}

func (cp *configModuleParser) stringList(v *node) []string {
	if str, ok := cp.s.stringValue(v); ok {
		return []string{str}
	}
	var out []string
	if v.Kind() == "list" || v.Kind() == "tuple" {
		for _, c := range childrenOf(v) {
			if str, ok := cp.s.stringValue(c); ok {
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
func (cp *configModuleParser) collectEnv(n *node, f *Flag, depth int) {
	s := cp.s
	switch n.Kind() {
	case "call":
		fn := n.ChildByFieldName("function")
		args := n.ChildByFieldName("arguments")
		if fn != nil && args != nil {
			name := s.text(fn)
			if strings.Contains(strings.ToLower(name), "env") {
				for _, a := range childrenOf(args) {
					if str, ok := s.stringValue(a); ok && envNameRE.MatchString(str) {
						f.EnvDefault = appendUnique(f.EnvDefault, str)
					}
				}
			}
			if body, ok := cp.funcs[name]; ok && depth == 0 && args.NamedChildCount() == 0 {
				cp.collectEnv(body, f, depth+1)
			}
		}
	case "subscript":
		if v := n.ChildByFieldName("value"); v != nil && strings.HasSuffix(s.text(v), "environ") {
			if sub := n.ChildByFieldName("subscript"); sub != nil {
				if str, ok := s.stringValue(sub); ok && envNameRE.MatchString(str) {
					f.EnvDefault = appendUnique(f.EnvDefault, str)
				}
			}
		}
	}
	for _, c := range childrenOf(n) {
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
func (cp *configModuleParser) docFor(stmt *node, sibs []*node, idx int) string {
	b := cp.s.b
	start := int(stmt.StartByte())
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
	end := int(stmt.EndByte())
	eol := end
	for eol < len(b) && b[eol] != '\n' {
		eol++
	}
	if rest := strings.TrimSpace(string(b[end:eol])); strings.HasPrefix(rest, "#") {
		return strings.TrimSpace(strings.TrimPrefix(rest, "#"))
	}
	if idx+1 < len(sibs) {
		next := sibs[idx+1]
		if next.Kind() == "expression_statement" && next.NamedChildCount() == 1 {
			if str, ok := cp.s.stringValue(next.NamedChild(0)); ok {
				return strings.TrimSpace(str)
			}
		}
	}
	return ""
}
