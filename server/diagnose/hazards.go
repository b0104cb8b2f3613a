package diagnose

import (
	"math/bits"
	"sort"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// The field hazards: each is decided by a line of the target's torch
// that makes it happen, and says nothing on a torch without that line.
const (
	fileTrees        = "torch/_inductor/cudagraph_trees.py"
	fileConfigModule = "torch/utils/_config_module.py"
	fileOutputCode   = "torch/_inductor/output_code.py"
	fileConvertFrame = "torch/_dynamo/convert_frame.py"
	dynamoConfig     = "torch._dynamo.config"
)

// callsNamed returns the calls of the buffer whose callee's last name is
// name (f(x), self.f(x)), made once per analysis.
func (a *analysis) callsNamed(name string) []*callInfo {
	if a.byCallee == nil {
		a.byCallee = map[string][]*callInfo{}
		for _, c := range a.calls {
			a.work++
			if c.callee != "" {
				a.byCallee[c.callee] = append(a.byCallee[c.callee], c)
			}
		}
	}
	return a.byCallee[name]
}

// maxScan bounds the nodes a check looks at past a binary search: beyond
// it, the check gives up (and says nothing).
const maxScan = 64

// firstFrom returns the index of the first node of nodes (in source
// order) that starts at or after off.
func (a *analysis) firstFrom(nodes []int32, off int) int {
	t := a.t
	a.work += 1 + bits.Len(uint(len(nodes)))
	return sort.Search(len(nodes), func(i int) bool { return t.Start(nodes[i]) >= off })
}

// inLambda reports whether node n is inside a lambda.
func (a *analysis) inLambda(n int32) bool {
	t := a.t
	for p, k := t.Parent(n), 0; p >= 0 && k < 256; p, k = t.Parent(p), k+1 {
		switch t.Kind(p) {
		case syntax.KindLambda:
			return true
		case syntax.KindFunctionDefinition, syntax.KindClassDefinition:
			return false
		}
	}
	return false
}

// tensorFactories make a tensor whose size their positional arguments
// give.
var tensorFactories = map[string]bool{
	"torch.randn": true, "torch.rand": true, "torch.zeros": true, "torch.ones": true, "torch.empty": true,
	"torch.full": true, "torch.arange": true, "torch.randint": true, "torch.randperm": true, "torch.eye": true,
}

// loopValues describes the values a loop variable takes.
type loopValues struct {
	n    int    // distinct values
	kind string // "int", "shape", "dtype"
}

// maxLoopValues bounds how many literal values of an iterable are read.
const maxLoopValues = 4096

func sign(x int) int {
	if x < 0 {
		return -1
	}
	return 1
}

func allInts(t *tree, n int32) bool {
	cs := t.CodeChildren(n)
	for _, c := range cs {
		if t.literalKind(c) != "int" {
			return false
		}
	}
	return len(cs) > 0
}

// torchDtypes are the dtype attributes of the torch module.
var torchDtypes = map[string]bool{
	"float16": true, "float32": true, "float64": true, "bfloat16": true, "half": true, "float": true, "double": true,
	"int8": true, "int16": true, "int32": true, "int64": true, "uint8": true, "long": true, "int": true, "short": true,
	"bool": true, "complex64": true, "complex128": true, "float8_e4m3fn": true, "float8_e5m2": true,
}

// mentions reports whether expression n is v, or a tuple, list, slice or
// arithmetic of parts that include v, a few levels deep.
func mentions(t *tree, n int32, v string) bool {
	var walk func(n int32, depth int) bool
	walk = func(n int32, depth int) bool {
		n = t.Unwrap(n)
		if depth > 4 || n < 0 {
			return false
		}
		switch t.Kind(n) {
		case syntax.KindIdentifier:
			return t.Text(n) == v
		case syntax.KindTuple, syntax.KindList, syntax.KindSlice, syntax.KindBinaryOperator, syntax.KindUnaryOperator:
			for _, c := range t.CodeChildren(n) {
				if walk(c, depth+1) {
					return true
				}
			}
		}
		return false
	}
	return walk(n, 0)
}
