package gates

import "strings"

// src is one parsed piece of a file: the bytes and the line/byte offset of
// the piece within the file (pieces always start at column 0).
type src struct {
	b        []byte
	lineBase int
}

func (s *src) text(n *node) string {
	return string(s.b[n.StartByte():n.EndByte()])
}

// oneLine collapses the whitespace of node text into single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// childrenOf returns the named children of n.
func childrenOf(n *node) []*node { return n.NamedChildren() }

// stringValue returns the value of a plain string literal (no f-string
// interpolation, implicit concatenation joined) and whether n is one.
func (s *src) stringValue(n *node) (string, bool) {
	switch n.Kind() {
	case "string":
		var b strings.Builder
		for _, c := range childrenOf(n) {
			switch c.Kind() {
			case "string_start":
				t := strings.ToLower(s.text(c))
				if strings.ContainsAny(t, "fb") {
					return "", false
				}
			case "string_content":
				b.WriteString(s.text(c))
			case "escape_sequence":
				b.WriteString(s.text(c))
			case "interpolation":
				return "", false
			}
		}
		return b.String(), true
	case "concatenated_string":
		var b strings.Builder
		for _, c := range childrenOf(n) {
			v, ok := s.stringValue(c)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		}
		return b.String(), true
	case "parenthesized_expression":
		if cs := childrenOf(n); len(cs) == 1 {
			return s.stringValue(cs[0])
		}
	}
	return "", false
}

// dottedChain flattens identifier(.attr)* into its parts; ok is false for
// anything else (calls, subscripts...).
func (s *src) dottedChain(n *node) ([]string, bool) {
	var rev []string
	for {
		switch n.Kind() {
		case "identifier":
			rev = append(rev, s.text(n))
			out := make([]string, len(rev))
			for i := range rev {
				out[i] = rev[len(rev)-1-i]
			}
			return out, true
		case "attribute":
			a := n.ChildByFieldName("attribute")
			o := n.ChildByFieldName("object")
			if a == nil || o == nil {
				return nil, false
			}
			rev = append(rev, s.text(a))
			n = o
		default:
			return nil, false
		}
	}
}
