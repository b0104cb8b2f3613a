package repro

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func boolPtr(b bool) *bool { return &b }

// TestHazardVariantsOnStandIn runs each hazard variant and its control
// for real on Debian's interpreter, with the stand-in in place of torch's
// CUDA graphs and Dynamo cache (torch 1.13 has neither).
func TestHazardVariantsOnStandIn(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	tests := []struct {
		name    string
		spec    Spec
		variant string
		check   func(t *testing.T, r VariantResult)
	}{
		{"kept outputs overwritten", Spec{Mode: "reduce-overhead"}, VariantKeptOutputs, func(t *testing.T, r VariantResult) {
			if r.OK || r.Calls != DefaultKeptCalls || r.Wrong+r.ErrorCount() == 0 || r.Kept == nil || r.Kept.Cloned || !r.Kept.Distinct {
				t.Errorf("want kept outputs read wrong, got %+v kept %+v", r, r.Kept)
			}
			// Each output reads the last call's values: all but the last.
			if r.Wrong != DefaultKeptCalls-1 || r.Right != 1 {
				t.Errorf("%d wrong, %d right; want %d wrong, 1 right", r.Wrong, r.Right, DefaultKeptCalls-1)
			}
		}},
		{"kept outputs cloned", Spec{Mode: "reduce-overhead"}, VariantKeptOutputsCloned, func(t *testing.T, r VariantResult) {
			if !r.OK || r.Right != DefaultKeptCalls || r.Kept == nil || !r.Kept.Cloned {
				t.Errorf("want every cloned output right, got %+v kept %+v", r, r.Kept)
			}
		}},
		{"kept outputs without CUDA graphs", Spec{}, VariantKeptOutputs, func(t *testing.T, r VariantResult) {
			if !r.OK || r.Right != DefaultKeptCalls {
				t.Errorf("default mode keeps no static outputs: want all right, got %+v", r)
			}
		}},
		{"sizes past the recompile limit", Spec{Mode: "reduce-overhead", Dynamic: boolPtr(false)}, VariantSizes, func(t *testing.T, r VariantResult) {
			s := r.Sizes
			if s == nil || r.OK {
				t.Fatalf("want the hazard shown, got %+v", r)
			}
			if s.RecompileLimit != 8 || s.Tried != 12 || s.Ran != 12 || s.Compiles == nil || *s.Compiles != 8 || s.CUDAGraphs != 8 || s.Fallbacks != 4 || !s.LimitHit {
				t.Errorf("sizes %+v (compiles %v): want 12 sizes, 8 compiled and recorded, 4 eager", s, deref(s.Compiles))
			}
			if r.Right != 12 || len(r.Errors) != 0 {
				t.Errorf("every call still answers right: %+v", r)
			}
			if !anyContains(s.Warnings, "torch._dynamo hit config.recompile_limit (8)") {
				t.Errorf("warnings %q lack the recompile limit's", s.Warnings)
			}
		}},
		{"sizes past the limit with fullgraph", Spec{Mode: "reduce-overhead", Dynamic: boolPtr(false), Fullgraph: true}, VariantSizes, func(t *testing.T, r VariantResult) {
			s := r.Sizes
			if s == nil || s.Failed != 4 || s.Fallbacks != 0 || r.ErrorCount() != 4 || !strings.HasSuffix(r.Errors[0].Type, "FailOnRecompileLimitHit") ||
				r.Errors[0].Message != "Hard failure due to fullgraph=True" {
				t.Errorf("want 4 calls failing on the limit, got %+v sizes %+v", r, s)
			}
		}},
		{"sizes under automatic dynamic shapes", Spec{Mode: "reduce-overhead"}, VariantSizes, func(t *testing.T, r VariantResult) {
			s := r.Sizes
			if s == nil || s.Compiles == nil || *s.Compiles != 2 || s.CUDAGraphs != 12 || s.Fallbacks != 0 || s.WarnLimit != 8 || r.OK {
				t.Fatalf("want 2 compiles, 12 CUDA graphs past the warning limit, got %+v sizes %+v", r, s)
			}
			if !anyContains(s.Warnings, "We have observed 9 distinct sizes") {
				t.Errorf("warnings %q lack the re-record warning", s.Warnings)
			}
		}},
		{"sizes with a raised limit from the file", Spec{Dynamic: boolPtr(false), Config: []ConfigSetting{{"torch._dynamo.config", "cache_size_limit", "16"}}}, VariantSizes, func(t *testing.T, r VariantResult) {
			if s := r.Sizes; s == nil || s.RecompileLimit != 16 || s.Tried != 20 || s.Fallbacks != 4 || s.CUDAGraphs != 0 {
				t.Errorf("want the file's limit of 16 read, 20 sizes tried, 4 eager, no CUDA graphs; got %+v", s)
			}
		}},
		{"sizes bucketed", Spec{Mode: "reduce-overhead", Dynamic: boolPtr(false)}, VariantSizesBucketed, func(t *testing.T, r VariantResult) {
			s := r.Sizes
			if s == nil || !r.OK || !s.Bucketed || s.Tried != 12 || s.Ran != 5 || s.Fallbacks != 0 || s.Compiles == nil || *s.Compiles != 5 || s.LimitHit {
				t.Errorf("want 12 sizes padded to 5, all compiled; got %+v sizes %+v", r, s)
			}
		}},
		{"pending backwards", Spec{Mode: "reduce-overhead"}, VariantPendingBackward, func(t *testing.T, r VariantResult) {
			pi := r.Pending
			if pi == nil || r.OK || pi.NoGrad || !pi.CUDAGraphsOn {
				t.Fatalf("want the hazard shown, got %+v pending %+v", r, pi)
			}
			// The stand-in MLP's weights require no grad: its inputs are made to.
			if !pi.InputsRequireGrad || pi.Warned != 1 || !strings.HasPrefix(pi.Warning, "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards") {
				t.Errorf("want one pending-backwards warning, inputs made to require grad: %+v", pi)
			}
			// The first call records; every later one runs eagerly.
			if pi.Replays != 0 || pi.CUDAGraphs != 1 || r.Calls != DefaultPendingCalls || r.Right != DefaultPendingCalls {
				t.Errorf("want %d calls right, none replayed, 1 CUDA graph: %+v pending %+v", DefaultPendingCalls, r, pi)
			}
		}},
		{"pending backwards under no_grad", Spec{Mode: "reduce-overhead"}, VariantPendingBackwardNoGrad, func(t *testing.T, r VariantResult) {
			pi := r.Pending
			if pi == nil || !r.OK || !pi.NoGrad || pi.Warned != 0 || pi.Replays != DefaultPendingCalls-1 || pi.CUDAGraphs != 1 || r.Right != DefaultPendingCalls {
				t.Errorf("want no warning, every call after the first replayed: %+v pending %+v", r, pi)
			}
		}},
		{"pending backwards without CUDA graphs", Spec{}, VariantPendingBackward, func(t *testing.T, r VariantResult) {
			if pi := r.Pending; pi == nil || !r.OK || pi.CUDAGraphsOn || pi.Warned != 0 || pi.Replays != 0 {
				t.Errorf("default mode has no graph trees to warn: %+v pending %+v", r, r.Pending)
			}
		}},
		{"first call in capture", Spec{Mode: "reduce-overhead"}, VariantFirstCallInCapture, func(t *testing.T, r VariantResult) {
			c := r.GraphCapture
			if c == nil || r.OK || c.Captured || c.Warmed || r.ErrorCount() != 1 {
				t.Fatalf("want the capture to raise, got %+v capture %+v", r, c)
			}
			e := r.Errors[0]
			if !strings.HasSuffix(e.Type, "BackendCompilerFailed") || e.Phase != "capture" || !strings.Contains(e.Message, "operation not permitted when stream is capturing") {
				t.Errorf("error %+v", e)
			}
			if f, ok := e.TorchFrame(); !ok || f.Func != "lookup" {
				t.Errorf("innermost torch frame %+v, want the stand-in's compile (lookup)", f)
			}
		}},
		{"first call in capture, default mode", Spec{}, VariantFirstCallInCapture, func(t *testing.T, r VariantResult) {
			if c := r.GraphCapture; c == nil || c.Captured || r.ErrorCount() != 1 {
				t.Errorf("any mode compiles on its first call: %+v capture %+v", r, c)
			}
		}},
		{"first call in capture, warmed", Spec{Mode: "reduce-overhead"}, VariantFirstCallInCaptureWarmed, func(t *testing.T, r VariantResult) {
			c := r.GraphCapture
			if c == nil || !r.OK || !c.Captured || !c.Warmed || c.Warmups != 3 || c.Replays != DefaultKeptCalls || r.Right != DefaultKeptCalls {
				t.Errorf("want the capture to replay right after warm-up: %+v capture %+v", r, c)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := tt.spec
			spec.StandIn = true
			spec.Variants = []string{tt.variant}
			r := runScripts(t, python, nil, spec)[tt.variant]
			if !r.StandIn || r.Unsupported != "" {
				t.Fatalf("not run on the stand-in: %+v", r)
			}
			tt.check(t, r)
		})
	}
}

// TestHazardVariantsUserInputs runs them on a user's function whose
// factory gives the same inputs every call (kept-outputs rolls them) and
// on one whose inputs have no leading dimension (sizes says why not).
func TestHazardVariantsUserInputs(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	wd, _ := os.Getwd()
	env := map[string]string{"PYTHONPATH": wd + "/testdata/userpkg"}
	res := runScripts(t, python, env, Spec{
		StandIn: true, Mode: "reduce-overhead", Dynamic: boolPtr(false),
		Function: "torchlsp_repro_user:scale_and_relu", Inputs: "torchlsp_repro_user:same_inputs",
		Variants: []string{VariantKeptOutputs, VariantSizes},
	})
	if r := res[VariantKeptOutputs]; r.Kept == nil || !r.Kept.Varied || !r.Kept.Distinct || r.Wrong != DefaultKeptCalls-1 {
		t.Errorf("kept outputs of unvarying inputs: %+v kept %+v", r, r.Kept)
	}
	if r := res[VariantSizes]; r.Sizes == nil || r.Sizes.Fallbacks != 4 || r.Right != 12 {
		t.Errorf("sizes of two 8x8 arguments: %+v sizes %+v", r, r.Sizes)
	}
	scalar := runScripts(t, python, env, Spec{
		StandIn: true, Function: "torchlsp_repro_user:scale_and_relu", Inputs: "torchlsp_repro_user:scalar_inputs",
		Variants: []string{VariantSizes},
	})
	if r := scalar[VariantSizes]; !strings.Contains(r.Unsupported, "has no leading dimension to vary") || r.OK {
		t.Errorf("sizes of a 0-d tensor: %+v", r)
	}
}

// TestStandInPendingBackward holds the stand-in to the mechanism behind
// TL016: a call of a graph-tree entry while the last call's output lives
// and requires grad warns on the third such call, once; a backward
// through each output, an output let go, or no_grad, and it never does.
func TestStandInPendingBackward(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "standin.py"), []byte(standInSource), 0o600); err != nil {
		t.Fatal(err)
	}
	// One process per case: the pending flag is the device's, across
	// functions, as torch's tree manager keeps it.
	const prog = `import sys, warnings
import torch
import standin
w = torch.randn(4, 4, requires_grad=True)
def f(x):
    return torch.relu(x @ w)
case = sys.argv[1]
fn = standin.compile(f, cudagraphs=True, cudagraph_trees=True)
kept = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for i in range(6):
        with torch.no_grad() if case == "no_grad" else torch.enable_grad():
            if case == "dropped":
                fn(torch.randn(2, 4))
                continue
            out = fn(torch.randn(2, 4))
        if case == "backward":
            out.sum().backward()
        kept.append(out)
print(sum("pending, uninvoked backwards" in str(m.message) for m in caught), w.grad is not None)
`
	if err := os.WriteFile(filepath.Join(dir, "prog.py"), []byte(prog), 0o600); err != nil {
		t.Fatal(err)
	}
	// The backward case also shows the gradient reaching the weights
	// through the graph's static output.
	for _, tc := range []struct{ name, want string }{
		{"kept", "1 False"}, {"backward", "0 True"}, {"dropped", "0 False"}, {"no_grad", "0 False"},
	} {
		out, err := exec.Command(python, filepath.Join(dir, "prog.py"), tc.name).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("%s: got %q (warnings, a gradient), want %q", tc.name, got, tc.want)
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func anyContains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestHazardVerdicts renders each hazard variant's verdict in one line,
// the report's title and its list of verdicts.
func TestHazardVerdicts(t *testing.T) {
	t.Parallel()
	eight, two, five := 8, 2, 5
	overwritten := ErrorInfo{Type: "RuntimeError", Count: 2, Phase: "compiled",
		Message: "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run."}
	limitHit := ErrorInfo{Type: "torch._dynamo.exc.FailOnRecompileLimitHit", Count: 4, Message: "Hard failure due to fullgraph=True"}
	tests := []struct {
		name string
		v    VariantResult
		want string
	}{
		{"kept, wrong", VariantResult{Variant: VariantKeptOutputs, Calls: 4, ExpectedCalls: 4, Right: 1, Wrong: 3, Kept: &KeptInfo{Distinct: true}},
			"kept outputs overwritten: 3 of 4 read wrong — the hazard TL011 describes"},
		{"kept, raised", VariantResult{Variant: VariantKeptOutputs, Calls: 4, ExpectedCalls: 4, Right: 2, Errors: []ErrorInfo{overwritten}, Kept: &KeptInfo{Distinct: true}},
			"kept outputs overwritten: 2 of 4 raised RuntimeError — the hazard TL011 describes"},
		{"kept, right", VariantResult{Variant: VariantKeptOutputs, OK: true, Calls: 4, ExpectedCalls: 4, Right: 4, Kept: &KeptInfo{Distinct: true}},
			"kept outputs: 4 of 4 right — the hazard did not show"},
		{"kept, same results", VariantResult{Variant: VariantKeptOutputs, OK: true, Calls: 4, ExpectedCalls: 4, Right: 4, Kept: &KeptInfo{}},
			"kept outputs: 4 of 4 right, but calls gave the same results, so an overwrite could not show"},
		{"cloned, right", VariantResult{Variant: VariantKeptOutputsCloned, OK: true, Calls: 4, ExpectedCalls: 4, Right: 4, Kept: &KeptInfo{Cloned: true, Distinct: true}},
			"cloned: 4 of 4 right"},
		{"sizes, eager past the limit", VariantResult{Variant: VariantSizes, Calls: 12, ExpectedCalls: 12, Right: 12,
			Sizes: &SizesInfo{Tried: 12, Ran: 12, First: 1, Last: 12, RecompileLimit: 8, LimitName: "recompile_limit", WarnLimit: 8, Compiles: &eight, CUDAGraphs: 8, Fallbacks: 4, LimitHit: true}},
			"varying sizes: 12 sizes, 8 graphs compiled, 8 CUDA graphs recorded, 4 calls ran uncompiled past recompile_limit (8) — the hazard TL013 describes"},
		{"sizes, fullgraph", VariantResult{Variant: VariantSizes, Calls: 12, ExpectedCalls: 12, Right: 8, Errors: []ErrorInfo{limitHit},
			Sizes: &SizesInfo{Tried: 12, Ran: 12, RecompileLimit: 8, LimitName: "cache_size_limit", Compiles: &eight, Failed: 4, LimitHit: true}},
			"varying sizes: 12 sizes, 8 graphs compiled, 4 calls raised FailOnRecompileLimitHit past cache_size_limit (8) — the hazard TL013 describes"},
		{"sizes, CUDA graphs past the warning", VariantResult{Variant: VariantSizes, Calls: 12, ExpectedCalls: 12, Right: 12,
			Sizes: &SizesInfo{Tried: 12, Ran: 12, RecompileLimit: 8, WarnLimit: 8, Compiles: &two, CUDAGraphs: 12}},
			"varying sizes: 12 sizes, 2 graphs compiled, 12 CUDA graphs recorded, past cudagraph_dynamic_shape_warn_limit (8), none ran uncompiled — the hazard TL013 describes"},
		{"sizes, not shown", VariantResult{Variant: VariantSizes, OK: true, Calls: 12, ExpectedCalls: 12, Right: 12,
			Sizes: &SizesInfo{Tried: 12, Ran: 12, RecompileLimit: 8, Compiles: &two}},
			"varying sizes: 12 sizes, 2 graphs compiled, none ran uncompiled — the hazard did not show"},
		{"pending, warned", VariantResult{Variant: VariantPendingBackward, Calls: 12, ExpectedCalls: 12, Right: 12,
			Pending: &PendingInfo{Warned: 1, CUDAGraphsOn: true, CUDAGraphs: 1}},
			"pending backwards: 12 calls, torch warned (fast path missed), none replayed a CUDA graph — the hazard TL016 describes"},
		{"pending, not shown", VariantResult{Variant: VariantPendingBackward, OK: true, Calls: 12, ExpectedCalls: 12, Right: 12,
			Pending: &PendingInfo{CUDAGraphsOn: true, Replays: 10}},
			"pending backwards: 12 calls, no warning, 10 replayed a CUDA graph — the hazard did not show"},
		{"pending, no CUDA graphs", VariantResult{Variant: VariantPendingBackward, OK: true, Calls: 12, ExpectedCalls: 12, Right: 12, Pending: &PendingInfo{}},
			"pending backwards: 12 calls, no warning — this compile has no CUDA graphs, which the hazard needs"},
		{"no_grad", VariantResult{Variant: VariantPendingBackwardNoGrad, OK: true, Calls: 12, ExpectedCalls: 12, Right: 12,
			Pending: &PendingInfo{NoGrad: true, CUDAGraphsOn: true, Replays: 11}},
			"no_grad: 12 calls, no warning, 11 replayed a CUDA graph"},
		{"no_grad, warned", VariantResult{Variant: VariantPendingBackwardNoGrad, Calls: 12, ExpectedCalls: 12, Right: 12,
			Pending: &PendingInfo{NoGrad: true, Warned: 1, CUDAGraphsOn: true}},
			"no_grad: 12 calls, torch warned (fast path missed), none replayed a CUDA graph — no_grad did not avoid it"},
		{"capture, raised", VariantResult{Variant: VariantFirstCallInCapture, Calls: 1, ExpectedCalls: 4,
			Errors: []ErrorInfo{{Type: "torch._dynamo.exc.BackendCompilerFailed", Count: 1, Phase: "capture"}}, GraphCapture: &GraphCaptureInfo{}},
			"first call in capture: raised BackendCompilerFailed — the hazard TL017 describes"},
		{"capture, wrong replays", VariantResult{Variant: VariantFirstCallInCapture, Calls: 4, ExpectedCalls: 4, Right: 1, Wrong: 3,
			GraphCapture: &GraphCaptureInfo{Captured: true, Replays: 4}},
			"first call in capture: captured, 3 of 4 replays wrong — the hazard TL017 describes"},
		{"capture, right", VariantResult{Variant: VariantFirstCallInCapture, OK: true, Calls: 4, ExpectedCalls: 4, Right: 4,
			GraphCapture: &GraphCaptureInfo{Captured: true, Replays: 4}},
			"first call in capture: captured, 4 of 4 replays right — the hazard did not show"},
		{"warmed, right", VariantResult{Variant: VariantFirstCallInCaptureWarmed, OK: true, Calls: 4, ExpectedCalls: 4, Right: 4,
			GraphCapture: &GraphCaptureInfo{Warmed: true, Warmups: 3, Captured: true, Replays: 4}},
			"warmed up (3 calls): captured, 4 of 4 replays right"},
		{"warmed, raised", VariantResult{Variant: VariantFirstCallInCaptureWarmed, Calls: 1, ExpectedCalls: 4,
			Errors: []ErrorInfo{{Type: "RuntimeError", Count: 1, Phase: "capture"}}, GraphCapture: &GraphCaptureInfo{Warmed: true, Warmups: 3}},
			"warmed up (3 calls): raised RuntimeError — warming up did not keep it right"},
		{"bucketed", VariantResult{Variant: VariantSizesBucketed, OK: true, Calls: 12, ExpectedCalls: 12, Right: 12,
			Sizes: &SizesInfo{Tried: 12, Ran: 5, Bucketed: true, RecompileLimit: 8, Compiles: &five, CUDAGraphs: 5}},
			"bucketed sizes: 12 sizes padded to 5, 5 graphs compiled, 5 CUDA graphs recorded, none ran uncompiled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.v
			v.settle()
			got, ok := hazardVerdict(v)
			if !ok || got != tt.want {
				t.Errorf("verdict %q (%v), want %q", got, ok, tt.want)
			}
			rep := Report{Target: "gpu", Variants: []VariantResult{v}}
			h, _ := hazardOf(v.Variant)
			md := rep.Markdown(nil)
			row := fmt.Sprintf("| %s | %s | %s |", v.Variant, verdict(v), calls(v))
			for _, want := range []string{"## torch.compile " + h.Name + " repro (" + h.Code + ") on `gpu`", "- " + v.Variant + ": " + tt.want + ".", row} {
				if !strings.Contains(md, want) {
					t.Errorf("report lacks %q:\n%s", want, md)
				}
			}
			if sum := rep.Summary(); !strings.HasPrefix(sum, strings.ToUpper(tt.want[:1])+tt.want[1:]) {
				t.Errorf("summary %q", sum)
			}
		})
	}
	shown := VariantResult{Variant: VariantSizes, Calls: 12, ExpectedCalls: 12, Right: 12, Sizes: &SizesInfo{Fallbacks: 4}}
	shown.settle()
	if v, c := verdict(shown), calls(shown); v != "**hazard shown**" || c != "12/12 right" {
		t.Errorf("every call right, the hazard shown: result %q, calls %q", v, c)
	}
	if _, ok := hazardVerdict(VariantResult{Variant: VariantThreads, Calls: 1}); ok {
		t.Error("a threading variant got a hazard verdict")
	}
	if _, ok := hazardVerdict(VariantResult{Variant: VariantSizes, Unsupported: "no leading dimension"}); ok {
		t.Error("a variant that did not run got a hazard verdict")
	}
}

func TestHazardFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code string
		want []string
	}{
		{"TL011", []string{VariantKeptOutputs, VariantKeptOutputsCloned}},
		{"TL011 cudagraph-output-overwritten", []string{VariantKeptOutputs, VariantKeptOutputsCloned}},
		{"tl013", []string{VariantSizes, VariantSizesBucketed}},
		{"TL016 cudagraph-pending-backward", []string{VariantPendingBackward, VariantPendingBackwardNoGrad}},
		{"TL017", []string{VariantFirstCallInCapture, VariantFirstCallInCaptureWarmed}},
		{"TL001", nil},
		{"", nil},
	}
	for _, tt := range tests {
		h, ok := HazardFor(tt.code)
		if ok != (tt.want != nil) || strings.Join(h.Variants, ",") != strings.Join(tt.want, ",") {
			t.Errorf("HazardFor(%q) = %+v, %v; want %v", tt.code, h, ok, tt.want)
		}
	}
	// Named, they generate; unnamed, only the threading variants do.
	vs, err := Generate(Spec{Variants: []string{VariantSizes, VariantKeptOutputs}})
	if err != nil || len(vs) != 2 || vs[0].Name != VariantKeptOutputs || paramsOf(t, vs[0].Script).KeptCalls != DefaultKeptCalls {
		t.Errorf("generate the hazard variants: %v %v", vs, err)
	}
	vs, err = Generate(Spec{Variants: []string{VariantFirstCallInCaptureWarmed, VariantPendingBackward}})
	if err != nil || len(vs) != 2 || vs[0].Name != VariantPendingBackward || paramsOf(t, vs[0].Script).PendingCalls != DefaultPendingCalls {
		t.Errorf("generate the TL016 and TL017 variants: %v %v", vs, err)
	}
	all, err := Generate(Spec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range all {
		if _, ok := hazardOf(v.Name); ok {
			t.Errorf("%s made without being named", v.Name)
		}
	}
}
