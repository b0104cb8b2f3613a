package repro

import (
	"os"
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
