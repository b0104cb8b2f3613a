package gates

// parseModes reads list_mode_options in torch/_inductor/__init__.py: the
// dict literal of mode → {flag: value} inside it. A mode whose value is a
// name refers to a module-level dict literal in the same file.
func parseModes(parser *parser, b []byte) map[string]map[string]string {
	tree := parser.parse(b)
	if tree == nil {
		return nil
	}
	s := &src{b: b}
	root := tree.Root()
	globals := map[string]*node{}
	var fn *node
	for _, st := range childrenOf(root) {
		def := st
		if st.Kind() == "decorated_definition" {
			def = st.ChildByFieldName("definition")
		}
		if def != nil && def.Kind() == "function_definition" {
			if n := def.ChildByFieldName("name"); n != nil && s.text(n) == "list_mode_options" {
				fn = def
			}
		}
		if st.Kind() == "expression_statement" && st.NamedChildCount() == 1 {
			if a := st.NamedChild(0); a.Kind() == "assignment" {
				l, r := a.ChildByFieldName("left"), a.ChildByFieldName("right")
				if l != nil && r != nil && l.Kind() == "identifier" && r.Kind() == "dictionary" {
					globals[s.text(l)] = r
				}
			}
		}
	}
	if fn == nil {
		return nil
	}
	var modes map[string]map[string]string
	var find func(n *node)
	find = func(n *node) {
		if modes != nil {
			return
		}
		if n.Kind() == "dictionary" && isModeDict(s, n) {
			modes = map[string]map[string]string{}
			for _, pr := range childrenOf(n) {
				if pr.Kind() != "pair" {
					continue
				}
				k, ok := s.stringValue(pr.ChildByFieldName("key"))
				v := pr.ChildByFieldName("value")
				if !ok || v == nil {
					continue
				}
				if v.Kind() == "identifier" {
					v = globals[s.text(v)]
				}
				flags := map[string]string{}
				if v != nil && v.Kind() == "dictionary" {
					for _, fp := range childrenOf(v) {
						if fp.Kind() != "pair" {
							continue
						}
						if fk, ok := s.stringValue(fp.ChildByFieldName("key")); ok {
							flags[fk] = oneLine(s.text(fp.ChildByFieldName("value")))
						}
					}
				}
				modes[k] = flags
			}
			return
		}
		for _, c := range childrenOf(n) {
			find(c)
		}
	}
	find(fn)
	return modes
}

// isModeDict recognizes the mode table by its "default" key.
func isModeDict(s *src, n *node) bool {
	for _, pr := range childrenOf(n) {
		if pr.Kind() == "pair" {
			if k, ok := s.stringValue(pr.ChildByFieldName("key")); ok && k == "default" {
				return true
			}
		}
	}
	return false
}
