package diagnose

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// TL019: compiled code run under activation checkpointing from outside
// compiled code: torch.utils.checkpoint.checkpoint(compiled, x),
// checkpoint_wrapper(compiled_module), or a model's
// gradient_checkpointing_enable() where parts of that model are compiled.
// The backward runs the compiled code again to recompute the activations,
// on autograd's own thread, where Dynamo's guard on global state fails
// ("GLOBAL_STATE changed: num_threads") and it compiles again; the graph
// compiled there may save other tensors than the forward's did, and
// non-reentrant checkpoint's check raises CheckpointError ("A different
// number of tensors was saved during the original forward and
// recomputation"; pytorch issue 166926, anemoi-core 1330; with CUDA
// graphs pytorch issue 148829). Compiling the function that calls
// checkpoint is the supported shape: Dynamo wraps the checkpointed region
// in a higher-order op and never runs compiled code in the recomputation.

const (
	fileCheckpoint        = "torch/utils/checkpoint.py"
	fileCheckpointWrapper = "torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py"
)

// checkpointLines are the lines of the target's torch/utils/checkpoint.py
// the hazard rests on (-1 when absent): count is the recomputation's
// check that raises CheckpointError, recompute where non-reentrant
// checkpoint runs the function again from the backward's unpack hook,
// note torch's own remark there that it "does not work when fn is
// compiled", reentrant where CheckpointFunction.backward runs it again,
// reentrantDefault where checkpoint falls back to the reentrant variant
// when use_reentrant is not given, and hop the note on how torch.compile
// traces checkpoint.
type checkpointLines struct {
	count, recompute, note, reentrant, reentrantDefault, hop int
}

// lines reads them; ok is false when the target has no recomputation
// check (no such torch, or one without the mechanism).
func (c ruleTL019) lines() (l checkpointLines, ok bool) {
	f := c.files
	l.count = f.find(fileCheckpoint, 0, "A different number of tensors was saved")
	if l.count < 0 {
		return l, false
	}
	l.recompute = f.find(fileCheckpoint, 0, "frame.recompute_fn")
	l.note = f.find(fileCheckpoint, 0, "does not work when fn is compiled")
	if class := f.findStatement(fileCheckpoint, 0, "class", "class CheckpointFunction("); class >= 0 {
		l.reentrant = f.find(fileCheckpoint, class, "ctx.run_function(")
	} else {
		l.reentrant = -1
	}
	if def := f.topLevelDefLine(fileCheckpoint, "checkpoint"); def >= 0 {
		l.reentrantDefault = f.find(fileCheckpoint, def, "use_reentrant = True")
	} else {
		l.reentrantDefault = -1
	}
	l.hop = f.find(fileCheckpoint, 0, "Note: [torch.compile and checkpoint]")
	return l, true
}

// topLevelDefLine returns the line of rel's module-level `def name(`, or
// -1.
func (s *siteFiles) topLevelDefLine(rel, name string) int {
	def, _ := s.topLevelDef(rel, name)
	return def
}

// compiledUnderCheckpoint reports compiled code that activation
// checkpointing runs again in the backward (TL019).
func (c ruleTL019) compiledUnderCheckpoint() {
	a := c.a
	if len(a.sites) == 0 {
		return
	}
	var ckpts, wrappers, enables []*callInfo
	for _, call := range a.callsNamed("checkpoint") {
		if call.qual == "torch.utils.checkpoint.checkpoint" {
			ckpts = append(ckpts, call)
		}
	}
	for _, call := range a.callsNamed("checkpoint_wrapper") {
		if call.qual == "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper" ||
			call.qual == "torch.distributed.algorithms._checkpoint.checkpoint_wrapper" {
			wrappers = append(wrappers, call)
		}
	}
	for _, call := range a.callsNamed("gradient_checkpointing_enable") {
		if c.t.Kind(call.calleeNode) == syntax.KindAttribute {
			enables = append(enables, call)
		}
	}
	if len(ckpts)+len(wrappers)+len(enables) == 0 {
		return
	}
	l, ok := c.lines()
	if !ok {
		return
	}
	names := ruleTL017(c).compiledNames()
	for _, call := range ckpts {
		a.work++
		if len(call.args) == 0 || c.inCompiled(call) {
			continue
		}
		if what, line, ok := c.compiledValue(names, call.args[0]); ok {
			v := variantNonReentrant
			if c.reentrant(call, l) {
				v = variantReentrant
			}
			c.report(call, call.args[0], what, line, v, l, "")
		}
	}
	for _, call := range wrappers {
		a.work++
		if len(call.args) == 0 || c.inCompiled(call) {
			continue
		}
		if what, line, ok := c.compiledValue(names, call.args[0]); ok {
			v := variantNonReentrant // checkpoint_wrapper's default, CheckpointImpl.NO_REENTRANT
			if kw, ok := call.keyword("checkpoint_impl", c.t); ok && c.t.LastName(c.t.Unwrap(kw.value)) == "REENTRANT" {
				v = variantReentrant
			}
			via := "checkpoint_wrapper"
			if w := c.files.findStatement(fileCheckpointWrapper, 0, "def", "def checkpoint_wrapper("); w >= 0 {
				via = fmt.Sprintf("checkpoint_wrapper (%s:%d)", fileCheckpointWrapper, w+1)
			}
			c.report(call, call.args[0], what, line, v, l, via)
		}
	}
	for _, call := range enables {
		a.work++
		recv := c.t.Unwrap(c.t.Child(call.calleeNode, syntax.FieldObject))
		if what, line, ok := c.compiledPart(recv); ok {
			// The library picks the variant unless the call says.
			c.report(call, call.calleeNode, what, line, c.enableVariant(call), l, "gradient_checkpointing_enable()")
		}
	}
}

// checkpointVariant is which checkpoint runs the recomputation.
type checkpointVariant uint8

const (
	variantNonReentrant checkpointVariant = iota
	variantReentrant
	variantUnknown // a library's default
)

// enableVariant reads use_reentrant from gradient_checkpointing_enable's
// gradient_checkpointing_kwargs when they are a dict display.
func (c ruleTL019) enableVariant(call *callInfo) checkpointVariant {
	t := c.t
	kw, ok := call.keyword("gradient_checkpointing_kwargs", t)
	if !ok {
		return variantUnknown
	}
	d := t.Unwrap(c.a.resolve(t.Unwrap(kw.value)))
	if t.Kind(d) != syntax.KindDictionary {
		return variantUnknown
	}
	for _, pair := range t.CodeChildren(d) {
		k, v := t.Child(pair, syntax.FieldKey), t.Unwrap(t.Child(pair, syntax.FieldValue))
		if k < 0 || strings.Trim(t.Text(k), `"'`) != "use_reentrant" {
			continue
		}
		switch t.Kind(v) {
		case syntax.KindTrue:
			return variantReentrant
		case syntax.KindFalse:
			return variantNonReentrant
		}
	}
	return variantUnknown
}

// report adds the diagnostic at span node n of call.
func (c ruleTL019) report(call *callInfo, n int32, what string, line int, v checkpointVariant, l checkpointLines, via string) {
	t := c.t
	under := "torch.utils.checkpoint"
	if via != "" {
		under = via + ", which runs it under torch.utils.checkpoint,"
	}
	var msg string
	// Information, not a warning: the failure is reported from the field
	// (non-deterministic, models with repeated blocks), and a small block
	// under checkpoint neither recompiled nor failed on torch 2.11 on the
	// GPU host (docs/GPU_HOST.md).
	d := Diagnostic{Code: CodeCompiledUnderCheckpoint, Severity: SeverityInfo, Span: t.Span(n)}
	switch {
	case v == variantUnknown:
		msg = fmt.Sprintf("%s is compiled (line %d) and run under %s here: the backward runs the compiled code again to recompute the activations, on autograd's own thread, where Dynamo may compile it again (reported as \"GLOBAL_STATE changed: num_threads\"); with use_reentrant=False a graph compiled there may save other tensors than the forward's, and %s's check of the recomputation raises CheckpointError (\"A different number of tensors was saved during the original forward and recomputation\", %s:%d; pytorch issue 166926); with CUDA graphs the recomputation fails (pytorch issue 148829); compile the whole model, or the function that calls checkpoint, instead of its parts",
			what, line, under, c.torchName(), fileCheckpoint, l.count+1)
		d.Related = append(d.Related, Related{File: fileCheckpoint, Line: l.count, Message: c.files.text(fileCheckpoint, l.count)})
		if l.reentrant >= 0 {
			d.Related = append(d.Related, Related{File: fileCheckpoint, Line: l.reentrant, Message: "the reentrant variant runs the function again in the backward"})
		}
	case v == variantReentrant && l.reentrant >= 0:
		msg = fmt.Sprintf("%s is compiled (line %d) and run under %s here with the reentrant variant: the backward runs the compiled code again (CheckpointFunction.backward, %s:%d) on autograd's own thread, where Dynamo may compile it again (reported as \"GLOBAL_STATE changed: num_threads\"), and with CUDA graphs the recomputation fails (pytorch issue 148829); compile the function that calls checkpoint, with use_reentrant=False, instead",
			what, line, under, fileCheckpoint, l.reentrant+1)
		d.Related = append(d.Related, Related{File: fileCheckpoint, Line: l.reentrant, Message: "the reentrant variant runs the function again in the backward"})
		if _, given := call.keyword("use_reentrant", t); !given && l.reentrantDefault >= 0 && via == "" {
			d.Related = append(d.Related, Related{File: fileCheckpoint, Line: l.reentrantDefault, Message: "without use_reentrant, checkpoint takes the reentrant variant"})
		}
	default:
		msg = fmt.Sprintf("%s is compiled (line %d) and run under %s here: the backward runs the compiled code again to recompute the activations, on autograd's own thread, where Dynamo may compile it again (reported as \"GLOBAL_STATE changed: num_threads\"); a graph compiled there may save other tensors than the forward's, and %s's check of the recomputation raises CheckpointError (\"A different number of tensors was saved during the original forward and recomputation\", %s:%d; pytorch issue 166926); compile the function that calls checkpoint instead, so that torch.compile traces the checkpointed region itself",
			what, line, under, c.torchName(), fileCheckpoint, l.count+1)
		d.Related = append(d.Related, Related{File: fileCheckpoint, Line: l.count, Message: c.files.text(fileCheckpoint, l.count)})
		if l.recompute >= 0 {
			m := "the backward's unpack hook runs the function again"
			if l.note >= 0 && l.note < l.recompute && l.recompute-l.note < 64 {
				m += " (torch's note: \"does not work when fn is compiled\", line " + fmt.Sprint(l.note+1) + ")"
			}
			d.Related = append(d.Related, Related{File: fileCheckpoint, Line: l.recompute, Message: m})
		}
	}
	if l.hop >= 0 {
		d.Related = append(d.Related, Related{File: fileCheckpoint, Line: l.hop, Message: "checkpoint called inside compiled code is traced as one region"})
	}
	d.Message = msg
	c.add(d)
}

// reentrant reports whether a checkpoint call takes the reentrant
// variant: use_reentrant=True, or no use_reentrant on a torch whose
// checkpoint falls back to it.
func (c ruleTL019) reentrant(call *callInfo, l checkpointLines) bool {
	t := c.t
	if kw, ok := call.keyword("use_reentrant", t); ok {
		return t.Kind(t.Unwrap(kw.value)) == syntax.KindTrue
	}
	if len(call.splats) > 0 {
		return false // **kwargs may give it: the non-reentrant message
	}
	return l.reentrantDefault >= 0
}

// inCompiled reports whether call is made inside a function the file
// compiles (decorated, or passed to torch.compile and bound to its own
// name): torch.compile then traces checkpoint as one region.
func (c ruleTL019) inCompiled(call *callInfo) bool {
	a, t := c.a, c.t
	for fn := call.fn; fn >= 0; fn = t.fnOf[fn] {
		a.work++
		name := t.Text(t.Child(fn, syntax.FieldName))
		if name == "" {
			continue
		}
		if len(a.siteByTarget[name]) > 0 {
			return true
		}
	}
	return false
}

// compiledValue reports whether expression e (what checkpoint runs)
// holds compiled code: a name bound to a compile site's value (or the
// module compiled in place), an attribute named as a compile's target
// (self.block = torch.compile(...)), or an element of a container whose
// elements the file compiles (model.layers[i] = torch.compile(...), for
// layer in model.layers: layer.compile()), taken by index or by a for
// loop. It returns how to name it and the line of its compile.
func (c ruleTL019) compiledValue(names []*hotName, e int32) (string, int, bool) {
	a, t := c.a, c.t
	e = t.Unwrap(e)
	tbl := a.buf.Scopes()
	line := func(s *compileSite) int { return t.StartPos(s.node).Line + 1 }
	switch t.Kind(e) {
	case syntax.KindIdentifier:
		b := ruleTL011(c).bindingAt(tbl, e)
		for _, h := range names {
			a.work++
			if h.name == t.Text(e) && h.bind >= 0 && ruleTL011(c).sameValue(tbl, b, h.bind) {
				return h.name, line(h.site), true
			}
		}
		if coll := c.loopOver(e); coll >= 0 {
			if s := c.compiledElements()[t.LastName(coll)]; s != nil {
				return fmt.Sprintf("%s (an element of %s)", t.Text(e), oneLineText(t.Text(coll), 32)), line(s), true
			}
		}
	case syntax.KindAttribute:
		for _, h := range names {
			a.work++
			if h.name == t.LastName(e) && h.bind < 0 && !(h.site.kind == siteCall && h.site.call == nil) {
				return oneLineText(t.Text(e), 32), line(h.site), true
			}
		}
	case syntax.KindSubscript:
		if coll := t.Unwrap(t.Child(e, syntax.FieldValue)); coll >= 0 {
			if s := c.compiledElements()[t.LastName(coll)]; s != nil {
				return oneLineText(t.Text(e), 32), line(s), true
			}
		}
	}
	return "", 0, false
}

// loopOver returns the collection a for statement of n's own function
// iterates over when it binds identifier n's binding (for layer in
// self.layers; for i, layer in enumerate(self.layers)), or -1.
func (c ruleTL019) loopOver(n int32) int32 {
	a, t := c.a, c.t
	tbl := a.buf.Scopes()
	b := ruleTL011(c).bindingAt(tbl, n)
	if b < 0 {
		return -1
	}
	for _, as := range (nameFacts{a}).bindsOf(t.Text(n)) {
		a.work++
		if t.Kind(as) != syntax.KindForStatement {
			continue
		}
		left := t.Child(as, syntax.FieldLeft)
		if id := c.boundIn(tbl, left, b); id < 0 {
			continue
		}
		return c.iterated(t.Child(as, syntax.FieldRight))
	}
	return -1
}

// boundIn returns the identifier of target pattern left (a name, or a
// tuple or list of names) that binds b, or -1.
func (c ruleTL019) boundIn(tbl *pyscope.Table, left, b int32) int32 {
	t := c.t
	left = t.Unwrap(left)
	if t.Kind(left) == syntax.KindIdentifier {
		if ruleTL011(c).bindingAt(tbl, left) == b {
			return left
		}
		return -1
	}
	for _, ch := range t.CodeChildren(left) {
		if id := c.boundIn(tbl, ch, b); id >= 0 {
			return id
		}
	}
	return -1
}

// iterated returns the collection an iterable expression walks: x for
// x, enumerate(x), reversed(x); -1 for anything else.
func (c ruleTL019) iterated(n int32) int32 {
	t := c.t
	n = t.Unwrap(n)
	if t.Kind(n) == syntax.KindCall {
		fn := t.Unwrap(t.Child(n, syntax.FieldFunction))
		if t.Kind(fn) != syntax.KindIdentifier || (t.Text(fn) != "enumerate" && t.Text(fn) != "reversed") {
			return -1
		}
		args := t.CodeChildren(t.Child(n, syntax.FieldArguments))
		if len(args) == 0 {
			return -1
		}
		n = t.Unwrap(args[0])
	}
	if t.Chain(n) == nil {
		return -1
	}
	return n
}

// compiledElements maps the last name of each container whose elements
// the file compiles to a site that compiles them: X[i] =
// torch.compile(...), or an in-place compile of the variable of a for
// loop over X.
func (c ruleTL019) compiledElements() map[string]*compileSite {
	out := map[string]*compileSite{}
	for _, s := range c.a.sites {
		c.a.work++
		if coll := c.elementsOf(s); coll >= 0 {
			if name := c.t.LastName(coll); name != "" && out[name] == nil {
				out[name] = s
			}
		}
	}
	return out
}

// elementsOf returns the container whose element site s compiles, or -1.
func (c ruleTL019) elementsOf(s *compileSite) int32 {
	a, t := c.a, c.t
	switch s.kind {
	case siteCall:
		if s.call == nil {
			return -1
		}
		n := s.node
		p := t.Parent(n)
		for p >= 0 && t.Kind(p) == syntax.KindParenthesizedExpression {
			n, p = p, t.Parent(p)
		}
		if p < 0 || t.Kind(p) != syntax.KindAssignment || t.Field(n) != syntax.FieldRight {
			return -1
		}
		l := t.Unwrap(t.Child(p, syntax.FieldLeft))
		if t.Kind(l) != syntax.KindSubscript {
			return -1
		}
		coll := t.Unwrap(t.Child(l, syntax.FieldValue))
		if t.Chain(coll) == nil {
			return -1
		}
		return coll
	case siteInPlace:
		obj := t.Unwrap(t.Child(s.call.calleeNode, syntax.FieldObject))
		if t.Kind(obj) != syntax.KindIdentifier {
			return -1
		}
		a.work++
		return c.loopOver(obj)
	}
	return -1
}

// compiledPart reports whether the model that recv names has parts the
// file compiles: an attribute or element of it assigned a compiled value
// (model.encoder = torch.compile(model.encoder), model.layers[i] =
// torch.compile(...)), an attribute of it compiled in place
// (model.encoder.compile()), or the variable of a for loop over an
// attribute of it compiled in place. The model compiled whole is not a
// part: torch.compile traces the checkpoints inside it.
func (c ruleTL019) compiledPart(recv int32) (string, int, bool) {
	a, t := c.a, c.t
	ch := t.Chain(recv)
	if ch == nil {
		return "", 0, false
	}
	tbl := a.buf.Scopes()
	root := ruleTL011(c).bindingAt(tbl, ch[0])
	if root < 0 {
		return "", 0, false
	}
	prefix := t.Text(recv)
	for _, s := range a.sites {
		a.work++
		var part int32 = -1
		elements := false
		switch s.kind {
		case siteCall:
			if s.call == nil {
				continue
			}
			n := s.node
			p := t.Parent(n)
			for p >= 0 && t.Kind(p) == syntax.KindParenthesizedExpression {
				n, p = p, t.Parent(p)
			}
			if p >= 0 && t.Kind(p) == syntax.KindAssignment && t.Field(n) == syntax.FieldRight {
				part = t.Unwrap(t.Child(p, syntax.FieldLeft))
			}
		case siteInPlace:
			obj := t.Unwrap(t.Child(s.call.calleeNode, syntax.FieldObject))
			part = obj
			if t.Kind(obj) == syntax.KindIdentifier {
				part, elements = c.loopOver(obj), true
			}
		}
		if part < 0 {
			continue
		}
		base := part
		for t.Kind(base) == syntax.KindSubscript {
			base = t.Unwrap(t.Child(base, syntax.FieldValue))
		}
		bch := t.Chain(base)
		if bch == nil || t.Text(bch[0]) != t.Text(ch[0]) {
			continue
		}
		// A part: below the model, not the model itself.
		if rest, ok := strings.CutPrefix(t.Text(part), prefix); !ok || rest == "" || rest[0] != '.' && rest[0] != '[' {
			continue
		}
		if b := ruleTL011(c).bindingAt(tbl, bch[0]); !ruleTL011(c).sameValue(tbl, b, root) && !ruleTL011(c).sameValue(tbl, root, b) {
			continue
		}
		what := fmt.Sprintf("%s (a part of %s)", oneLineText(t.Text(part), 32), oneLineText(prefix, 32))
		if elements {
			what = fmt.Sprintf("each of %s (a part of %s, compiled in place)", oneLineText(t.Text(part), 32), oneLineText(prefix, 32))
		}
		return what, t.StartPos(s.node).Line + 1, true
	}
	return "", 0, false
}

// ruleTL019 is the TL019 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL019 struct{ *checker }
