package diagnose

import (
	"slices"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// displayItems are the elements of a tuple or list display.
func (v dictFlow) displayItems(n int32) []int32 {
	a := v.a
	t := a.t
	n = t.Unwrap(n)
	if k := t.Kind(n); k != syntax.KindTuple && k != syntax.KindList {
		return nil
	}
	return t.CodeChildren(n)
}

// dictKwargs are the string-keyed entries of a dict display or dict(...),
// as keyword arguments (kwargs= of a thread).
func (v dictFlow) dictKwargs(n int32) []namedArg {
	entries, _ := v.dictDisplay(v.a.resolve(n))
	out := make([]namedArg, 0, len(entries))
	for _, e := range entries {
		out = append(out, namedArg{e.key, e.value})
	}
	return out
}

// named turns a call's keyword arguments into namedArgs.
func (v dictFlow) named(kws []kwarg) []namedArg {
	out := make([]namedArg, 0, len(kws))
	for _, kw := range kws {
		out = append(out, namedArg{v.a.t.Text(kw.name), kw.value})
	}
	return out
}

func (v dictFlow) builtDictDepth(n, at int32, depth int) (out []dictEntry, ok bool) {
	a := v.a
	t := a.t
	d := a.resolve(n)
	out, ok = v.dictDisplay(d)
	if !ok {
		// options=make_options(): the dict its one return gives back, as
		// built before that return.
		if r := v.onlyReturn(d); r >= 0 && depth < maxDictCalls {
			return v.builtDictDepth(r, r, depth+1)
		}
		return nil, false
	}
	name := t.Unwrap(n)
	if t.Kind(name) != syntax.KindIdentifier {
		return out, true
	}
	v.dictWriteIndex()
	fn := t.fnOf[d]
	type write struct {
		start   int
		entries []dictEntry
	}
	var ws []write
	for _, w := range a.vals.itemWrites[t.Text(name)] {
		a.work++
		if t.fnOf[w] != fn || t.Start(w) >= t.Start(at) || t.Start(w) < t.Start(d) {
			continue
		}
		sub := t.Child(t.Unwrap(t.Child(w, syntax.FieldLeft)), syntax.FieldSubscript)
		if k, ok := t.PlainString(sub); ok {
			ws = append(ws, write{t.Start(w), []dictEntry{{k, t.Child(w, syntax.FieldRight)}}})
		}
	}
	for _, c := range a.vals.updates[t.Text(name)] {
		a.work++
		if c.fn != fn || t.Start(c.node) >= t.Start(at) || t.Start(c.node) < t.Start(d) {
			continue
		}
		var es []dictEntry
		for _, arg := range c.args {
			if e, ok := v.dictDisplay(a.resolve(arg)); ok {
				es = append(es, e...)
			}
		}
		for _, kw := range c.kwargs {
			es = append(es, dictEntry{t.Text(kw.name), kw.value})
		}
		ws = append(ws, write{t.Start(c.node), es})
	}
	// Both lists are in source order: merge them.
	slices.SortStableFunc(ws, func(x, y write) int { return x.start - y.start })
	for _, w := range ws {
		out = append(out, w.entries...)
	}
	return out, true
}

// dictDisplay reads the string-keyed entries of a dict display or of
// dict(...) made from one, from pairs, from **displays or from keywords.
func (v dictFlow) dictDisplay(d int32) ([]dictEntry, bool) {
	a := v.a
	t := a.t
	d = t.Unwrap(d)
	var out []dictEntry
	switch t.Kind(d) {
	case syntax.KindDictionary:
		for _, p := range t.CodeChildren(d) {
			a.work++
			switch t.Kind(p) {
			case syntax.KindPair:
				if k, ok := t.PlainString(t.Child(p, syntax.FieldKey)); ok {
					out = append(out, dictEntry{k, t.Child(p, syntax.FieldValue)})
				}
			case syntax.KindDictionarySplat:
				if cs := t.CodeChildren(p); len(cs) == 1 && t.Kind(t.Unwrap(cs[0])) == syntax.KindDictionary {
					e, _ := v.dictDisplay(cs[0])
					out = append(out, e...)
				}
			}
		}
		return out, true
	case syntax.KindCall:
		f := t.Child(d, syntax.FieldFunction)
		args := t.Child(d, syntax.FieldArguments)
		if t.Kind(f) != syntax.KindIdentifier || t.Text(f) != "dict" || a.qual(f) != "" || args < 0 || t.Kind(args) != syntax.KindArgumentList {
			return nil, false
		}
		for _, arg := range t.CodeChildren(args) {
			a.work++
			switch t.Kind(arg) {
			case syntax.KindKeywordArgument:
				if name := t.Child(arg, syntax.FieldName); name >= 0 {
					out = append(out, dictEntry{t.Text(name), t.Child(arg, syntax.FieldValue)})
				}
			case syntax.KindDictionarySplat:
				if cs := t.CodeChildren(arg); len(cs) == 1 && t.Kind(t.Unwrap(cs[0])) == syntax.KindDictionary {
					e, _ := v.dictDisplay(cs[0])
					out = append(out, e...)
				}
			case syntax.KindDictionary:
				e, _ := v.dictDisplay(arg)
				out = append(out, e...)
			case syntax.KindList, syntax.KindTuple:
				// dict([("k", v), ...])
				for _, pr := range t.CodeChildren(arg) {
					a.work++
					pr = t.Unwrap(pr)
					if t.Kind(pr) != syntax.KindTuple {
						continue
					}
					if kv := t.CodeChildren(pr); len(kv) == 2 {
						if k, ok := t.PlainString(kv[0]); ok {
							out = append(out, dictEntry{k, kv[1]})
						}
					}
				}
			}
		}
		return out, true
	}
	return nil, false
}

// dictWriteIndex indexes the item assignments name[k] = v and the calls
// name.update(...) by name, at most maxDictWrites each; made once.
func (v dictFlow) dictWriteIndex() {
	a := v.a
	if v.itemWrites != nil {
		return
	}
	t := a.t
	v.itemWrites, v.updates = map[string][]int32{}, map[string][]*callInfo{}
	for _, n := range v.flows {
		a.work++
		if t.Kind(n) != syntax.KindAssignment {
			continue
		}
		l := t.Unwrap(t.Child(n, syntax.FieldLeft))
		if t.Kind(l) != syntax.KindSubscript {
			continue
		}
		if obj := t.Unwrap(t.Child(l, syntax.FieldValue)); t.Kind(obj) == syntax.KindIdentifier && len(v.itemWrites[t.Text(obj)]) < maxDictWrites {
			v.itemWrites[t.Text(obj)] = append(v.itemWrites[t.Text(obj)], n)
		}
	}
	for _, c := range a.calls {
		a.work++
		if c.callee != "update" || t.Kind(c.calleeNode) != syntax.KindAttribute {
			continue
		}
		if obj := t.Unwrap(t.Child(c.calleeNode, syntax.FieldObject)); t.Kind(obj) == syntax.KindIdentifier && len(v.updates[t.Text(obj)]) < maxDictWrites {
			v.updates[t.Text(obj)] = append(v.updates[t.Text(obj)], c)
		}
	}
}

// dictFlow: the dicts the buffer builds (displays, dict(), item writes, update) as the flow reads settings and containers from them. It reads and fills the value flow it embeds.
type dictFlow struct{ *valueFlow }
