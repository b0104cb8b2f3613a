package diagnose

import "github.com/torchlsp/torchlsp/server/syntax"

// isRead reports whether identifier n reads a name (not an attribute, a
// keyword, a parameter, a definition's name or an assignment target).
func (a nameFacts) isRead(n int32) bool {
	t := a.t
	p := t.Parent(n)
	if p < 0 {
		return false
	}
	f := t.Field(n)
	switch t.Kind(p) {
	case syntax.KindAttribute:
		return f != syntax.FieldAttribute
	case syntax.KindKeywordArgument, syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
		return f != syntax.FieldName
	case syntax.KindAssignment, syntax.KindAugmentedAssignment, syntax.KindForStatement, syntax.KindForInClause:
		return f != syntax.FieldLeft
	case syntax.KindFunctionDefinition, syntax.KindClassDefinition, syntax.KindParameters, syntax.KindLambdaParameters,
		syntax.KindTypedParameter, syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern,
		syntax.KindDottedName, syntax.KindAliasedImport, syntax.KindGlobalStatement, syntax.KindNonlocalStatement,
		syntax.KindAsPattern, syntax.KindListSplatPattern, syntax.KindDictionarySplatPattern:
		return false
	}
	return true
}

// readsOf returns the identifiers that read name, in source order; the
// index is made on first use, in one pass over the tree.
func (a nameFacts) readsOf(name string) []int32 {
	a.nameIndex()
	return a.names[name]
}

// bindsOf returns the assignments and for statements that bind name, in
// source order.
func (a nameFacts) bindsOf(name string) []int32 {
	a.nameIndex()
	return a.assigns[name]
}

func (a nameFacts) nameIndex() {
	if a.names != nil {
		return
	}
	t := a.t
	a.names, a.assigns = map[string][]int32{}, map[string][]int32{}
	a.work += t.Len()
	for i := range t.Len() {
		n := int32(i)
		switch t.Kind(n) {
		case syntax.KindIdentifier:
			if a.isRead(n) {
				a.names[t.Text(n)] = append(a.names[t.Text(n)], n)
			}
		case syntax.KindAssignment, syntax.KindAugmentedAssignment, syntax.KindForStatement:
			a.binds(n)
		}
	}
}

// binds records the names an assignment or for statement binds.
func (a nameFacts) binds(n int32) {
	t := a.t
	l := t.Unwrap(t.Child(n, syntax.FieldLeft))
	switch t.Kind(l) {
	case syntax.KindIdentifier:
		a.assigns[t.Text(l)] = append(a.assigns[t.Text(l)], n)
	case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindTuple, syntax.KindListPattern, syntax.KindExpressionList:
		for _, c := range t.CodeChildren(l) {
			if t.Kind(c) == syntax.KindIdentifier {
				a.assigns[t.Text(c)] = append(a.assigns[t.Text(c)], n)
			}
		}
	}
}

// nameFacts: which identifiers are read and bound, by name. It reads and fills the analysis it embeds.
type nameFacts struct{ *analysis }
