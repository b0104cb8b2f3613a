// Package syntaxtest generates Python sources of a given size for the tests
// and benchmarks that bound how analysis cost grows with its input: the
// shapes that once made it quadratic (long call chains, deep nesting).
package syntaxtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Shape is a generator of Python text of about size bytes.
type Shape struct {
	Name string
	Gen  func(size int) []byte
}

// header imports what the generated code uses, so names resolve.
const header = "import os\nimport threading\nimport torch\nimport torch._inductor.config as config\n"

// Shapes are the sources the linearity tests run at two sizes.
var Shapes = []Shape{
	{"chain lines", ChainLines},
	{"one deep chain", DeepChain},
	{"one deep chain, unclosed", BrokenDeepChain},
	{"chained assignment", ChainedAssignment},
	{"nested calls", NestedCalls},
	{"threaded training script", Threaded},
}

// ChainLines repeats x = torch.a.b().c().d()... lines, a few dozen calls
// each, with a flag write and an environment read now and then.
func ChainLines(size int) []byte {
	var b strings.Builder
	b.WriteString(header)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "x%d = torch.a", i)
		for j := range 40 {
			fmt.Fprintf(&b, ".m%d()", j%10)
		}
		b.WriteString("\n")
		if i%16 == 0 {
			b.WriteString("config.triton.cudagraphs = True\nv = os.environ.get(\"TORCHINDUCTOR_CUDAGRAPHS\")\n")
		}
	}
	return []byte(b.String())
}

// DeepChain is one statement: x = torch.a.m0().m1()... on a single line.
func DeepChain(size int) []byte {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("x = torch.a")
	for j := 0; b.Len() < size; j++ {
		fmt.Fprintf(&b, ".m%d()", j%10)
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// BrokenDeepChain is DeepChain with its last call left open, as while
// typing: the parser recovers around an error, and names fall back to the
// line scan.
func BrokenDeepChain(size int) []byte {
	src := DeepChain(size)
	return append(src[:len(src)-2], []byte("(config.triton.\n")...)
}

// ChainedAssignment is config.x = config.y = ... = True, one statement.
func ChainedAssignment(size int) []byte {
	var b strings.Builder
	b.WriteString(header)
	for b.Len() < size {
		b.WriteString("config.triton.cudagraphs = ")
	}
	b.WriteString("True\n")
	return []byte(b.String())
}

// NestedCalls is f(g(f(g(...config.debug...)))), nested as deep as size
// allows.
func NestedCalls(size int) []byte {
	n := (size - len(header) - 32) / 6 // a level costs "torch.f(" and ")", or "g(" and ")"
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("y = ")
	for i := range n {
		if i%2 == 0 {
			b.WriteString("torch.f(")
		} else {
			b.WriteString("g(")
		}
	}
	b.WriteString("config.debug")
	b.WriteString(strings.Repeat(")", n))
	b.WriteString("\n")
	return []byte(b.String())
}

// Threaded repeats a block of what the checks look for: compiled
// functions with CUDA graphs run from thread pools and threads, config
// writes and patches (one of an unknown flag), and environment variables
// set after torch is imported.
func Threaded(size int) []byte {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("from concurrent.futures import ThreadPoolExecutor\nconfig.triton.cudagraph_trees = False\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `
@torch.compile(mode="reduce-overhead")
def step%[1]d(x):
    return torch.relu(x) + config.max_autotune


def work%[1]d(batch):
    config.debug = True
    with config.patch({"triton.cudagraphs": False, "triton.no_such_flag%[1]d": 1}):
        return step%[1]d(batch)


pool%[1]d = ThreadPoolExecutor(2)
future%[1]d = pool%[1]d.submit(work%[1]d, %[1]d)
threading.Thread(target=lambda: work%[1]d(%[1]d)).start()
os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "1"
`, i)
	}
	return []byte(b.String())
}

// Quadratic are texts on which tree-sitter itself takes time quadratic in
// their length, in its error recovery (which summarises an ERROR node's
// growing list of children once per token) or in its Python scanner
// (which reads a run of line continuations again for every token): at 32
// KB they took 0.25 to 2.3 s of CPU each, against 10 ms for as much real
// Python. A parse of them stops at syntax.CPULimit. The fuzz targets that
// parse keep such inputs in their seed corpora.
var Quadratic = []Shape{
	{"ellipses", repeat("...")},
	{"dots after a name", func(size int) []byte { return append([]byte("x = a"), repeat(".")(size-5)...) }},
	{"line continuations", repeat("\\\n")},
	{"unclosed imports", repeat("from . import (")},
	{"exec statements", repeat("exec ")},
	{"keywords", repeat("if for while with try def class return yield ")},
	{"conditionals without else", func(size int) []byte {
		return append(append([]byte("x = "), repeat("a if b ")(size-5)...), 'c')
	}},
}

// repeat returns a generator of text about size bytes long: unit repeated.
func repeat(unit string) func(size int) []byte {
	return func(size int) []byte {
		return []byte(strings.Repeat(unit, max(size/len(unit), 1)))
	}
}

// Corpus lists real Python files to check a parse against: the modules of
// the interpreter's standard library here (its top level and one level
// down), every .py and .pyi under each of roots, and, with
// TORCHLSP_TORCH211_SITE set, torch 2.11's.
func Corpus(roots ...string) []string {
	var files []string
	for _, pattern := range []string{"/usr/lib/python3*/*.py", "/usr/lib/python3*/*/*.py"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	if site := os.Getenv("TORCHLSP_TORCH211_SITE"); site != "" {
		roots = append(roots, filepath.Join(site, "torch"))
	}
	for _, root := range roots {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".py") || strings.HasSuffix(path, ".pyi")) {
				files = append(files, path)
			}
			return nil
		})
	}
	return files
}
