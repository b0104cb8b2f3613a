package gates

import "github.com/torchlsp/torchlsp/server/syntax"

// parseModes reads list_mode_options in torch/_inductor/__init__.py: the
// dict literal of mode → {flag: value} inside it. A mode whose value is a
// name refers to a module-level dict literal in the same file.
func parseModes(parser *syntax.Parser, b []byte) map[string]map[string]string {
	s := parser.Parse(b)
	root := s.Root()
	if root < 0 {
		return nil
	}
	globals := map[string]int32{}
	fn := int32(-1)
	for st := range s.Children(root) {
		def := st
		if s.Kind(st) == syntax.KindDecoratedDefinition {
			def = s.Child(st, syntax.FieldDefinition)
		}
		if def >= 0 && s.Kind(def) == syntax.KindFunctionDefinition {
			if n := s.Child(def, syntax.FieldName); n >= 0 && s.Text(n) == "list_mode_options" {
				fn = def
			}
		}
		if s.Kind(st) == syntax.KindExpressionStatement && s.ChildCount(st) == 1 {
			if a := s.NthChild(st, 0); s.Kind(a) == syntax.KindAssignment {
				l, r := s.Child(a, syntax.FieldLeft), s.Child(a, syntax.FieldRight)
				if l >= 0 && r >= 0 && s.Kind(l) == syntax.KindIdentifier && s.Kind(r) == syntax.KindDictionary {
					globals[s.Text(l)] = r
				}
			}
		}
	}
	if fn < 0 {
		return nil
	}
	var modes map[string]map[string]string
	var find func(n int32)
	find = func(n int32) {
		if modes != nil {
			return
		}
		if s.Kind(n) == syntax.KindDictionary && isModeDict(s, n) {
			modes = map[string]map[string]string{}
			for pr := range s.Children(n) {
				if s.Kind(pr) != syntax.KindPair {
					continue
				}
				k, ok := s.PlainString(s.Child(pr, syntax.FieldKey))
				v := s.Child(pr, syntax.FieldValue)
				if !ok || v < 0 {
					continue
				}
				if s.Kind(v) == syntax.KindIdentifier {
					v = globals[s.Text(v)]
				}
				flags := map[string]string{}
				if v >= 0 && s.Kind(v) == syntax.KindDictionary {
					for fp := range s.Children(v) {
						if s.Kind(fp) != syntax.KindPair {
							continue
						}
						if fk, ok := s.PlainString(s.Child(fp, syntax.FieldKey)); ok {
							flags[fk] = oneLine(s.Text(s.Child(fp, syntax.FieldValue)))
						}
					}
				}
				modes[k] = flags
			}
			return
		}
		for c := range s.Children(n) {
			find(c)
		}
	}
	find(fn)
	return modes
}

// isModeDict recognizes the mode table by its "default" key.
func isModeDict(s *syntax.Tree, n int32) bool {
	for pr := range s.Children(n) {
		if s.Kind(pr) == syntax.KindPair {
			if k, ok := s.PlainString(s.Child(pr, syntax.FieldKey)); ok && k == "default" {
				return true
			}
		}
	}
	return false
}
