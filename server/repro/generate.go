// Package repro builds and runs scripts that reproduce torch.compile
// failures in threaded code on a target: the same compile call is run from
// the main thread, from threading.Thread workers, from a thread pool, and
// with CUDA graphs (or CUDA graph trees) turned off, and every compiled
// result is compared with eager. Hazard variants show a diagnostic's
// hazard from the main thread instead: outputs kept across calls (TL011),
// more input sizes than the recompile limits (TL013), forwards that leave
// their backwards pending (TL016), a first call inside a manual CUDA graph
// capture (TL017). It knows nothing of LSP.
package repro

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

//go:embed python/repro.py
var scriptTemplate string

//go:embed python/standin.py
var standInSource string

// paramsToken is the one place in the template where the parameters go,
// as a Python string literal holding JSON.
const paramsToken = `"TORCHLSP_PARAMS_LITERAL"`

// Variant names, in the order Generate returns them.
const (
	VariantThreads           = "threads"             // threading.Thread workers, as the user wrote it
	VariantExecutor          = "executor"            // concurrent.futures.ThreadPoolExecutor
	VariantMainThread        = "main-thread"         // every call from the main thread
	VariantCudagraphsOff     = "cudagraphs-off"      // threads, CUDA graphs off
	VariantCudagraphTreesOff = "cudagraph-trees-off" // threads, legacy CUDA graphs
	// With more than one device: one thread per device, as training
	// pipelines run, each with its own copy of the module and inputs.
	VariantThreadsPerGPU  = "threads-per-gpu"
	VariantExecutorPerGPU = "executor-per-gpu"

	// The hazard variants, each from the main thread, run only when named.
	// TL011: every output kept across the next calls, compared with eager
	// after the last call; its control clones each output right after its
	// call.
	VariantKeptOutputs       = "kept-outputs"
	VariantKeptOutputsCloned = "kept-outputs-cloned"
	// TL013: more distinct leading sizes than the target's recompile and
	// CUDA-graph limits; its control pads them up to powers of two.
	VariantSizes         = "sizes"
	VariantSizesBucketed = "sizes-bucketed"
	// TL016: calls in grad mode, every output kept alive and no backward
	// run, counting torch's pending-backwards warning and the calls that
	// replayed a CUDA graph; its control makes them under torch.no_grad().
	VariantPendingBackward       = "pending-backward"
	VariantPendingBackwardNoGrad = "pending-backward-no-grad"
	// TL017: the compiled object's first call inside
	// torch.cuda.graph(g), then replays on new inputs compared with
	// eager; its control warms it up on a side stream first.
	VariantFirstCallInCapture       = "first-call-in-capture"
	VariantFirstCallInCaptureWarmed = "first-call-in-capture-warmed"
)

// AllVariants lists the threading variants, which Generate makes when
// the spec names none, in its order.
func AllVariants() []string {
	return []string{VariantThreads, VariantExecutor, VariantMainThread, VariantCudagraphsOff, VariantCudagraphTreesOff}
}

// Hazard is a diagnostic's hazard that a pair of variants shows: the
// hazard as the user's code meets it, and the fix the diagnostic offers.
type Hazard struct {
	Code     string // the diagnostic's code, e.g. "TL011"
	Name     string // what the run is called, e.g. "kept-outputs"
	Variants []string
}

// hazards lists the diagnostics with repro variants.
func hazards() []Hazard {
	return []Hazard{
		{Code: "TL011", Name: "kept-outputs", Variants: []string{VariantKeptOutputs, VariantKeptOutputsCloned}},
		{Code: "TL013", Name: "varying-sizes", Variants: []string{VariantSizes, VariantSizesBucketed}},
		{Code: "TL016", Name: "pending-backward", Variants: []string{VariantPendingBackward, VariantPendingBackwardNoGrad}},
		{Code: "TL017", Name: "first-call-in-capture", Variants: []string{VariantFirstCallInCapture, VariantFirstCallInCaptureWarmed}},
	}
}

// HazardFor finds the hazard of a diagnostic code: "TL011", or the full
// code "TL011 cudagraph-output-overwritten".
func HazardFor(code string) (Hazard, bool) {
	short, _, _ := strings.Cut(strings.TrimSpace(code), " ")
	for _, h := range hazards() {
		if strings.EqualFold(h.Code, short) {
			return h, true
		}
	}
	return Hazard{}, false
}

// HazardCodes lists the codes HazardFor knows.
func HazardCodes() []string {
	hs := hazards()
	codes := make([]string, len(hs))
	for i, h := range hs {
		codes[i] = h.Code
	}
	return codes
}

// hazardOf is the hazard a variant shows, if it is a hazard variant.
func hazardOf(variant string) (Hazard, bool) {
	for _, h := range hazards() {
		if contains(h.Variants, variant) {
			return h, true
		}
	}
	return Hazard{}, false
}

// variantsFor lists the variants spec can have, the ones made by
// default first: the per-device ones only with more than one device, the
// hazard variants only when named.
func variantsFor(spec Spec) (all, byDefault []string) {
	byDefault = AllVariants()
	if spec.Devices > 1 || spec.Devices == AutoDevices {
		byDefault = append(byDefault, VariantThreadsPerGPU, VariantExecutorPerGPU)
	}
	all = append([]string(nil), byDefault...)
	for _, h := range hazards() {
		all = append(all, h.Variants...)
	}
	return all, byDefault
}

// Defaults for Spec fields left zero.
const (
	DefaultThreads        = 2
	DefaultCallsPerThread = 100
	DefaultBackend        = "inductor"
	DefaultRTol           = 1e-3
	DefaultATol           = 1e-4
	DefaultDeadline       = 100 * time.Second
	DefaultSeed           = 1234
	// DefaultKeptCalls is how many outputs the kept-outputs variants keep,
	// and how many replays the first-call-in-capture ones compare.
	DefaultKeptCalls = 4
	// DefaultPendingCalls is how many calls the pending-backward
	// variants make: torch warns on the third.
	DefaultPendingCalls = 12
	// DefaultCaptureTimeout bounds running the user's entry point until
	// the compiled object's first call.
	DefaultCaptureTimeout = 60 * time.Second
)

// AutoDevices as Spec.Devices adds the per-device variants, run on every
// CUDA device the target has; they report "not run" with fewer than two.
const AutoDevices = -1

// inductorConfig is the module whose triton.* flags choose CUDA graphs.
const inductorConfig = "torch._inductor.config"

// ConfigSetting is one assignment to a torch config module in effect in
// the user's file, e.g. {"torch._inductor.config", "triton.cudagraph_trees",
// "False"}. Value is Python literal text; the script parses it with
// ast.literal_eval, never eval.
type ConfigSetting struct {
	Module string `json:"module"`
	Key    string `json:"key"`
	Value  string `json:"value"`
}

// Spec describes the torch.compile call to reproduce.
type Spec struct {
	Mode      string            // torch.compile mode; "" for the default
	Options   map[string]string // torch.compile options: key → Python literal text
	Backend   string            // "" for "inductor"
	Dynamic   *bool             // nil leaves torch.compile's default
	Fullgraph bool
	Config    []ConfigSetting // config assignments and patches in effect, in order

	Threads        int // worker threads; DefaultThreads when 0
	CallsPerThread int // compiled calls per thread; DefaultCallsPerThread when 0
	// CompileInThreads makes every worker call torch.compile itself, as in
	// the reported failure; otherwise the main thread compiles once.
	CompileInThreads bool

	// Function is the user's function as "module:qualname", importable on
	// the target. It is used only with Inputs, a "module:qualname" factory
	// of sample inputs (called with an int seed if it takes an argument);
	// otherwise the stand-in workload runs and the result says so.
	Function string
	Inputs   string

	// Files are the workspace's Python files; they travel over stdin into
	// a temporary directory on the target, first on sys.path and the
	// working directory, removed afterwards. Workdir instead names a
	// checkout already on the target: an absolute path, or one under ~/.
	Files   []File
	Workdir string
	// Entry is the workspace script (relative path) run as __main__ to
	// capture the first real call of the compile call at CaptureFile
	// lines CaptureLines (1-based, inclusive) when Function or Inputs
	// cannot be had otherwise; time-boxed by CaptureTimeout.
	Entry          string
	CaptureFile    string
	CaptureLines   [2]int
	CaptureTimeout time.Duration
	// Devices is the target's GPU count; more than one adds the
	// one-thread-per-device variants. On CPU with StandIn the devices are
	// logical (the stand-in keys its state by device index as torch does).
	Devices int

	// StandIn replaces torch.compile's CUDA-graph layer with a pure Python
	// stand-in that fails the same ways, for machines without CUDA or
	// without torch.compile (CI).
	StandIn bool

	RTol, ATol float64       // torch.allclose tolerances; defaults when 0
	Deadline   time.Duration // the script stops waiting for workers after this; DefaultDeadline when 0
	Seed       int64         // DefaultSeed when 0
	Variants   []string      // which variants; AllVariants() when empty
}

// Variant is one self-contained Python script for a fresh interpreter.
type Variant struct {
	Name   string
	Script string
	// Input goes to the script's stdin after the script itself: the
	// workspace files, framed (see encodeFiles); may be empty.
	Input []byte
}

// scriptParams is the JSON the script reads; field names are the script's.
type scriptParams struct {
	Variant          string            `json:"variant"`
	Mode             string            `json:"mode"`
	Options          map[string]string `json:"options"`
	Backend          string            `json:"backend"`
	Dynamic          *bool             `json:"dynamic"`
	Fullgraph        bool              `json:"fullgraph"`
	Config           []ConfigSetting   `json:"config"`
	Threads          int               `json:"threads"`
	CallsPerThread   int               `json:"calls_per_thread"`
	CompileInThreads bool              `json:"compile_in_threads"`
	Function         string            `json:"function"`
	Inputs           string            `json:"inputs"`
	StandIn          bool              `json:"stand_in"`
	// CUDAGraphs: the call as written turns CUDA graphs on (its mode,
	// options, backend or config): a target with no GPU cannot run what
	// the threading variants are about, and they say so.
	CUDAGraphs      bool    `json:"cuda_graphs"`
	StandInSource   string  `json:"stand_in_source"`
	RTol            float64 `json:"rtol"`
	ATol            float64 `json:"atol"`
	DeadlineS       float64 `json:"deadline_s"`
	Seed            int64   `json:"seed"`
	WorkspaceFiles  bool    `json:"workspace_files"`
	Workdir         string  `json:"workdir"`
	Entry           string  `json:"entry"`
	CaptureFile     string  `json:"capture_file"`
	CaptureLines    [2]int  `json:"capture_lines"`
	CaptureTimeoutS float64 `json:"capture_timeout_s"`
	Devices         int     `json:"devices"`
	PerDevice       bool    `json:"per_device"`
	KeptCalls       int     `json:"kept_calls"`
	PendingCalls    int     `json:"pending_calls"`
}

var (
	dottedName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	modeName   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	// VariantName is what Run accepts as a variant name: it names files.
	variantName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
)

// Generate returns one script per variant of spec (the threading ones
// when it names none), in the order of variantsFor.
func Generate(spec Spec) ([]Variant, error) {
	base, err := baseParams(spec)
	if err != nil {
		return nil, err
	}
	all, byDefault := variantsFor(spec)
	var input []byte
	if len(spec.Files) > 0 {
		if input, err = encodeFiles(spec.Files); err != nil {
			return nil, fmt.Errorf("repro spec: %w", err)
		}
	}
	names := spec.Variants
	if len(names) == 0 {
		names = byDefault
	}
	seen := make(map[string]bool)
	var out []Variant
	for _, name := range all {
		if !contains(names, name) || seen[name] {
			continue
		}
		seen[name] = true
		p := variantParams(base, name)
		script, err := render(p)
		if err != nil {
			return nil, fmt.Errorf("generate %s: %w", name, err)
		}
		out = append(out, Variant{Name: name, Script: script, Input: input})
	}
	for _, n := range names {
		if !seen[n] {
			return nil, fmt.Errorf("generate: unknown variant %q (known: %s)", n, strings.Join(all, ", "))
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// baseParams validates spec and fills its defaults.
func baseParams(spec Spec) (scriptParams, error) {
	p := scriptParams{
		Mode:             spec.Mode,
		Options:          copyMap(spec.Options),
		Backend:          spec.Backend,
		Dynamic:          spec.Dynamic,
		Fullgraph:        spec.Fullgraph,
		Config:           append([]ConfigSetting{}, spec.Config...),
		Threads:          spec.Threads,
		CallsPerThread:   spec.CallsPerThread,
		CompileInThreads: spec.CompileInThreads,
		Function:         spec.Function,
		Inputs:           spec.Inputs,
		StandIn:          spec.StandIn,
		CUDAGraphs:       turnsOnCUDAGraphs(spec),
		RTol:             spec.RTol,
		ATol:             spec.ATol,
		DeadlineS:        spec.Deadline.Seconds(),
		Seed:             spec.Seed,
		WorkspaceFiles:   len(spec.Files) > 0,
		Workdir:          spec.Workdir,
		Entry:            spec.Entry,
		CaptureFile:      spec.CaptureFile,
		CaptureLines:     spec.CaptureLines,
		CaptureTimeoutS:  spec.CaptureTimeout.Seconds(),
		Devices:          spec.Devices,
		KeptCalls:        DefaultKeptCalls,
		PendingCalls:     DefaultPendingCalls,
	}
	if p.CaptureTimeoutS == 0 {
		p.CaptureTimeoutS = DefaultCaptureTimeout.Seconds()
	}
	if p.Devices == 0 {
		p.Devices = 1
	}
	if p.Backend == "" {
		p.Backend = DefaultBackend
	}
	if p.Threads == 0 {
		p.Threads = DefaultThreads
	}
	if p.CallsPerThread == 0 {
		p.CallsPerThread = DefaultCallsPerThread
	}
	if p.RTol == 0 {
		p.RTol = DefaultRTol
	}
	if p.ATol == 0 {
		p.ATol = DefaultATol
	}
	if p.DeadlineS == 0 {
		p.DeadlineS = DefaultDeadline.Seconds()
	}
	if p.Seed == 0 {
		p.Seed = DefaultSeed
	}
	if p.StandIn {
		p.StandInSource = standInSource
	}
	var errs []error
	if p.Mode != "" && !modeName.MatchString(p.Mode) {
		errs = append(errs, fmt.Errorf("mode %q is not a mode name", p.Mode))
	}
	if p.Mode != "" && len(p.Options) > 0 {
		errs = append(errs, errors.New("torch.compile takes mode or options, not both"))
	}
	if !modeName.MatchString(p.Backend) {
		errs = append(errs, fmt.Errorf("backend %q is not a backend name", p.Backend))
	}
	for k, v := range p.Options {
		if !dottedName.MatchString(k) {
			errs = append(errs, fmt.Errorf("option %q is not a dotted name", k))
		}
		if strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("option %s has no value", k))
		}
	}
	for _, c := range p.Config {
		if !dottedName.MatchString(c.Module) || !dottedName.MatchString(c.Key) || strings.TrimSpace(c.Value) == "" {
			errs = append(errs, fmt.Errorf("config setting %s.%s = %q is malformed", c.Module, c.Key, c.Value))
		}
	}
	if p.Threads < 1 || p.Threads > 256 {
		errs = append(errs, fmt.Errorf("threads %d out of range 1..256", p.Threads))
	}
	if p.CallsPerThread < 1 || p.CallsPerThread > 1_000_000 {
		errs = append(errs, fmt.Errorf("calls per thread %d out of range 1..1000000", p.CallsPerThread))
	}
	if p.RTol < 0 || p.ATol < 0 || p.DeadlineS < 0 {
		errs = append(errs, errors.New("tolerances and deadline must not be negative"))
	}
	for _, ref := range []struct{ what, v string }{{"function", p.Function}, {"inputs", p.Inputs}} {
		if ref.v != "" && !isImportRef(ref.v) {
			errs = append(errs, fmt.Errorf("%s %q is not module:qualname", ref.what, ref.v))
		}
	}
	if p.WorkspaceFiles && p.Workdir != "" {
		errs = append(errs, errors.New("workspace files and a target workdir exclude each other"))
	}
	if w := p.Workdir; w != "" && !strings.HasPrefix(w, "/") && w != "~" && !strings.HasPrefix(w, "~/") {
		// The interpreter starts in "/", not in the login directory.
		errs = append(errs, fmt.Errorf("workdir %q: give an absolute path on the target, or one under ~/", w))
	}
	for _, rel := range []struct{ what, v string }{{"entry", p.Entry}, {"capture file", p.CaptureFile}} {
		if rel.v != "" {
			if err := checkBundlePath(rel.v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", rel.what, err))
			}
		}
	}
	if p.Entry != "" && (p.CaptureFile == "" || p.CaptureLines[0] < 1 || p.CaptureLines[1] < p.CaptureLines[0]) {
		errs = append(errs, errors.New("an entry point needs the compile call's file and lines"))
	}
	if p.Devices > 64 || p.Devices < AutoDevices {
		errs = append(errs, fmt.Errorf("devices %d out of range 1..64", p.Devices))
	}
	if err := errors.Join(errs...); err != nil {
		return p, fmt.Errorf("repro spec: %w", err)
	}
	return p, nil
}

func isImportRef(s string) bool {
	mod, qual, ok := strings.Cut(s, ":")
	return ok && dottedName.MatchString(mod) && dottedName.MatchString(qual)
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// variantParams turns the call as written into the named variant.
func variantParams(base scriptParams, name string) scriptParams {
	p := base
	p.Variant = name
	p.Options = copyMap(base.Options)
	p.Config = append([]ConfigSetting{}, base.Config...)
	p.PerDevice = name == VariantThreadsPerGPU || name == VariantExecutorPerGPU
	switch name {
	case VariantCudagraphsOff:
		switch {
		case p.Mode == "max-autotune":
			p.Mode = "max-autotune-no-cudagraphs"
		case p.Mode != "" && p.Mode != "reduce-overhead":
			// Modes without CUDA graphs (default, max-autotune-no-cudagraphs)
			// stay; the config flag below covers the rest.
		default:
			// reduce-overhead is the default mode plus triton.cudagraphs.
			p.Mode = ""
			if p.Options == nil {
				p.Options = map[string]string{}
			}
			p.Options["triton.cudagraphs"] = "False"
		}
		p.Config = setConfig(p.Config, inductorConfig, "triton.cudagraphs", "False")
	case VariantCudagraphTreesOff:
		if _, ok := p.Options["triton.cudagraph_trees"]; ok {
			p.Options["triton.cudagraph_trees"] = "False"
		}
		p.Config = setConfig(p.Config, inductorConfig, "triton.cudagraph_trees", "False")
	}
	return p
}

// turnsOnCUDAGraphs reports whether a call's settings turn CUDA graphs on,
// by the rules variantParams turns them off with: the modes that add
// triton.cudagraphs, the cudagraphs backend, the option, the last config
// setting of the flag.
func turnsOnCUDAGraphs(spec Spec) bool {
	on := spec.Mode == "reduce-overhead" || spec.Mode == "max-autotune" || spec.Backend == "cudagraphs"
	for _, c := range spec.Config {
		if c.Module == inductorConfig && c.Key == "triton.cudagraphs" {
			on = c.Value == "True"
		}
	}
	if v, ok := spec.Options["triton.cudagraphs"]; ok {
		on = v == "True"
	}
	return on
}

// setConfig appends module.key = value, after any earlier setting of it,
// so that it wins.
func setConfig(list []ConfigSetting, module, key, value string) []ConfigSetting {
	return append(list, ConfigSetting{Module: module, Key: key, Value: value})
}

// render puts p into the template as a Python string literal of JSON.
func render(p scriptParams) (string, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode parameters: %w", err)
	}
	if strings.Count(scriptTemplate, paramsToken) != 1 {
		return "", errors.New("script template must hold the parameters token exactly once")
	}
	return strings.Replace(scriptTemplate, paramsToken, pyStringLiteral(string(data)), 1), nil
}

// pyStringLiteral quotes s as a Python string literal made of printable
// ASCII only: anything else, and quotes and backslashes, are escaped, so
// no text can end the literal early.
func pyStringLiteral(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
