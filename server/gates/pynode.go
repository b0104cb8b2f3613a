package gates

import "github.com/torchlsp/torchlsp/server/syntax"

// oneLine collapses the whitespace of node text into single spaces.
func oneLine(s string) string { return syntax.OneLine(s) }

// dottedChain flattens identifier(.attr)* into its parts; ok is false for
// anything else (calls, subscripts...).
func dottedChain(s *syntax.Tree, n int32) ([]string, bool) {
	ids := s.Chain(n)
	if ids == nil {
		return nil, false
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = s.Text(id)
	}
	return out, true
}
