package pyindex

import (
	"cmp"
	"slices"
)

// ReferencesIn finds the places of one source (an open document) whose
// name is the definition def, its own name included: a reference query
// (References) over that source alone, for highlighting a name in the
// document it stands in. names are the spellings to look for besides
// def.Name (the one under the cursor, when the source reaches the
// definition by another name); the names the source binds to the
// definition are searched in it in turn. The answer is cut at
// MaxReferences, by position.
func (ix *Index) ReferencesIn(def Symbol, src Source, names ...string) []Reference {
	if def.File == "" || def.Name == "" || src.Table == nil {
		return nil
	}
	q := &refQuery{
		ix: ix, key: siteKey{def.File, def.Line, def.Col}, opts: ReferenceOptions{IncludeDeclaration: true},
		global: map[string]bool{def.Name: true}, sources: map[string]Source{},
	}
	look := []string{def.Name}
	for _, n := range names {
		if n != "" && !slices.Contains(look, n) {
			look = append(look, n)
		}
	}
	refs, _ := q.scan(src, look)
	slices.SortFunc(refs, func(a, b Reference) int {
		return cmp.Or(cmp.Compare(a.Span.Start.Line, b.Span.Start.Line), cmp.Compare(a.Span.Start.Col, b.Span.Start.Col))
	})
	refs = slices.CompactFunc(refs, func(a, b Reference) bool { return a.Span == b.Span })
	return refs[:min(len(refs), MaxReferences)]
}
