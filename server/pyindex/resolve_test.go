package pyindex

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const fixtureSite = "../../testdata/site"

func openFixture(t testing.TB) *Index {
	t.Helper()
	ix, err := Open(fixtureSite, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// findDef returns the 0-based line and byte column of the first group of
// pattern in file, taking the n-th match (-1 for the last).
func findDef(t testing.TB, site, file, pattern string, n int) (int, int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(site, file))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(pattern)
	var hits [][2]int
	for i, line := range strings.Split(string(data), "\n") {
		if m := re.FindStringSubmatchIndex(line); m != nil {
			hits = append(hits, [2]int{i, m[2]})
		}
	}
	if len(hits) == 0 {
		t.Fatalf("%s: no line matches %q", file, pattern)
	}
	if n < 0 {
		n = len(hits) + n
	}
	return hits[n][0], hits[n][1]
}

func TestResolveFixture(t *testing.T) {
	ix := openFixture(t)
	tests := []struct {
		qualname  string
		kind      Kind
		canonical string // Symbol.Qualname
		file      string
		pattern   string // regexp whose first group is the name token
		nth       int
		stub      bool
	}{
		{"torch.nn.Linear", KindClass, "torch.nn.modules.linear.Linear", "torch/nn/modules/linear.py", `^class (Linear)\b`, 0, false},
		{"torch.nn.Linear.to", KindFunction, "torch.nn.modules.module.Module.to", "torch/nn/modules/module.py", `def (to)\(`, 0, false},
		{"torch.nn.Linear.Options.fused", KindVariable, "torch.nn.modules.linear.Linear.Options.fused", "torch/nn/modules/linear.py", `^\s+(fused) =`, 0, false},
		{"torch.nn.Identity", KindClass, "torch.nn.modules.linear.Identity", "torch/nn/modules/linear.py", `^class (Identity)\b`, 0, false},
		{"torch.nn.ReLU", KindClass, "torch.nn.modules.activation.ReLU", "torch/nn/modules/activation.py", `^class (ReLU)\b`, 0, false},
		{"torch.nn.Parameter", KindClass, "torch.nn.parameter.Parameter", "torch/nn/parameter.py", `^class (Parameter)\b`, 0, false},
		{"torch.compile", KindFunction, "torch.compile", "torch/__init__.py", `^def (compile)\(`, -1, false},
		{"torch.is_grad_enabled", KindFunction, "torch.is_grad_enabled", "torch/__init__.py", `^def (is_grad_enabled)\(`, 0, false},
		{"torch.utils.checkpoint.checkpoint", KindFunction, "torch.utils.checkpoint.checkpoint", "torch/utils/checkpoint.py", `^def (checkpoint)\(`, 0, false},
		{"torch._inductor.config.triton.cudagraph_trees", KindVariable, "torch._inductor.config.triton.cudagraph_trees", "torch/_inductor/config.py", `^    (cudagraph_trees) = True`, 0, false},
		{"torch._inductor.config.triton.cudagraph_trees_history_recording", KindVariable, "torch._inductor.config.triton.cudagraph_trees_history_recording", "torch/_inductor/config.py", `^    (cudagraph_trees_history_recording) =`, 0, false},
		{"torch._inductor.config.triton.cudagraphs", KindVariable, "torch._inductor.config.triton.cudagraphs", "torch/_inductor/config.py", `^    (cudagraphs) =`, 0, false},
		{"torch._inductor.config.fx_graph_cache", KindVariable, "torch._inductor.config.fx_graph_cache", "torch/_inductor/config.py", `^(fx_graph_cache) =`, 0, false},
		{"torch._inductor.cudagraph_trees", KindModule, "torch._inductor.cudagraph_trees", "torch/_inductor/cudagraph_trees.py", "", 0, false},
		{"torch._inductor.cudagraph_trees.get_obj", KindFunction, "torch._inductor.cudagraph_trees.get_obj", "torch/_inductor/cudagraph_trees.py", `^def (get_obj)\(`, 0, false},
		{"torch.inductor_config.triton.cudagraph_trees", KindVariable, "torch._inductor.config.triton.cudagraph_trees", "torch/_inductor/config.py", `^    (cudagraph_trees) = True`, 0, false},
		{"torch._inductor.compile_fx.config", KindModule, "torch._inductor.config", "torch/_inductor/config.py", "", 0, false},
		{"torch._inductor.compile_fx.inductor_config.triton", KindClass, "torch._inductor.config.triton", "torch/_inductor/config.py", `^class (triton):`, 0, false},
		{"torch.Tensor", KindClass, "torch._tensor.Tensor", "torch/_tensor.py", `^class (Tensor)\(`, 0, false},
		{"torch.Tensor.backward", KindFunction, "torch._tensor.Tensor.backward", "torch/_tensor.py", `def (backward)\(`, 0, false},
		{"torch.Tensor.dim", KindFunction, "torch._C.TensorBase.dim", "torch/_C/__init__.pyi", `def (dim)\(`, 0, true},
		{"torch._C._is_key_in_tls", KindFunction, "torch._C._is_key_in_tls", "torch/_C/__init__.pyi", `^def (_is_key_in_tls)\(`, 0, true},
		{"torch._C.TensorBase", KindClass, "torch._C.TensorBase", "torch/_C/__init__.pyi", `^class (TensorBase)\b`, 0, true},
		{"torch._C._VariableFunctions.add", KindFunction, "torch._C._VariableFunctions.add", "torch/_C/__init__.pyi", `def (add)\(`, 0, true},
		{"torch._C._add", KindVariable, "torch._C._add", "torch/_C/__init__.py", `^(_add) =`, 0, false},
		{"torch.nn.functional.add", KindVariable, "torch._C._add", "torch/_C/__init__.py", `^(_add) =`, 0, false},
		{"torch.nn.functional.relu", KindFunction, "torch.nn.functional.relu", "torch/nn/functional.py", `^def (relu)\(`, 0, false},
		// "threshold_ = relu" rebinds relu: Python names the same function.
		{"torch.nn.functional.threshold_", KindFunction, "torch.nn.functional.relu", "torch/nn/functional.py", `^def (relu)\(`, 0, false},
		{"torch.nn.functional", KindModule, "torch.nn.functional", "torch/nn/functional.py", "", 0, false},
		{"torch.nn.modules.linear.F", KindModule, "torch.nn.functional", "torch/nn/functional.py", "", 0, false},
		{"torch.nn.modules.linear._tensor.Tensor", KindClass, "torch._tensor.Tensor", "torch/_tensor.py", `^class (Tensor)\(`, 0, false},
		{"torch.nn.modules.linear._checkpoint", KindFunction, "torch.utils.checkpoint.checkpoint", "torch/utils/checkpoint.py", `^def (checkpoint)\(`, 0, false},
		{"torch.nn.modules.hidden_helper", KindVariable, "torch.nn.modules.hidden_helper", "torch/nn/modules/__init__.py", `^(hidden_helper) =`, 0, false},
		{"torch.nn", KindModule, "torch.nn", "torch/nn/__init__.py", "", 0, false},
		{"torch.optim.AdamW", KindClass, "torch.optim.adamw.AdamW", "torch/optim/adamw.py", `^class (AdamW)\(`, 0, false},
		{"torch.optim._adamw_mod", KindModule, "torch.optim.adamw", "torch/optim/adamw.py", "", 0, false},
		{"torch.optim.Optimizer.step", KindFunction, "torch.optim.optimizer.Optimizer.step", "torch/optim/optimizer.py", `def (step)\(`, 0, false},
		{"torch.cuda.is_available", KindFunction, "torch.cuda.is_available", "torch/cuda/__init__.py", `^def (is_available)\(`, 0, false},
		{"torch.cuda", KindModule, "torch.cuda", "torch/cuda/__init__.py", "", 0, false},
		{"torch.__version__", KindVariable, "torch.version.__version__", "torch/version.py", `^(__version__) =`, 0, false},
		{"torch.sys", KindImport, "torch.sys", "torch/__init__.py", `^import (sys)`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.qualname, func(t *testing.T) {
			r, err := ix.Resolve(tt.qualname)
			if err != nil {
				t.Fatal(err)
			}
			s := r.Symbol
			if s.Kind != tt.kind || s.Qualname != tt.canonical || s.File != tt.file || s.IsStub != tt.stub {
				t.Fatalf("got %s %s in %s (stub %v), want %s %s in %s (stub %v)", s.Kind, s.Qualname, s.File, s.IsStub, tt.kind, tt.canonical, tt.file, tt.stub)
			}
			if want := filepath.Join(ix.SiteDir(), tt.file); s.Path != want {
				t.Errorf("Path = %s, want %s", s.Path, want)
			}
			line, col := 0, 0
			if tt.pattern != "" {
				line, col = findDef(t, fixtureSite, tt.file, tt.pattern, tt.nth)
			}
			if s.Line != line || s.Col != col {
				t.Errorf("at %d:%d, want %d:%d", s.Line, s.Col, line, col)
			}
		})
	}
}

func TestResolveNotFound(t *testing.T) {
	ix := openFixture(t)
	tests := []struct {
		qualname string
		mention  string // part of the error message
	}{
		{"torch.nn.hidden_helper", `module torch.nn has no attribute "hidden_helper"`},
		{"torch.nn.NotExported", `"NotExported"`},     // public, but left out of __all__
		{"torch.nn._LinearHelper", `"_LinearHelper"`}, // private
		{"torch.add", `module torch has no attribute "add"`},
		{"torch.nope", `"nope"`},
		{"nosuchpkg.x", "no module nosuchpkg"},
		{"torch..nn", "not a dotted name"},
		{"", "not a dotted name"},
		{"torch.compile.x", "function with no attribute"},
		{"torch.nn.Linear.nope", `class torch.nn.modules.linear.Linear has no attribute "nope"`},
		{"torch.sys.path", "import with no attribute"},
	}
	for _, tt := range tests {
		t.Run(tt.qualname, func(t *testing.T) {
			_, err := ix.Resolve(tt.qualname)
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("err = %q, want it to mention %q", err, tt.mention)
			}
		})
	}
}

func TestSymbolDetails(t *testing.T) {
	ix := openFixture(t)
	get := func(q string) Resolution {
		t.Helper()
		r, err := ix.Resolve(q)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	compile := get("torch.compile").Symbol
	if want := "(model: Optional[Callable] = None, *, fullgraph: bool = False, mode: Optional[str] = None, options: Optional[dict] = None) -> Any"; compile.Signature != want {
		t.Errorf("compile signature\n got %s\nwant %s", compile.Signature, want)
	}
	if len(compile.Decorators) != 0 {
		t.Errorf("compile resolved to an overload: decorators %v", compile.Decorators)
	}
	if want := "Optimizes the given model or function."; compile.DocSummary != want {
		t.Errorf("compile summary %q, want %q", compile.DocSummary, want)
	}
	if !strings.Contains(compile.Doc, "\nGröße ≥ 1 — ü: the summary above") || !strings.HasSuffix(compile.Doc, "raises RuntimeError.") {
		t.Errorf("compile doc = %q", compile.Doc)
	}

	relu := get("torch.nn.functional.relu").Symbol
	if want := "(input: Tensor, inplace: bool = False) -> Tensor"; relu.Signature != want {
		t.Errorf("relu signature %q, want %q", relu.Signature, want)
	}
	if want := "relu(input, inplace=False) -> Tensor"; relu.DocSummary != want {
		t.Errorf("relu summary %q", relu.DocSummary)
	}

	lin := get("torch.nn.Linear")
	if want := "(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None"; get("torch.nn.Linear.__init__").Symbol.Signature != want {
		t.Errorf("Linear.__init__ signature %q", get("torch.nn.Linear.__init__").Symbol.Signature)
	}
	if !slices.Equal(lin.Symbol.Bases, []string{"Module"}) || lin.Symbol.Signature != "(Module)" {
		t.Errorf("Linear bases %v sig %q", lin.Symbol.Bases, lin.Symbol.Signature)
	}
	if want := "Applies a linear transformation: y = xA^T + b."; lin.Symbol.DocSummary != want {
		t.Errorf("Linear summary %q", lin.Symbol.DocSummary)
	}
	if want := []string{"torch.nn", "torch.nn.modules"}; !slices.Equal(lin.ReexportedFrom(), want) {
		t.Errorf("Linear re-exported from %v, want %v (chain %+v)", lin.ReexportedFrom(), want, lin.Chain)
	}
	if lin.Symbol.EndLine <= lin.Symbol.Line {
		t.Errorf("Linear ends at %d, starts at %d", lin.Symbol.EndLine, lin.Symbol.Line)
	}

	tensor := get("torch.Tensor").Symbol
	if want := "A multi-dimensional array — Größe ≥ 1, ü."; tensor.DocSummary != want {
		t.Errorf("Tensor summary %q, want %q", tensor.DocSummary, want)
	}
	ckpt := get("torch.utils.checkpoint.checkpoint").Symbol
	if !slices.Equal(ckpt.Decorators, []string{"_disable_dynamo"}) {
		t.Errorf("checkpoint decorators %v", ckpt.Decorators)
	}
	if want := "(function, *args, use_reentrant: Optional[bool] = None, **kwargs: Any)"; ckpt.Signature != want {
		t.Errorf("checkpoint signature %q", ckpt.Signature)
	}
	if v := get("torch._inductor.config.triton.cudagraphs").Symbol.Value; v != `os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1"` {
		t.Errorf("cudagraphs value %q", v)
	}
	if v := get("torch._inductor.config.triton.cudagraph_trees").Symbol.Value; v != "True" {
		t.Errorf("cudagraph_trees value %q", v)
	}
	if s := get("torch.version.cuda").Symbol; s.Signature != ": Optional[str]" || s.Value != "None" {
		t.Errorf("torch.version.cuda sig %q value %q", s.Signature, s.Value)
	}
	if s := get("torch.nn").Symbol; s.DocSummary != "Neural network building blocks." || s.Line != 0 {
		t.Errorf("torch.nn module %+v", s)
	}
	stub := get("torch._C._is_key_in_tls")
	if len(stub.Chain) != 1 || stub.Chain[0].Kind != HopStub {
		t.Errorf("stub chain %+v", stub.Chain)
	}
}

// TestREADMEExpectations checks the table of expected definitions that
// testdata/site/README.md documents for the rest of the project.
func TestREADMEExpectations(t *testing.T) {
	ix := openFixture(t)
	f, err := os.Open(filepath.Join(fixtureSite, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([\\w.]+)` \\| `([\\w/.]+)` (\\d+):(\\d+)")
	rows := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		rows++
		line, _ := strconv.Atoi(m[3])
		col, _ := strconv.Atoi(m[4])
		r, err := ix.Resolve(m[1])
		if err != nil {
			t.Errorf("%s: %v", m[1], err)
			continue
		}
		if r.Symbol.File != m[2] || r.Symbol.Line != line || r.Symbol.Col != col {
			t.Errorf("%s at %s %d:%d, README says %s %d:%d", m[1], r.Symbol.File, r.Symbol.Line, r.Symbol.Col, m[2], line, col)
		}
	}
	if rows < 15 {
		t.Fatalf("found %d rows in the README table", rows)
	}
}

func TestMembers(t *testing.T) {
	ix := openFixture(t)
	names := func(q string) []string {
		t.Helper()
		ms, err := ix.Members(q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	tests := []struct {
		qualname     string
		want, absent []string
	}{
		{"torch.nn", []string{"Identity", "Linear", "Module", "Parameter", "ReLU", "functional", "modules", "parameter"}, []string{"hidden_helper", "NotExported", "_LinearHelper"}},
		{"torch.nn.Linear", []string{"Options", "__init__", "forward", "in_features", "to", "training", "dump_patches"}, nil},
		{"torch._C", []string{"TensorBase", "_add", "_is_key_in_tls", "_VariableFunctions"}, nil},
		{"torch", []string{"Tensor", "compile", "nn", "optim", "_inductor", "version"}, []string{"add"}},
	}
	for _, tt := range tests {
		t.Run(tt.qualname, func(t *testing.T) {
			got := names(tt.qualname)
			if !slices.IsSorted(got) {
				t.Errorf("not sorted: %v", got)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("missing %s in %v", w, got)
				}
			}
			for _, a := range tt.absent {
				if slices.Contains(got, a) {
					t.Errorf("%s must not be a member: %v", a, got)
				}
			}
		})
	}
	if ms, err := ix.Members("torch.compile"); err != nil || len(ms) != 0 {
		t.Errorf("members of a function: %v, %v", ms, err)
	}
	if _, err := ix.Members("torch.nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("members of a missing name: %v", err)
	}
}

func TestModuleNames(t *testing.T) {
	ix := openFixture(t)
	got := ix.ModuleNames()
	for _, w := range []string{"torch", "torch._C", "torch.nn", "torch.nn.modules.linear", "torch._inductor.config", "torch.utils._config_module"} {
		if !slices.Contains(got, w) {
			t.Errorf("missing %s", w)
		}
	}
	if !slices.IsSorted(got) {
		t.Error("not sorted")
	}
	for _, n := range got {
		if strings.Contains(n, "pycache") || strings.HasSuffix(n, "__init__") {
			t.Errorf("bad module name %s", n)
		}
	}
}
