// Package opimpl finds, statically, where a torch install defines its
// compiled operators for the compiler stack: the meta registrations
// (torch/_meta_registrations.py), the decompositions (torch/_decomp, the
// PrimTorch references in torch/_refs), the Python kernels bound with
// py_impl, Inductor's own decompositions and its lowerings and fallbacks
// (torch/_inductor). It reads the mirrored sources with tree-sitter and
// never imports torch: `torch.add` has no Python source, but its
// decomposition, meta function and lowering do, and those are what a
// torch.compile user debugging a lowering needs to read.
//
// Registrations are found by what registers them, not by their spelling:
// the registering functions are seeded (register_decomposition,
// register_meta, register_lowering, make_fallback, the _refs reference
// makers) and every function that passes its parameter on to one of them
// (register_pointwise, register_inplace, a local register_decomposition
// bound to another table, a factory that defines and registers a function)
// becomes a registering function too. Aliases of the operator namespace
// (aten = torch.ops.aten, from torch._ops import ops) and of the
// registering functions (imports, relative imports, functools.partial) are
// followed.
//
// Lines are 0-based. An entry's Line is the line of the registration
// itself: the registering decorator (@register_meta(aten.mm)) or the call
// (make_fallback(aten.randint), add = register_pointwise(aten.add)). Def
// is the first line of the function registered, as Python's
// inspect.getsourcelines reports it (its first decorator), when the
// scanner knows which function that is.
package opimpl

import (
	"fmt"
	"sort"
	"strings"
)

// Op names an operator of torch.ops: aten.add.Tensor is NS "aten", Name
// "add", Overload "Tensor". An empty Overload names the whole packet
// (every overload that has a kernel).
type Op struct {
	NS, Name, Overload string
}

func (o Op) String() string {
	s := o.NS + "." + o.Name
	if o.Overload != "" {
		s += "." + o.Overload
	}
	return s
}

// Packet is the op without its overload.
func (o Op) Packet() Op { return Op{NS: o.NS, Name: o.Name} }

// ParseOp reads "aten.add", "aten.add.Tensor" or "torch.ops.aten.add".
func ParseOp(s string) (Op, bool) {
	s = strings.TrimPrefix(s, "torch.ops.")
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Op{}, false
	}
	for _, p := range parts {
		if p == "" {
			return Op{}, false
		}
	}
	o := Op{NS: parts[0], Name: parts[1]}
	if len(parts) == 3 {
		o.Overload = parts[2]
	}
	return o, true
}

// Kind is the part of the compiler stack an entry belongs to. The order
// of the constants is the order answers list them in.
type Kind uint8

const (
	// KindMeta is a meta function: torch._decomp.meta_table (register_meta,
	// register_decomposition(type="meta")).
	KindMeta Kind = iota + 1
	// KindDecomposition is torch._decomp.decomposition_table, the
	// post-autograd decompositions (torch/_decomp and the torch/_refs
	// references registered as decompositions).
	KindDecomposition
	// KindPreAutograd is the pre-autograd decomposition table.
	KindPreAutograd
	// KindPyImpl is a Python kernel bound to a dispatch key with
	// op.py_impl(DispatchKey.X); Impl.Table names the key.
	KindPyImpl
	// KindRef is a PrimTorch reference: a function of torch._refs named
	// like the callable.
	KindRef
	// KindInductorDecomposition is Inductor's own decomposition table
	// (torch._inductor.decomposition.decompositions).
	KindInductorDecomposition
	// KindLowering is an Inductor lowering (torch._inductor.lowering.lowerings).
	KindLowering
	// KindFallback is an Inductor lowering that calls the eager kernel
	// (make_fallback).
	KindFallback
	// KindOtherDecomposition is a decomposition into another table; Impl.Table
	// names it (rng_decompositions, decomposition_table_for_jvp, …).
	// They come last: these tables serve passes (rng, jvp, no-op removal)
	// rather than the main path.
	KindOtherDecomposition
)

var kindNames = map[Kind]string{
	KindMeta:                  "meta",
	KindDecomposition:         "decomposition",
	KindPreAutograd:           "pre-autograd decomposition",
	KindOtherDecomposition:    "decomposition",
	KindPyImpl:                "py_impl",
	KindRef:                   "ref",
	KindInductorDecomposition: "inductor decomposition",
	KindLowering:              "lowering",
	KindFallback:              "fallback",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Impl is one place where the torch tree defines an op for the compiler
// stack.
type Impl struct {
	Kind Kind
	// Op is what the registration names; its Overload is empty when it
	// registers the whole packet. Refs carry the op their name maps to.
	Op Op
	// Table names the table of a KindOtherDecomposition and the dispatch
	// key of a KindPyImpl.
	Table string
	// Path is the file, slash-separated and relative to the site dir
	// (torch/_meta_registrations.py).
	Path string
	// Line is the 0-based line of the registration: the registering
	// decorator, or the registering call. For a ref, the first line of its
	// definition.
	Line int
	// Col and EndCol delimit, in bytes on Line, the registering callee
	// (register_meta in @register_meta(aten.mm)) or the ref's name.
	Col, EndCol int
	// Func is the registered function's name when known ("" otherwise).
	Func string
	// DefPath and Def locate the registered function: Def is the 0-based
	// first line of its definition (its first decorator), -1 when the
	// scanner does not know the function (make_fallback, pointwise
	// lowerings built by a factory).
	DefPath string
	Def     int
	// Ref is the qualified name of a KindRef entry (torch._refs.add).
	Ref string
	// Cond is the condition of the if statements the registration runs
	// under ("torch.mtia._is_compiled()"), "" when it always runs.
	Cond string
}

// Label describes the entry in a few words: "meta", "lowering",
// "py_impl CompositeImplicitAutograd", "decomposition (rng_decompositions)".
func (im Impl) Label() string {
	switch im.Kind {
	case KindPyImpl:
		if im.Table != "" {
			return "py_impl " + im.Table
		}
	case KindOtherDecomposition:
		if im.Table != "" {
			return "decomposition (" + im.Table + ")"
		}
	}
	return im.Kind.String()
}

// Stats describe a scan.
type Stats struct {
	Files         int // files parsed
	Registrations int // registrations found (an op list counts each op)
	Refs          int // torch._refs names indexed
	Registrars    int // registering functions, seeded and inferred
	// Unresolved counts registering calls whose op the scanner could not
	// name statically (a loop variable, getattr(aten, name), a value
	// computed at run time).
	Unresolved   int
	UnresolvedAt []string // "torch/_inductor/lowering.py:801 register_lowering", 1-based
}

// Table is every registration of one torch tree.
type Table struct {
	Fingerprint string
	Version     string // torch's version, from its version.py
	Impls       []Impl // sorted by op, kind, path, line
	Stats       Stats

	byOp  map[string][]int // "aten.add" -> indexes into Impls (registrations)
	byRef map[string]int   // "torch._refs.add" -> index into Impls
	// byWord lists the packets named "_WORD_…", by namespace and WORD:
	// the candidates for the variants of a many-word op.
	byWord map[string][]Op
}

// index builds the lookup maps; called after a scan or a load.
func (t *Table) index() {
	t.byOp = make(map[string][]int)
	t.byRef = make(map[string]int)
	t.byWord = make(map[string][]Op)
	for i, im := range t.Impls {
		if im.Kind == KindRef {
			t.byRef[im.Ref] = i
			continue
		}
		k := im.Op.Packet().String()
		if _, seen := t.byOp[k]; !seen {
			if rest, ok := strings.CutPrefix(im.Op.Name, "_"); ok {
				w, _, _ := strings.Cut(rest, "_")
				t.byWord[im.Op.NS+"."+w] = append(t.byWord[im.Op.NS+"."+w], im.Op.Packet())
			}
		}
		t.byOp[k] = append(t.byOp[k], i)
	}
}

// ForOp returns the registrations of op: for a packet, those of every
// overload; for an overload, those that name it and those that register
// its whole packet.
func (t *Table) ForOp(op Op) []Impl {
	var out []Impl
	for _, i := range t.byOp[op.Packet().String()] {
		im := t.Impls[i]
		if op.Overload == "" || im.Op.Overload == "" || im.Op.Overload == op.Overload {
			out = append(out, im)
		}
	}
	return out
}

// Ref returns the torch._refs entry of a qualified name.
func (t *Table) Ref(qualname string) (Impl, bool) {
	i, ok := t.byRef[qualname]
	if !ok {
		return Impl{}, false
	}
	return t.Impls[i], true
}

// Answer is what the table says about a callable.
type Answer struct {
	Qualname string
	Ops      []Op   // the op the callable maps to, then the related ops that have registrations
	Impls    []Impl // registrations of Ops (in that order), then its refs
}

// ForCallable maps a torch callable to its ops and lists their
// registrations: torch.add is aten.add, F.scaled_dot_product_attention is
// aten.scaled_dot_product_attention and the fused kernels it dispatches to
// (aten._scaled_dot_product_flash_attention, …), torch.Tensor.view is
// aten.view. Related ops are named by ATen's conventions: _X and native_X
// (aten._softmax for softmax, aten.native_layer_norm for layer_norm), and
// the _-prefixed variants of a many-word X that keep its words in order
// (aten._scaled_dot_product_flash_attention). It returns an Answer
// with no Impls when the table knows nothing of the callable.
func (t *Table) ForCallable(qualname string) Answer {
	ans := Answer{Qualname: qualname}
	op, refs, ok := OpFor(qualname)
	if !ok {
		return ans
	}
	ans.Ops = append(ans.Ops, op)
	if op.Overload == "" {
		ans.Ops = append(ans.Ops, t.related(op)...)
	}
	for _, o := range ans.Ops {
		ans.Impls = append(ans.Impls, t.ForOp(o)...)
	}
	for _, r := range refs {
		if im, ok := t.Ref(r); ok {
			ans.Impls = append(ans.Impls, im)
		}
	}
	if len(ans.Impls) == 0 {
		ans.Ops = nil
	}
	return ans
}

// related lists the packets named like op's companions that have
// registrations, closest names first.
func (t *Table) related(op Op) []Op {
	var out []Op
	for _, name := range []string{"_" + op.Name, "native_" + op.Name} {
		if _, ok := t.byOp[op.NS+"."+name]; ok {
			out = append(out, Op{NS: op.NS, Name: name})
		}
	}
	words := strings.Split(op.Name, "_")
	for _, o := range t.byWord[op.NS+"."+words[0]] {
		if o.Name != "_"+op.Name && variant(words, o.Name) {
			out = append(out, o)
		}
	}
	// Closest first: fewest words, then by name.
	sort.Slice(out, func(i, j int) bool {
		wi, wj := strings.Count(out[i].Name, "_"), strings.Count(out[j].Name, "_")
		if wi != wj {
			return wi < wj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// variant reports whether name is an _-prefixed variant of the op whose
// name has the given words: the same words in order, starting with the
// first, with more inserted or appended (_scaled_dot_product_flash_attention
// and _scaled_dot_product_flash_attention_for_cpu for
// scaled_dot_product_attention), and no backward. One-word names have no
// such variants: _foreach_add and _embedding_bag are other ops.
func variant(words []string, name string) bool {
	if len(words) < 2 || !strings.HasPrefix(name, "_") {
		return false
	}
	got := strings.Split(name[1:], "_")
	if len(got) <= len(words) || got[0] != words[0] {
		return false
	}
	i := 0
	for _, w := range got {
		if w == "backward" {
			return false
		}
		if i < len(words) && w == words[i] {
			i++
		}
	}
	return i == len(words)
}

// namespaces map the Python namespaces of torch's callables to the prefix
// their ATen ops carry and the torch._refs module of their references.
var namespaces = []struct {
	prefix, opPrefix, refs string
}{
	{"torch.nn.functional.", "", "torch._refs.nn.functional."},
	{"torch._C._nn.", "", "torch._refs.nn.functional."},
	{"torch.special.", "special_", "torch._refs.special."},
	{"torch._C._special.", "", "torch._refs.special."},
	{"torch.linalg.", "linalg_", "torch._refs.linalg."},
	{"torch._C._linalg.", "", "torch._refs.linalg."},
	{"torch.fft.", "fft_", "torch._refs.fft."},
	{"torch._C._fft.", "", "torch._refs.fft."},
	{"torch.Tensor.", "", "torch._refs."},
	{"torch._C.TensorBase.", "", "torch._refs."},
	{"torch._C._TensorBase.", "", "torch._refs."},
	{"torch._C._VariableFunctions.", "", "torch._refs."},
	{"torch._VF.", "", "torch._refs."},
	{"torch._refs.nn.functional.", "", "torch._refs.nn.functional."},
	{"torch._refs.special.", "special_", "torch._refs.special."},
	{"torch._refs.linalg.", "linalg_", "torch._refs.linalg."},
	{"torch._refs.fft.", "fft_", "torch._refs.fft."},
	{"torch._refs.", "", "torch._refs."},
	{"torch.", "", "torch._refs."},
}

// OpFor maps a callable's qualified name to the ATen op it runs and the
// torch._refs names that may hold its reference. torch.ops.NS.NAME[.OVL]
// names an op directly.
func OpFor(qualname string) (Op, []string, bool) {
	if rest, ok := strings.CutPrefix(qualname, "torch.ops."); ok {
		op, ok := ParseOp(rest)
		return op, nil, ok
	}
	if rest, ok := strings.CutPrefix(qualname, "torch._ops.ops."); ok {
		op, ok := ParseOp(rest)
		return op, nil, ok
	}
	for _, ns := range namespaces {
		name, ok := strings.CutPrefix(qualname, ns.prefix)
		if !ok {
			continue
		}
		if name == "" || strings.Contains(name, ".") || !isIdent(name) {
			return Op{}, nil, false
		}
		if strings.HasPrefix(name, "__") {
			return Op{}, nil, false // dunders are Python's, not ops
		}
		op := Op{NS: "aten", Name: ns.opPrefix + name}
		// Ops of the sub-namespaces often also exist unprefixed in
		// torch._C._nn etc.; the ref lives in the namespace's module.
		return op, []string{ns.refs + name}, true
	}
	return Op{}, nil, false
}

func isIdent(s string) bool {
	for i, r := range s {
		if r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || (i > 0 && '0' <= r && r <= '9') {
			continue
		}
		return false
	}
	return s != ""
}

// sortImpls orders entries by op, kind, path and line.
func sortImpls(ims []Impl) {
	sort.SliceStable(ims, func(i, j int) bool {
		a, b := ims[i], ims[j]
		if a.Op.Packet() != b.Op.Packet() {
			return a.Op.Packet().String() < b.Op.Packet().String()
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Op.Overload < b.Op.Overload
	})
}
