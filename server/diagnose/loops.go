package diagnose

import (
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// iterValues reads a literal iterable: a list, tuple or set of int
// literals, of tuples of them, or of torch dtypes; range() of int
// literals; or a name assigned one of those once.
func (a loopFacts) iterValues(n int32) (loopValues, bool) {
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

// loopOf returns the loop variable and iterable of the innermost for
// statement or comprehension clause whose body holds call c, in c's own
// function.
func (a loopFacts) loopOf(c *callInfo) (v, iter, body int32, ok bool) {
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
func (a loopFacts) varies(n int32, v string, body int32, depth int) string {
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
		as := nameFacts(a).bindsOf(t.Text(n))
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

// loopFacts are the analysis's facts of one family: what a loop runs over and which arguments vary with it. They read
// and fill the analysis they embed; the rules read them.
type loopFacts struct{ *analysis }
