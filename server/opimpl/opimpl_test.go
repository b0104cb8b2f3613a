package opimpl

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

const fixtureSite = "testdata/site"

var (
	anchorRE = regexp.MustCompile(`anchor: (\S+)`)
	wantRE   = regexp.MustCompile(`want: (.*)$`)
)

// fixtureWants reads the "want:" markers of the fixture tree: each names,
// for the line it is on, a registration the scanner must report, as
// "LABEL | OP | [def=@ANCHOR|none] [func=NAME] [if=COND]". def defaults
// to the marker's own line.
func fixtureWants(t *testing.T) []string {
	t.Helper()
	type marker struct {
		rel  string
		line int
		spec string
	}
	anchors := map[string]string{} // name -> rel:line (1-based)
	var markers []marker
	err := filepath.WalkDir(filepath.Join(fixtureSite, "torch"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".py") {
			return err
		}
		rel, _ := filepath.Rel(fixtureSite, p)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			text := sc.Text()
			if m := anchorRE.FindStringSubmatch(text); m != nil {
				anchors[m[1]] = fmt.Sprintf("%s:%d", filepath.ToSlash(rel), n)
			}
			if m := wantRE.FindStringSubmatch(text); m != nil {
				for _, spec := range strings.Split(m[1], ";;") {
					markers = append(markers, marker{filepath.ToSlash(rel), n, strings.TrimSpace(spec)})
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	var wants []string
	for _, m := range markers {
		parts := strings.Split(m.spec, "|")
		if len(parts) < 2 {
			t.Fatalf("%s:%d: bad marker %q", m.rel, m.line, m.spec)
		}
		label, op := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
		def, fn, cond := fmt.Sprintf("%s:%d", m.rel, m.line), "", ""
		if len(parts) > 2 {
			opts := strings.TrimSpace(parts[2])
			if i := strings.Index(opts, "if="); i >= 0 {
				cond, opts = opts[i+3:], opts[:i]
			}
			for _, f := range strings.Fields(opts) {
				k, v, _ := strings.Cut(f, "=")
				switch {
				case k == "def" && v == "none":
					def = "none"
				case k == "def" && strings.HasPrefix(v, "@"):
					a, ok := anchors[v[1:]]
					if !ok {
						t.Fatalf("%s:%d: no anchor %s", m.rel, m.line, v)
					}
					def = a
				case k == "func":
					fn = v
				default:
					t.Fatalf("%s:%d: bad marker option %q", m.rel, m.line, f)
				}
			}
		}
		wants = append(wants, describe(label, op, fmt.Sprintf("%s:%d", m.rel, m.line), def, fn, cond))
	}
	sort.Strings(wants)
	return wants
}

func describe(label, op, at, def, fn, cond string) string {
	return fmt.Sprintf("%s %s at %s def %s func %q if %q", label, op, at, def, fn, cond)
}

func describeImpl(im Impl) string {
	def := "none"
	if im.Def >= 0 {
		def = fmt.Sprintf("%s:%d", im.DefPath, im.Def+1)
	}
	return describe(im.Label(), im.Op.String(), fmt.Sprintf("%s:%d", im.Path, im.Line+1), def, im.Func, im.Cond)
}

// TestFixtureSpellings scans the fixture tree and checks that every
// registration it marks, and nothing else, is found, with its function.
func TestFixtureSpellings(t *testing.T) {
	t.Parallel()
	tab, err := Scan(context.Background(), fixtureSite)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, im := range tab.Impls {
		if im.Kind != KindRef {
			got = append(got, describeImpl(im))
		}
	}
	sort.Strings(got)
	want := fixtureWants(t)
	if !reflect.DeepEqual(got, want) {
		gotSet := map[string]bool{}
		for _, g := range got {
			gotSet[g] = true
		}
		wantSet := map[string]bool{}
		for _, w := range want {
			wantSet[w] = true
			if !gotSet[w] {
				t.Errorf("missing: %s", w)
			}
		}
		for _, g := range got {
			if !wantSet[g] {
				t.Errorf("unexpected: %s", g)
			}
		}
	}
	wantUnresolved := []string{"torch/_decomp/decompositions.py:82 register_decomposition", "torch/_decomp/decompositions.py:84 register_decomposition"}
	if tab.Stats.Unresolved != 2 || !reflect.DeepEqual(tab.Stats.UnresolvedAt, wantUnresolved) {
		t.Errorf("Unresolved = %d %v, want %v (getattr(aten, ...) and torch._prims.add)", tab.Stats.Unresolved, tab.Stats.UnresolvedAt, wantUnresolved)
	}
	if tab.Version != "9.9.0+fixture" {
		t.Errorf("Version = %q", tab.Version)
	}
	// Every registration's columns delimit its callee on its line.
	for _, im := range tab.Impls {
		line := fileLine(t, filepath.Join(fixtureSite, im.Path), im.Line)
		if im.EndCol > len(line) || im.Col >= im.EndCol {
			t.Errorf("%s: columns %d-%d outside %q", describeImpl(im), im.Col, im.EndCol, line)
			continue
		}
		callee := line[im.Col:im.EndCol]
		if im.Kind == KindRef {
			if !strings.Contains(im.Ref, ".") || callee == "" {
				t.Errorf("ref %s: span %q", im.Ref, callee)
			}
			continue
		}
		if !strings.Contains(callee, "register") && !strings.Contains(callee, "fallback") && !strings.HasSuffix(callee, "py_impl") &&
			!strings.Contains(callee, "_reference") && !strings.Contains(callee, "_func") && callee != "reg" && !strings.Contains(callee, "pointwise") {
			t.Errorf("%s: span %q is not a registering callee", describeImpl(im), callee)
		}
	}
}

func fileLine(t *testing.T, path string, line int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if line >= len(lines) {
		t.Fatalf("%s has no line %d", path, line)
	}
	return lines[line]
}

func TestForCallable(t *testing.T) {
	t.Parallel()
	tab, err := Scan(context.Background(), fixtureSite)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		qualname string
		ops      []string // the answer's ops
		places   []string // label@line of every entry, in order
	}{
		{"torch.add", []string{"aten.add"}, []string{
			"decomposition@torch/_refs/__init__.py:58", "lowering@torch/_inductor/lowering.py:54", "ref@torch/_refs/__init__.py:58"}},
		{"torch.Tensor.add", []string{"aten.add"}, []string{
			"decomposition@torch/_refs/__init__.py:58", "lowering@torch/_inductor/lowering.py:54", "ref@torch/_refs/__init__.py:58"}},
		{"torch.ops.aten.add.Tensor", []string{"aten.add.Tensor"}, []string{
			"decomposition@torch/_refs/__init__.py:58", "lowering@torch/_inductor/lowering.py:54"}},
		{"torch.nn.functional.relu", []string{"aten.relu"}, []string{
			"decomposition@torch/_refs/nn/functional/__init__.py:7", "ref@torch/_refs/nn/functional/__init__.py:7"}},
		{"torch.special.bessel_j0", []string{"aten.special_bessel_j0"}, []string{
			"decomposition@torch/_refs/special/__init__.py:4", "ref@torch/_refs/special/__init__.py:4"}},
		{"torch.matmul", []string{"aten.matmul"}, []string{
			"py_impl CompositeImplicitAutograd@torch/_decomp/decompositions.py:68", "py_impl CompositeImplicitAutograd@torch/_decomp/decompositions.py:69"}},
		// Companions: _X and native_X.
		{"torch.nn.functional.layer_norm", []string{"aten.layer_norm", "aten.native_layer_norm"}, []string{
			"fallback@torch/_inductor/lowering.py:62"}},
		{"torch.Tensor.view", nil, nil},    // no registrations of aten.view here
		{"torch.nn.Linear", nil, nil},      // a class, not an op
		{"torch.Tensor.__add__", nil, nil}, // Python's, not an op
		{"numpy.add", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.qualname, func(t *testing.T) {
			ans := tab.ForCallable(tt.qualname)
			var ops, places []string
			for _, o := range ans.Ops {
				ops = append(ops, o.String())
			}
			for _, im := range ans.Impls {
				places = append(places, fmt.Sprintf("%s@%s:%d", im.Label(), im.Path, im.Line+1))
			}
			if !reflect.DeepEqual(ops, tt.ops) || !reflect.DeepEqual(places, tt.places) {
				t.Errorf("ForCallable(%q) = ops %v places %v, want %v %v", tt.qualname, ops, places, tt.ops, tt.places)
			}
		})
	}
}

func TestRelatedOps(t *testing.T) {
	t.Parallel()
	tab := &Table{}
	for _, name := range []string{"scaled_dot_product_attention", "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
		"_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention", "softmax", "_softmax", "_softmax_backward_data",
		"layer_norm", "native_layer_norm", "add", "_foreach_add", "_add_relu", "embedding", "_embedding_bag", "native_batch_norm"} {
		tab.Impls = append(tab.Impls, Impl{Kind: KindDecomposition, Op: Op{NS: "aten", Name: name}, Def: -1})
	}
	tab.index()
	tests := []struct {
		op   string
		want []string
	}{
		{"scaled_dot_product_attention", []string{"aten._scaled_dot_product_efficient_attention", "aten._scaled_dot_product_flash_attention", "aten._scaled_dot_product_flash_attention_for_cpu"}},
		{"softmax", []string{"aten._softmax"}},
		{"layer_norm", []string{"aten.native_layer_norm"}},
		{"add", nil},
		{"embedding", nil},
		{"batch_norm", []string{"aten.native_batch_norm"}},
	}
	for _, tt := range tests {
		var got []string
		for _, o := range tab.related(Op{NS: "aten", Name: tt.op}) {
			got = append(got, o.String())
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("related(%s) = %v, want %v", tt.op, got, tt.want)
		}
	}
}

func TestOpFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		qualname string
		op       string
		refs     []string
	}{
		{"torch.add", "aten.add", []string{"torch._refs.add"}},
		{"torch.nn.functional.scaled_dot_product_attention", "aten.scaled_dot_product_attention", []string{"torch._refs.nn.functional.scaled_dot_product_attention"}},
		{"torch._C._nn.scaled_dot_product_attention", "aten.scaled_dot_product_attention", []string{"torch._refs.nn.functional.scaled_dot_product_attention"}},
		{"torch.special.erf", "aten.special_erf", []string{"torch._refs.special.erf"}},
		{"torch.linalg.vector_norm", "aten.linalg_vector_norm", []string{"torch._refs.linalg.vector_norm"}},
		{"torch.fft.fft", "aten.fft_fft", []string{"torch._refs.fft.fft"}},
		{"torch.Tensor.view", "aten.view", []string{"torch._refs.view"}},
		{"torch._C.TensorBase.add_", "aten.add_", []string{"torch._refs.add_"}},
		{"torch.ops.aten.mm.default", "aten.mm.default", nil},
		{"torch._ops.ops.prims.mul", "prims.mul", nil},
		{"torch.nn.Linear", "", nil},
		{"torch", "", nil},
		{"torch.Tensor.__add__", "", nil},
		{"numpy.add", "", nil},
	}
	for _, tt := range tests {
		op, refs, ok := OpFor(tt.qualname)
		got := ""
		if ok {
			got = op.String()
		}
		if got != tt.op || !reflect.DeepEqual(refs, tt.refs) {
			t.Errorf("OpFor(%q) = %q %v, want %q %v", tt.qualname, got, refs, tt.op, tt.refs)
		}
	}
}

// TestCache checks that Open writes the table next to the mirror, reads
// it back unchanged, and scans again when a file changes or the cache is
// damaged.
func TestCache(t *testing.T) {
	t.Parallel()
	site := t.TempDir()
	if err := copyTree(filepath.Join(fixtureSite, "torch"), filepath.Join(site, "torch")); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "opimpl.bin")
	ctx := context.Background()
	first, err := Open(ctx, site, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	again, err := Open(ctx, site, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first.Impls, again.Impls) || first.Fingerprint != again.Fingerprint {
		t.Error("the cached table differs from the scanned one")
	}
	if got := again.ForCallable("torch.add"); len(got.Impls) != 3 {
		t.Errorf("cached table answers %d entries for torch.add, want 3", len(got.Impls))
	}

	// A changed file: the fingerprint moves and the new line is found.
	low := filepath.Join(site, "torch", "_inductor", "lowering.py")
	b, err := os.ReadFile(low)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(low, append(b, []byte("make_fallback(aten.histc)\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(low, future, future); err != nil {
		t.Fatal(err)
	}
	changed, err := Open(ctx, site, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	if changed.Fingerprint == first.Fingerprint || len(changed.ForOp(Op{NS: "aten", Name: "histc"})) != 1 {
		t.Error("a changed file did not rescan the tree")
	}

	// A damaged cache is rebuilt.
	if err := os.WriteFile(cache, []byte("not a table"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cache); err == nil {
		t.Error("Load accepted a damaged cache")
	}
	rebuilt, err := Open(ctx, site, cache, nil)
	if err != nil || len(rebuilt.Impls) != len(changed.Impls) {
		t.Fatalf("rebuild after a damaged cache: %v", err)
	}
	if _, err := Load(cache); err != nil {
		t.Errorf("the rebuilt cache does not load: %v", err)
	}
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
}

func TestScanNoTorch(t *testing.T) {
	t.Parallel()
	if _, err := Scan(context.Background(), t.TempDir()); err == nil {
		t.Error("Scan of a dir without torch/ succeeded")
	}
}

func TestScanCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Scan(ctx, fixtureSite); err == nil {
		t.Error("Scan with a cancelled context succeeded")
	}
}
