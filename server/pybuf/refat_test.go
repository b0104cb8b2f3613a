package pybuf

import (
	"strings"
	"testing"
)

// cursor cuts the "^" marker out of src and returns the text and the
// position where the marker was.
func cursor(t testing.TB, src string) ([]byte, Pos) {
	t.Helper()
	i := strings.Index(src, "^")
	if i < 0 || strings.Count(src, "^") != 1 {
		t.Fatalf("source needs exactly one ^ marker: %q", src)
	}
	text := src[:i] + src[i+1:]
	line := strings.Count(text[:i], "\n")
	col := i - (strings.LastIndex(text[:i], "\n") + 1)
	return []byte(text), Pos{Line: line, Col: col}
}

type refCase struct {
	name  string
	src   string
	want  string // "" for no answer
	kind  Kind   // 0: not checked
	write bool
	dot   bool // AfterDot
}

var refCases = []refCase{
	// Import forms.
	{name: "import torch", src: "import torch\nx = torch.nn.Lin^ear(3, 4)", want: "torch.nn.Linear", kind: KindCall},
	{name: "import as", src: "import torch as t\nt.zer^os(3)", want: "torch.zeros", kind: KindCall},
	{name: "import dotted as", src: "import torch.nn as nn\nm = nn.Line^ar(3, 4)", want: "torch.nn.Linear", kind: KindCall},
	{name: "alias root", src: "import torch.nn as nn\nm = n^n.Linear(3, 4)", want: "torch.nn", kind: KindName},
	{name: "import dotted binds root", src: "import torch.nn.functional\ntorch.nn.functional.re^lu(x)", want: "torch.nn.functional.relu", kind: KindCall},
	{name: "torch.compile", src: "import torch\nf = torch.comp^ile(fn)", want: "torch.compile", kind: KindCall},
	{name: "from import", src: "from torch import nn\nnn.Con^v2d", want: "torch.nn.Conv2d", kind: KindAttribute},
	{name: "from import as", src: "from torch.nn import functional as F\nF.rel^u(x)", want: "torch.nn.functional.relu"},
	{name: "inductor config", src: "from torch._inductor import config as inductor_config\ninductor_config.triton.cudagraph^s = True", want: "torch._inductor.config.triton.cudagraphs", kind: KindAttribute, write: true},
	{name: "config class import", src: "from torch._inductor.config import triton as inductor_triton_config\ninductor_triton_config.cudagraph_tre^es = False", want: "torch._inductor.config.triton.cudagraph_trees", write: true},
	{name: "full flag write", src: "import torch._inductor.config\ntorch._inductor.config.triton.cudagraph_tre^es = False", want: "torch._inductor.config.triton.cudagraph_trees", kind: KindAttribute, write: true},
	{name: "full flag middle is read", src: "import torch._inductor.config\ntorch._inductor.config.trit^on.cudagraph_trees = False", want: "torch._inductor.config.triton", kind: KindAttribute},
	{name: "augmented write", src: "import torch\ntorch._dynamo.config.cache_size_lim^it += 8", want: "torch._dynamo.config.cache_size_limit", write: true},
	{name: "tuple target write", src: "import torch\ntorch.a.x^, y = 1, 2", want: "torch.a.x", write: true},
	{name: "several imports", src: "import os, torch.nn as nn\nnn.Line^ar", want: "torch.nn.Linear"},
	{name: "parenthesized from import", src: "from torch.nn import (\n    Linear,\n    Conv2^d,\n)", want: "torch.nn.Conv2d", kind: KindImport},
	{name: "dunder", src: "import torch\nprint(torch.__vers^ion__)", want: "torch.__version__"},

	// Names inside import statements.
	{name: "on import root", src: "import tor^ch.nn", want: "torch", kind: KindImport},
	{name: "on import leaf", src: "import torch.n^n", want: "torch.nn", kind: KindImport},
	{name: "on from name", src: "from torch.nn import Lin^ear", want: "torch.nn.Linear", kind: KindImport},
	{name: "on from module", src: "from torch.n^n import Linear", want: "torch.nn", kind: KindImport},
	{name: "on from module root", src: "from tor^ch.nn import Linear", want: "torch", kind: KindImport},
	{name: "on alias", src: "import torch.nn.functional as ^F", want: "torch.nn.functional", kind: KindImport},
	{name: "on from alias", src: "from torch.nn import functional as F^", want: "torch.nn.functional", kind: KindImport},
	{name: "on aliased name", src: "from torch.nn import functio^nal as F", want: "torch.nn.functional", kind: KindImport},
	{name: "relative module", src: "from .mod^els import Net", want: ""},
	{name: "relative name", src: "from .models import Ne^t", want: ""},
	{name: "relative use", src: "from . import torch\ntorch.ze^ros", want: ""},
	{name: "future", src: "from __future__ import annotati^ons", want: ""},

	// Scopes.
	{name: "function import shadows module", src: "import numpy as nn\ndef f():\n    import torch.nn as nn\n    return nn.Line^ar\n", want: "torch.nn.Linear"},
	{name: "module unaffected by function import", src: "import numpy as nn\ndef f():\n    import torch.nn as nn\nnn.arr^ay", want: "numpy.array"},
	{name: "function import does not leak", src: "def f():\n    import torch.nn as nn\nnn.Lin^ear", want: ""},
	{name: "class body import", src: "class C:\n    import torch\n    x = torch.ze^ros", want: "torch.zeros"},
	{name: "class scope invisible to methods", src: "import numpy\nclass Net:\n    import torch as numpy\n    def f(self):\n        return numpy.ze^ros", want: "numpy.zeros"},
	{name: "class attr shadows in body", src: "import torch.nn as nn\nclass C:\n    nn = None\n    x = nn.Lin^ear", want: ""},
	{name: "class body sees module", src: "import torch.nn as nn\nclass Net(nn.Module):\n    act = nn.Re^LU", want: "torch.nn.ReLU"},
	{name: "base class", src: "import torch.nn as nn\nclass Net(nn.Mod^ule):\n    pass", want: "torch.nn.Module"},
	{name: "module import after function", src: "def f():\n    return nn.Lin^ear\nimport torch.nn as nn\n", want: "torch.nn.Linear"},
	{name: "local used before bound", src: "import torch\ndef f():\n    x = torch.ze^ros(1)\n    torch = None\n", want: ""},
	{name: "nonlocal", src: "import torch\ndef outer():\n    nn = torch.nn\n    def inner():\n        nonlocal nn\n        return nn.Lin^ear\n", want: "torch.nn.Linear"},
	{name: "global import in function", src: "def setup():\n    global F\n    import torch.nn.functional as F\ndef g(x):\n    return F.re^lu(x)", want: "torch.nn.functional.relu"},
	{name: "global read", src: "import torch\ndef f():\n    global torch\n    return torch.ze^ros", want: "torch.zeros"},
	{name: "global name itself", src: "import torch\ndef f():\n    global tor^ch\n", want: "torch", kind: KindName},
	{name: "default evaluated outside", src: "import torch\ndef f(torch=torch.ze^ros):\n    pass", want: "torch.zeros"},
	{name: "annotation", src: "import torch\nx: torch.Ten^sor = y", want: "torch.Tensor"},
	{name: "return annotation", src: "import torch\ndef f(x) -> torch.Ten^sor:\n    pass", want: "torch.Tensor"},
	{name: "decorator call", src: "import torch\n@torch.comp^ile(mode=\"reduce-overhead\")\ndef f(x):\n    return x", want: "torch.compile", kind: KindCall},
	{name: "decorator bare", src: "import torch\n@torch.no_gr^ad\ndef f(x):\n    return x", want: "torch.no_grad", kind: KindAttribute},
	{name: "decorated body", src: "import torch\n@torch.compile\ndef f(x):\n    return torch.si^n(x)", want: "torch.sin"},

	// Aliases and shadowing.
	{name: "local alias", src: "import torch\nlin = torch.nn.Linear\nm = li^n(3, 4)", want: "torch.nn.Linear", kind: KindCall},
	{name: "alias of config", src: "import torch\ncfg = torch._inductor.config\ncfg.triton.cudagraph_tre^es = False", want: "torch._inductor.config.triton.cudagraph_trees", write: true},
	{name: "alias definition", src: "import torch\nli^n = torch.nn.Linear", want: "torch.nn.Linear", kind: KindName, write: true},
	{name: "alias in function", src: "import torch\ndef f():\n    cfg = torch._dynamo.config\n    cfg.verbo^se = True", want: "torch._dynamo.config.verbose", write: true},
	{name: "last assignment wins", src: "import torch\ncfg = torch._inductor.config\ncfg = torch._dynamo.config\ncfg.verbo^se", want: "torch._dynamo.config.verbose"},
	{name: "assignment before position", src: "import torch\ncfg = torch._inductor.config\nx = cfg.trit^on\ncfg = torch._dynamo.config", want: "torch._inductor.config.triton"},
	{name: "self-referential alias", src: "import torch\ncfg = torch._inductor.config\ncfg = cfg.triton\ncfg.cudagraph^s", want: "torch._inductor.config.triton.cudagraphs"},
	{name: "alias cycle", src: "a = b.x\nb = a.y\na.z^", want: ""},
	{name: "tuple alias", src: "import torch\nF, nn = torch.nn.functional, torch.nn\nF.re^lu", want: "torch.nn.functional.relu"},
	{name: "chained alias", src: "import torch\na = b = torch.nn\nb.Lin^ear", want: "torch.nn.Linear"},
	{name: "parameter shadows", src: "import torch\ndef f(torch):\n    return torch.ze^ros(3)", want: ""},
	{name: "typed parameter shadows", src: "import torch\ndef f(torch: int = 3):\n    return torch.ze^ros(3)", want: ""},
	{name: "star parameter shadows", src: "import torch\ndef f(*torch, **nn):\n    return torch.ze^ros(3)", want: ""},
	{name: "parameter itself", src: "def f(to^rch): pass", want: ""},
	{name: "rebound to value", src: "import torch\ntorch = 3\ntorch.ze^ros", want: ""},
	{name: "local value shadows", src: "import torch.nn as nn\ndef f():\n    nn = make()\n    return nn.Lin^ear", want: ""},
	{name: "config as local variable", src: "from torch._inductor import config\ndef f(config):\n    return config.trit^on", want: ""},
	{name: "for target shadows", src: "import torch\nfor torch in xs:\n    torch.ze^ros", want: ""},
	{name: "with target shadows", src: "import torch\nwith torch.no_grad() as torch:\n    torch.x^", want: ""},
	{name: "with context", src: "import torch\nwith torch.no_gr^ad():\n    pass", want: "torch.no_grad", kind: KindCall},
	{name: "except target shadows", src: "import torch\ntry:\n    pass\nexcept Exception as torch:\n    torch.ze^ros", want: ""},
	{name: "try except alternative", src: "try:\n    from torch._inductor import config as ic\nexcept ImportError:\n    ic = None\nic.tri^ton", want: "torch._inductor.config.triton"},
	{name: "try except import alternative", src: "try:\n    import torch_xla.core as xc\nexcept ImportError:\n    import torch as xc\nxc.dev^ice", want: "torch_xla.core.device"},
	{name: "comprehension", src: "import torch\nxs = [torch.ze^ros(i) for i in range(3)]", want: "torch.zeros", kind: KindCall},
	{name: "comprehension variable shadows", src: "import torch\nxs = [torch.ze^ros for torch in items]", want: ""},
	{name: "comprehension variable does not leak", src: "import torch\nxs = [1 for torch in items]\ntorch.ze^ros", want: "torch.zeros"},
	{name: "comprehension first iterable outside", src: "import torch\nxs = {k: v for torch in torch.ar^ange(3)}", want: "torch.arange"},
	{name: "lambda parameter shadows", src: "import torch\nf = lambda torch: torch.ze^ros(3)", want: ""},
	{name: "lambda body", src: "import torch\nf = lambda x: torch.ze^ros(x)", want: "torch.zeros"},
	{name: "walrus alias", src: "import torch\nif (cfg := torch._inductor.config):\n    cfg.tri^ton", want: "torch._inductor.config.triton"},
	{name: "walrus value", src: "import torch\nif (torch := 3):\n    torch.ze^ros", want: ""},
	{name: "walrus in comprehension binds outside", src: "import torch\nys = [(nn := torch.nn) for _ in xs]\nnn.Lin^ear", want: "torch.nn.Linear"},
	{name: "keyword argument", src: "import torch\ntorch.compile(fn, mo^de=\"max-autotune\")", want: "torch.compile", kind: KindKeyword},

	// What cannot be known statically.
	{name: "call result", src: "import torch\ntorch.randn(3).su^m()", want: ""},
	{name: "call callee", src: "import torch\ntorch.ran^dn(3).sum()", want: "torch.randn", kind: KindCall},
	{name: "subscript", src: "import torch\nx[0].fo^o", want: ""},
	{name: "self attribute", src: "class M:\n    def f(self):\n        self.lin^ear", want: ""},
	{name: "builtin", src: "pri^nt(x)", want: ""},
	{name: "comment", src: "import torch\n# torch.ze^ros", want: ""},
	{name: "string", src: "import torch\ns = \"torch.ze^ros\"", want: ""},
	{name: "whitespace", src: "import torch\nx = ^ torch", want: ""},

	// Byte columns, tabs, line endings.
	{name: "non-ASCII before cursor", src: "import torch\nx = \"héllo wörld\"; y = torch.ze^ros(3)", want: "torch.zeros"},
	{name: "CJK before cursor", src: "import torch\ns = \"日本語\"; torch.nn.Lin^ear", want: "torch.nn.Linear"},
	{name: "non-ASCII identifier", src: "import torch as 火\n火.ze^ros", want: "torch.zeros"},
	{name: "tab indent", src: "import torch\nif True:\n\tm = torch.nn.Lin^ear(1, 2)", want: "torch.nn.Linear"},
	{name: "CRLF", src: "import torch\r\nx = 1\r\nx = torch.nn.Lin^ear\r\n", want: "torch.nn.Linear"},
	{name: "CRLF end of line", src: "import torch\r\nx = torch.nn.Linear^\r\n", want: "torch.nn.Linear"},
	{name: "cursor after identifier", src: "import torch\nx = torch.nn.Linear^", want: "torch.nn.Linear"},
	{name: "chain over lines in parens", src: "import torch\ny = (torch.nn\n     .Lin^ear)", want: "torch.nn.Linear"},

	// Half-typed code.
	{name: "trailing dot", src: "import torch\nx = torch.nn.^", want: "torch.nn", kind: KindAttribute, dot: true},
	{name: "trailing dot on name", src: "import torch\nx = torch.n^n.", want: "torch.nn"},
	{name: "trailing dot then more lines", src: "import torch\nx = torch.nn.^\ny = 3\n", want: "torch.nn", dot: true},
	{name: "name after trailing dot line", src: "import torch\nx = torch.nn.\ny^ = 3\n", want: ""},
	{name: "trailing dot line then use", src: "import torch\nx = torch.nn.\ny = torch.optim.SG^D\n", want: "torch.optim.SGD"},
	{name: "partial attribute", src: "import torch\nx = torch.nn.Lin^", want: "torch.nn.Lin"},
	{name: "missing paren previous line", src: "import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Linear(3, 4)\nx = torch.ran^dn(3)\n", want: "torch.randn"},
	{name: "missing paren same line", src: "import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Lin^ear(3, 4)\nx = torch.randn(3)\n", want: "torch.nn.Linear"},
	{name: "truncated def", src: "import torch\ndef train(model):\n    opt = torch.optim.SG^", want: "torch.optim.SG"},
	{name: "truncated def trailing dot", src: "import torch\ndef train(model):\n    opt = torch.optim.^", want: "torch.optim", dot: true},
	{name: "truncated def shadow", src: "import torch\ndef train(torch):\n    opt = torch.optim.^", want: ""},
	{name: "unclosed string before", src: "import torch\nx = \"abc\ny = torch.ze^ros", want: "torch.zeros"},
	{name: "typing import", src: "import torch.^", want: "torch", kind: KindImport, dot: true},
	{name: "typing from import", src: "from torch.nn import (Lin^", want: "torch.nn.Lin"},
	{name: "call result trailing dot", src: "import torch\nx = torch.randn(3).^", want: ""},
	{name: "number trailing dot", src: "x = 1.^", want: ""},
	{name: "unclosed call at end", src: "import torch.nn as nn\nx = nn.Lin^ear(\n", want: "torch.nn.Linear"},
	{name: "incomplete if", src: "import torch\nif torch.cuda.is_av^", want: "torch.cuda.is_av"},
	{name: "incomplete for", src: "import torch\nfor x in torch.ut^", want: "torch.ut"},
	{name: "unclosed keyword call", src: "import torch\nm = torch.compile(model, mode=\"reduce-overhead\"\nprint(torch.__ver^sion__)", want: "torch.__version__"},
	{name: "broken def header", src: "import torch\ndef f(:\n    torch.ze^ros", want: "torch.zeros"},
	{name: "function import then trailing dot", src: "def f():\n    import torch.nn as nn\n    x = nn.^", want: "torch.nn", dot: true},
	{name: "function import not visible outside broken", src: "def f():\n    import torch.nn as nn\nx = nn.^", want: ""},
	{name: "alias then trailing dot", src: "import torch\ncfg = torch._inductor.config\ncfg.triton.^", want: "torch._inductor.config.triton", dot: true},
	{name: "trailing dot mid-file", src: "import torch\nx = torch.^\ndef g():\n    pass\n", want: "torch", dot: true},
}

func TestRefAt(t *testing.T) {
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tc := range refCases {
		t.Run(tc.name, func(t *testing.T) {
			src, pos := cursor(t, tc.src)
			b := p.Parse(src)
			r, ok := b.RefAt(pos)
			if tc.want == "" {
				if ok {
					t.Fatalf("RefAt(%v) = %+v, want no answer", pos, r)
				}
				return
			}
			if !ok {
				t.Fatalf("RefAt(%v): no answer, want %q", pos, tc.want)
			}
			if r.Qualname != tc.want {
				t.Errorf("Qualname = %q, want %q", r.Qualname, tc.want)
			}
			if tc.kind != 0 && r.Kind != tc.kind {
				t.Errorf("Kind = %v, want %v", r.Kind, tc.kind)
			}
			if r.Write != tc.write {
				t.Errorf("Write = %v, want %v", r.Write, tc.write)
			}
			if r.AfterDot != tc.dot {
				t.Errorf("AfterDot = %v, want %v", r.AfterDot, tc.dot)
			}
			// The span is the identifier around the cursor.
			if r.Span.Start.Line != pos.Line || r.Span.Start.Col > pos.Col || r.Span.End.Col < pos.Col {
				t.Errorf("Span = %v does not hold cursor %v", r.Span, pos)
			}
		})
	}
}

func TestRefAtMultilineImportBeingTyped(t *testing.T) {
	for _, src := range []string{
		"from torch.nn import (\n    Linear,\n    Con^",
		"from torch.nn import (\n    Linear,\n    Con^\nx = 1\n",
		"from torch.nn import (Linear,\n                      Con^",
		"from torch.nn import (\n    Linear as L,\n    Con^",
	} {
		text, pos := cursor(t, src)
		r, ok := Parse(text).RefAt(pos)
		if !ok || r.Qualname != "torch.nn.Con" || r.Kind != KindImport {
			t.Errorf("%q: got %+v, %v; want torch.nn.Con", src, r, ok)
		}
	}
	for _, src := range []string{
		"from .models import (\n    Net,\n    Con^",
		"from torch.nn import (\n    Linear,\n)\nCon^",
		"x = (\n    a,\n    Con^",
	} {
		text, pos := cursor(t, src)
		if r, ok := Parse(text).RefAt(pos); ok {
			t.Errorf("%q: got %+v, want no answer", src, r)
		}
	}
}

// TestRefAtModule checks which names of an import statement are read as a
// module path (the module, whatever its package binds under its name) and
// which as an attribute of a module.
func TestRefAtModule(t *testing.T) {
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tc := range []struct {
		name, src, want string
		module          bool
	}{
		{"import path", "import torch.nn.utils.spectral_no^rm", "torch.nn.utils.spectral_norm", true},
		{"import path prefix", "import torch.n^n.utils", "torch.nn", true},
		{"import as", "import torch.nn.utils.spectral_norm as s^n", "torch.nn.utils.spectral_norm", true},
		{"from module", "from torch.autograd.gradch^eck import gradcheck", "torch.autograd.gradcheck", true},
		{"from name", "from torch.autograd import gradch^eck", "torch.autograd.gradcheck", false},
		{"from name as", "from torch.nn.utils import spectral_norm as s^n", "torch.nn.utils.spectral_norm", false},
		{"use", "import torch\ntorch.nn.utils.spectral_no^rm(m)", "torch.nn.utils.spectral_norm", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, pos := cursor(t, tc.src)
			r, ok := p.Parse(src).RefAt(pos)
			if !ok || r.Qualname != tc.want || r.Module != tc.module {
				t.Fatalf("RefAt(%v) = %+v, %v; want %q with Module %v", pos, r, ok, tc.want, tc.module)
			}
		})
	}
}
