package repro

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Line prefixes the scripts print on stdout.
const (
	resultPrefix   = "TORCHLSP_RESULT "
	progressPrefix = "TORCHLSP_PROGRESS "
)

// Frame is one traceback frame, as the target sees it.
type Frame struct {
	File string `json:"file"` // path on the target
	Line int    `json:"line"`
	Func string `json:"func"`
	Code string `json:"code,omitempty"` // the source line, when the target could read it
}

// ErrorInfo is one distinct exception the compiled calls raised.
type ErrorInfo struct {
	Type    string  `json:"type"` // e.g. "AssertionError", "torch._dynamo.exc.Unsupported"
	Message string  `json:"message"`
	Count   int     `json:"count"`           // calls that raised it
	Phase   string  `json:"phase,omitempty"` // "compiled", "eager" or "setup"
	Cause   string  `json:"cause,omitempty"` // "Type: message" of the chained exception
	Frames  []Frame `json:"frames"`          // outermost first
	// InnermostTorch indexes the innermost frame inside torch (or the
	// stand-in) in Frames; -1 when none is.
	InnermostTorch int `json:"innermost_torch"`
}

// TorchFrame returns the innermost torch frame, if any.
func (e ErrorInfo) TorchFrame() (Frame, bool) {
	if e.InnermostTorch < 0 || e.InnermostTorch >= len(e.Frames) {
		return Frame{}, false
	}
	return e.Frames[e.InnermostTorch], true
}

// Mismatch is a compiled call whose result differed from eager.
type Mismatch struct {
	Thread int    `json:"thread"`
	Call   int    `json:"call"`
	Diff   string `json:"diff"` // e.g. "max |diff| 3.1"
}

// VariantResult is the outcome of one variant: the script's result line,
// plus what the runner saw.
type VariantResult struct {
	Variant       string         `json:"variant"`
	OK            bool           `json:"ok"` // every call ran, none raised, none was wrong
	Calls         int            `json:"calls"`
	ExpectedCalls int            `json:"expected_calls"`
	Right         int            `json:"right"`
	Wrong         int            `json:"wrong"`
	Errors        []ErrorInfo    `json:"errors"`
	Mismatches    []Mismatch     `json:"mismatches,omitempty"`
	TorchVersion  string         `json:"torch_version,omitempty"`
	Device        string         `json:"device,omitempty"`
	Python        string         `json:"python,omitempty"`
	Seconds       float64        `json:"seconds"`
	Workload      string         `json:"workload,omitempty"`
	StandIn       bool           `json:"stand_in"`
	Compile       map[string]any `json:"compile,omitempty"` // the torch.compile arguments or stand-in flags used
	Unsupported   string         `json:"unsupported,omitempty"`
	// UnsupportedTarget: Unsupported holds for every variant on the
	// target (no torch.compile, no GPU for the CUDA graphs asked for), so
	// the runner starts no more of them.
	UnsupportedTarget bool     `json:"unsupported_target,omitempty"`
	Notes             []string `json:"notes,omitempty"`
	// Inputs says where the user's inputs came from and what they were;
	// nil for the stand-in workload.
	Inputs *InputsInfo `json:"inputs,omitempty"`
	// Devices and PerDevice are set by the one-thread-per-device variants.
	Explain *ExplainInfo `json:"explain,omitempty"` // the explain script's findings
	// WorkspaceDir is the temporary directory on the target the workspace
	// files went to; the script removes it before it exits.
	WorkspaceDir string         `json:"workspace_dir,omitempty"`
	Devices      []string       `json:"devices,omitempty"`
	PerDevice    []DeviceResult `json:"per_device,omitempty"`
	// Kept, Sizes, Pending and GraphCapture are set by the hazard
	// variants: kept-outputs, sizes, pending-backward and
	// first-call-in-capture (and their controls).
	Kept         *KeptInfo         `json:"kept,omitempty"`
	Sizes        *SizesInfo        `json:"sizes,omitempty"`
	Pending      *PendingInfo      `json:"pending,omitempty"`
	GraphCapture *GraphCaptureInfo `json:"graph_capture,omitempty"`

	// Failure says why the runner has no result from the script: "timed
	// out after 120 s", "cancelled", a start error, or an exit without a
	// result line. Empty when the script reported.
	Failure  string  `json:"failure,omitempty"`
	ExitCode int     `json:"exit_code"`
	Wall     float64 `json:"wall_seconds"` // seconds the runner waited for the process
}

// InputsInfo is where a run's inputs came from ("factory train:make_inputs",
// "captured: the first call …") and each argument's type, shape and dtype.
type InputsInfo struct {
	Source string   `json:"source"`
	Values []string `json:"values"`
}

// KeptInfo is how a kept-outputs variant kept its outputs. Its calls,
// right and wrong answers and errors are the VariantResult's, each output
// read only after the last call.
type KeptInfo struct {
	Cloned bool `json:"cloned"` // each output cloned right after its call (the control)
	// Varied: the workload gave the same inputs every call, so each call's
	// were rolled along their last dimension to make the outputs differ.
	Varied bool `json:"varied"`
	// Distinct: the calls' eager results all differ, so an overwritten
	// output reads wrong; otherwise an overwrite cannot show.
	Distinct bool `json:"distinct"`
}

// SizesInfo is what a sizes variant tried and what the target's torch
// did: the limits it read there, the graphs compiled and recorded, the
// calls that ran uncompiled past the recompile limit or failed on it,
// and the warnings torch logged.
type SizesInfo struct {
	Tried    int  `json:"tried"` // distinct leading sizes asked for (First..Last before bucketing)
	Ran      int  `json:"ran"`   // distinct sizes the calls ran with: fewer when bucketed
	Bucketed bool `json:"bucketed"`
	First    int  `json:"first"`
	Last     int  `json:"last"`
	// RecompileLimit is torch._dynamo.config.recompile_limit (LimitName
	// "recompile_limit", or "cache_size_limit" on older torch); 0 unknown.
	RecompileLimit int    `json:"recompile_limit"`
	LimitName      string `json:"limit_name,omitempty"`
	// WarnLimit is triton.cudagraph_dynamic_shape_warn_limit; 0 when the
	// target's torch has none, or it is None.
	WarnLimit int `json:"warn_limit"`
	// Compiles is the graphs Dynamo compiled during the calls
	// (counters["stats"]["unique_graphs"]); nil where torch keeps no count.
	Compiles   *int     `json:"compiles"`
	CUDAGraphs int      `json:"cudagraphs"` // CUDA graphs recorded
	Fallbacks  int      `json:"fallbacks"`  // calls that ran uncompiled past the recompile limit
	Failed     int      `json:"failed"`     // calls that raised FailOnRecompileLimitHit
	LimitHit   bool     `json:"limit_hit"`  // torch logged or raised the recompile limit
	Warnings   []string `json:"warnings,omitempty"`
}

// PendingInfo is what a pending-backward variant saw. Its calls, right
// and wrong answers and errors are the VariantResult's, each output
// compared with eager right after its call and then kept alive.
type PendingInfo struct {
	NoGrad bool `json:"no_grad"` // every call under torch.no_grad() (the control)
	// InputsRequireGrad: neither the function's parameters nor its
	// inputs required grad, so the floating-point inputs were made to.
	InputsRequireGrad bool   `json:"inputs_require_grad"`
	Warned            int    `json:"warned"`            // torch's "pending, uninvoked backwards" warnings
	Warning           string `json:"warning,omitempty"` // the first of them
	// Replays counts the calls whose output lay in the memory of an
	// earlier call's, still alive: a CUDA graph's static output, replayed.
	Replays      int  `json:"replays"`
	CUDAGraphs   int  `json:"cudagraphs"`    // CUDA graphs recorded, as torch logged them
	CUDAGraphsOn bool `json:"cudagraphs_on"` // the compile turns CUDA graphs on
}

// GraphCaptureInfo is what a first-call-in-capture variant did: its
// calls are the replays after the capture, compared with eager; an
// exception of the capture itself is its one error.
type GraphCaptureInfo struct {
	Warmed   bool `json:"warmed"`   // warm-up calls before the capture (the control)
	Warmups  int  `json:"warmups"`  // how many
	Captured bool `json:"captured"` // the capture ended without an exception
	Replays  int  `json:"replays"`  // replays that ran
}

// shown reports whether the sizes met the hazard: a call past the
// recompile limit, or more CUDA graphs recorded than torch records
// without warning.
func (s *SizesInfo) shown() bool {
	return s.Fallbacks > 0 || s.Failed > 0 || s.LimitHit || (s.WarnLimit > 0 && s.CUDAGraphs > s.WarnLimit)
}

// DeviceResult is one device's share of a per-device variant.
type DeviceResult struct {
	Device string      `json:"device"`
	Calls  int         `json:"calls"`
	Right  int         `json:"right"`
	Wrong  int         `json:"wrong"`
	Errors []ErrorInfo `json:"errors"`
}

// parseResultLine decodes a "TORCHLSP_RESULT {json}" line.
func parseResultLine(line string) (VariantResult, bool, error) {
	body, ok := strings.CutPrefix(line, resultPrefix)
	if !ok {
		return VariantResult{}, false, nil
	}
	var r VariantResult
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return VariantResult{}, true, fmt.Errorf("decode result line: %w", err)
	}
	return r, true, nil
}

// settle makes OK agree with the counts, whatever the script said: wrong
// numbers and exceptions are failures.
func (r *VariantResult) settle() {
	r.OK = r.OK && r.Failure == "" && r.Unsupported == "" && r.Wrong == 0 &&
		len(r.Errors) == 0 && r.Calls == r.ExpectedCalls && r.Calls > 0 &&
		(r.Sizes == nil || !r.Sizes.shown()) && (r.Pending == nil || r.Pending.Warned == 0)
}

// ErrorCount is the number of calls that raised.
func (r VariantResult) ErrorCount() int {
	n := 0
	for _, e := range r.Errors {
		n += e.Count
	}
	return n
}

// Progress is a variant's progress line.
type Progress struct {
	Variant string `json:"variant"`
	Done    int    `json:"done"`
	Total   int    `json:"total"`
	Wrong   int    `json:"wrong"`
	Errors  int    `json:"errors"`
}

// ParseProgress decodes a "TORCHLSP_PROGRESS {json}" stdout line, for
// front ends that show progress from Events.
func ParseProgress(line string) (Progress, bool) {
	body, ok := strings.CutPrefix(line, progressPrefix)
	if !ok {
		return Progress{}, false
	}
	var p Progress
	if err := json.Unmarshal([]byte(body), &p); err != nil || p.Total <= 0 {
		return Progress{}, false
	}
	return p, true
}
