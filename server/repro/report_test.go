package repro

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/report.golden.md")

const sitePackages = "/opt/torch/.venv/lib/python3.12/site-packages/"

// goldenReport is a run on the GPU host as the measured failure looks.
func goldenReport() Report {
	assertFrames := []Frame{
		{File: "torchlsp-repro-threads.py", Line: 402, Func: "one_call", Code: "got = compiled_for_this_thread()(*args)"},
		{File: sitePackages + "torch/_dynamo/eval_frame.py", Line: 655, Func: "_fn", Code: "return fn(*args, **kwargs)"},
		{File: sitePackages + "torch/_inductor/cudagraph_trees.py", Line: 359, Func: "get_obj", Code: "assert torch._C._is_key_in_tls(attr_name)"},
	}
	return Report{
		Target:       "gpu",
		TorchVersion: "2.11.0+cu130",
		Device:       "cuda:0 (NVIDIA H200)",
		Workload:     "stand-in MLP: relu(x @ W1 + b1) @ W2, x 16x64 float32",
		Started:      time.Date(2026, 11, 29, 11, 2, 36, 0, time.UTC),
		Dir:          "/home/u/proj/.torchlsp/repros/20261129T110236Z-gpu",
		Variants: []VariantResult{
			{Variant: VariantThreads, Calls: 200, ExpectedCalls: 200, Errors: []ErrorInfo{
				{Type: "AssertionError", Count: 200, Phase: "compiled", Frames: assertFrames, InnermostTorch: 2},
			}},
			{Variant: VariantExecutor, Calls: 200, ExpectedCalls: 200, Right: 100, Errors: []ErrorInfo{
				{Type: "AssertionError", Count: 100, Phase: "compiled", Frames: assertFrames, InnermostTorch: 2},
			}},
			{Variant: VariantMainThread, OK: true, Calls: 200, ExpectedCalls: 200, Right: 200},
			{Variant: VariantCudagraphsOff, OK: true, Calls: 200, ExpectedCalls: 200, Right: 200},
			{Variant: VariantCudagraphTreesOff, Calls: 200, ExpectedCalls: 200, Right: 100, Wrong: 94,
				Mismatches: []Mismatch{{Thread: 1, Call: 3, Diff: "max |diff| 12.5"}},
				Errors: []ErrorInfo{{Type: "RuntimeError", Message: "operation not permitted when stream is capturing", Count: 6, Phase: "compiled",
					Frames: []Frame{{File: sitePackages + "torch/cuda/graphs.py", Line: 88, Func: "replay", Code: "super().replay()"}}, InnermostTorch: 0}},
				Notes: []string{"a note with | a pipe"}},
			{Variant: "custom", Failure: "timed out after 120 s"},
		},
	}
}

// mirrorURL maps the GPU host's torch to a local mirror, as the engine does.
func mirrorURL(targetPath string, line int) (string, bool) {
	rel, ok := strings.CutPrefix(targetPath, sitePackages)
	if !ok {
		return "", false
	}
	return "file:///home/u/.cache/torchlsp/mirror/gpu/" + rel + "#L" + strconv.Itoa(line), true
}

func TestReportMarkdownGolden(t *testing.T) {
	got := goldenReport().Markdown(mirrorURL)
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("Markdown differs from %s (run with -update to accept):\n%s", golden, got)
	}
}

func TestReportSummary(t *testing.T) {
	got := goldenReport().Summary()
	for _, want := range []string{
		"As written (threads): AssertionError at torch/_inductor/cudagraph_trees.py:359;",
		"cudagraphs off: ok (200/200 right);",
		"cudagraph trees off: RuntimeError at torch/cuda/graphs.py:88, wrong results in 94 of 200 calls;",
		"custom: timed out after 120 s.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
}

// A real torch on a target with no GPU cannot show the CUDA-graph hazard:
// the summary says so first; the stand-in, which simulates CUDA graphs on
// the CPU, and a GPU target do not.
func TestReportSummaryWithoutGPU(t *testing.T) {
	const noGPU = "This target has no GPU, so CUDA graphs never run here"
	for _, tt := range []struct {
		device  string
		standIn bool
		want    bool
	}{
		{"cpu", false, true},
		{"cpu", true, false},
		{"cuda:0 (NVIDIA H200)", false, false},
	} {
		r := Report{Device: tt.device, StandIn: tt.standIn, Variants: []VariantResult{{Variant: "threads", OK: true, Calls: 200, ExpectedCalls: 200, Right: 200}}}
		if got := r.Summary(); strings.HasPrefix(got, noGPU) != tt.want {
			t.Errorf("device %s, stand-in %v: summary %q", tt.device, tt.standIn, got)
		}
	}
}

func TestMarkdownWithoutMapper(t *testing.T) {
	md := goldenReport().Markdown(nil)
	if strings.Contains(md, "file://") || !strings.Contains(md, "`torch/_inductor/cudagraph_trees.py:359`") {
		t.Errorf("unmapped frames:\n%s", md)
	}
}

func TestCellAndCode(t *testing.T) {
	tests := []struct{ in, cell, code string }{
		{"a|b", `a\|b`, "`a\\|b`"},
		{"two\nlines", "two lines", "`two lines`"},
		{"x `y` z", "x `y` z", "``x `y` z``"},
		{"`edge`", "`edge`", "`` `edge` ``"},
	}
	for _, tt := range tests {
		if got := cell(tt.in); got != tt.cell {
			t.Errorf("cell(%q) = %q, want %q", tt.in, got, tt.cell)
		}
		if got := code(tt.in); got != tt.code {
			t.Errorf("code(%q) = %q, want %q", tt.in, got, tt.code)
		}
	}
	long := strings.Repeat("é", 400)
	if got := cell(long); !strings.HasSuffix(got, "…") || !utf8Valid(got) {
		t.Errorf("long cell cut badly: %q", got[len(got)-8:])
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "?") == s }

func BenchmarkMarkdown(b *testing.B) {
	r := goldenReport()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Markdown(mirrorURL)
	}
}
