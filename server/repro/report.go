package repro

import (
	"cmp"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Report is one target's run of the variants.
type Report struct {
	Target       string
	TorchVersion string
	Device       string
	Workload     string
	// WorkloadReason says why this workload ran; may be empty.
	WorkloadReason string
	StandIn        bool
	Started        time.Time
	Variants       []VariantResult
	Dir            string // where the run's files are; empty when none were kept
}

// label names a variant in summaries.
func label(variant string) string {
	switch variant {
	case VariantThreads:
		return "as written (threads)"
	case VariantExecutor:
		return "thread pool"
	case VariantMainThread:
		return "main thread"
	case VariantCudagraphsOff:
		return "cudagraphs off"
	case VariantCudagraphTreesOff:
		return "cudagraph trees off"
	case VariantThreadsPerGPU:
		return "one thread per GPU"
	case VariantExecutorPerGPU:
		return "thread pool, one thread per GPU"
	case VariantKeptOutputs:
		return "kept outputs"
	case VariantKeptOutputsCloned:
		return "cloned outputs"
	case VariantSizes:
		return "varying sizes"
	case VariantSizesBucketed:
		return "bucketed sizes"
	case VariantPendingBackward:
		return "pending backwards"
	case VariantPendingBackwardNoGrad:
		return "no_grad"
	case VariantFirstCallInCapture:
		return "first call in capture"
	case VariantFirstCallInCaptureWarmed:
		return "warmed up, then captured"
	}
	return variant
}

// kind says what the report's variants reproduce: one hazard's
// ("kept-outputs repro (TL011)"), or the threading ones.
func (r Report) kind() string {
	var h Hazard
	for i, v := range r.Variants {
		vh, ok := hazardOf(v.Variant)
		if !ok || (i > 0 && vh.Code != h.Code) {
			return "threading repro"
		}
		h = vh
	}
	if h.Code == "" {
		return "threading repro"
	}
	return fmt.Sprintf("%s repro (%s)", h.Name, h.Code)
}

// hazardVerdict is a hazard variant's verdict in one line, e.g. "kept
// outputs overwritten: 3 of 4 read wrong — the hazard TL011 describes";
// false for the other variants and for one that did not run.
func hazardVerdict(v VariantResult) (string, bool) {
	h, ok := hazardOf(v.Variant)
	if !ok || v.Failure != "" || v.Unsupported != "" {
		return "", false
	}
	switch {
	case v.Kept != nil:
		return keptVerdict(v, h), true
	case v.Sizes != nil:
		return sizesVerdict(v, h), true
	case v.Pending != nil:
		return pendingVerdict(v, h), true
	case v.GraphCapture != nil:
		return captureVerdict(v, h), true
	}
	return "", false
}

// badCalls says which calls read wrong or raised: "3 of 4 read wrong",
// "2 of 4 raised RuntimeError"; "" when none did.
func badCalls(v VariantResult) string {
	var parts []string
	if v.Wrong > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d read wrong", v.Wrong, v.Calls))
	}
	if n := v.ErrorCount(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d raised %s", n, max(v.Calls, n), v.Errors[0].Type))
	}
	return strings.Join(parts, ", ")
}

func keptVerdict(v VariantResult, h Hazard) string {
	bad := badCalls(v)
	switch {
	case v.Kept.Cloned && bad != "":
		return "cloned: " + bad + " — cloning did not keep them"
	case v.Kept.Cloned:
		return fmt.Sprintf("cloned: %d of %d right", v.Right, v.Calls)
	case bad != "":
		return fmt.Sprintf("kept outputs overwritten: %s — the hazard %s describes", bad, h.Code)
	case !v.Kept.Distinct:
		return fmt.Sprintf("kept outputs: %d of %d right, but calls gave the same results, so an overwrite could not show", v.Right, v.Calls)
	}
	return fmt.Sprintf("kept outputs: %d of %d right — the hazard did not show", v.Right, v.Calls)
}

func sizesVerdict(v VariantResult, h Hazard) string {
	s := v.Sizes
	prefix := "varying sizes: "
	if s.Bucketed {
		prefix = "bucketed sizes: "
	}
	facts := sizesFacts(s)
	if bad := badCalls(v); bad != "" && s.Failed == 0 {
		facts = append(facts, bad)
	}
	line := prefix + strings.Join(facts, ", ")
	switch {
	case s.shown() && s.Bucketed:
		return line + " — bucketing did not keep under the limits"
	case s.shown():
		return line + " — the hazard " + h.Code + " describes"
	case !s.Bucketed:
		return line + " — the hazard did not show"
	}
	return line
}

// pendingVerdict: "pending backwards: 12 calls, torch warned (fast path
// missed), none replayed a CUDA graph — the hazard TL016 describes";
// "no_grad: 12 calls, no warning, 11 replayed a CUDA graph".
func pendingVerdict(v VariantResult, h Hazard) string {
	pi := v.Pending
	prefix := "pending backwards: "
	if pi.NoGrad {
		prefix = "no_grad: "
	}
	facts := []string{plural(v.Calls, "call")}
	if pi.Warned > 0 {
		facts = append(facts, "torch warned (fast path missed)")
	} else {
		facts = append(facts, "no warning")
	}
	if pi.CUDAGraphsOn {
		if pi.Replays == 0 {
			facts = append(facts, "none replayed a CUDA graph")
		} else {
			facts = append(facts, fmt.Sprintf("%d replayed a CUDA graph", pi.Replays))
		}
	}
	if bad := badCalls(v); bad != "" {
		facts = append(facts, bad)
	}
	line := prefix + strings.Join(facts, ", ")
	switch {
	case pi.NoGrad && pi.Warned > 0:
		return line + " — no_grad did not avoid it"
	case pi.NoGrad:
		return line
	case pi.Warned > 0:
		return line + " — the hazard " + h.Code + " describes"
	case !pi.CUDAGraphsOn:
		return line + " — this compile has no CUDA graphs, which the hazard needs"
	}
	return line + " — the hazard did not show"
}

// captureVerdict: "first call in capture: raised BackendCompilerFailed —
// the hazard TL017 describes"; "warmed up (3 calls): captured, 4 of 4
// replays right".
func captureVerdict(v VariantResult, h Hazard) string {
	c := v.GraphCapture
	prefix := "first call in capture: "
	if c.Warmed {
		prefix = fmt.Sprintf("warmed up (%s): ", plural(c.Warmups, "call"))
	}
	var line string
	switch {
	case !c.Captured && len(v.Errors) > 0:
		t := v.Errors[0].Type
		line = "raised " + t[strings.LastIndex(t, ".")+1:]
	case !c.Captured:
		line = "not captured"
	case v.Wrong > 0 || v.ErrorCount() > 0:
		var parts []string
		if v.Wrong > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d replays wrong", v.Wrong, v.Calls))
		}
		if n := v.ErrorCount(); n > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d replays raised %s", n, max(v.Calls, n), v.Errors[0].Type))
		}
		line = "captured, " + strings.Join(parts, ", ")
	default:
		line = fmt.Sprintf("captured, %d of %d replays right", v.Right, v.Calls)
		if !c.Warmed {
			line += " — the hazard did not show"
		}
		return prefix + line
	}
	if c.Warmed {
		return prefix + line + " — warming up did not keep it right"
	}
	return prefix + line + " — the hazard " + h.Code + " describes"
}

// sizesFacts says in words what a sizes variant counted.
func sizesFacts(s *SizesInfo) []string {
	facts := []string{fmt.Sprintf("%d sizes", s.Tried)}
	if s.Bucketed {
		facts[0] += fmt.Sprintf(" padded to %d", s.Ran)
	}
	if s.Compiles != nil {
		facts = append(facts, plural(*s.Compiles, "graph")+" compiled")
	}
	if s.CUDAGraphs > 0 {
		f := plural(s.CUDAGraphs, "CUDA graph") + " recorded"
		if s.WarnLimit > 0 && s.CUDAGraphs > s.WarnLimit {
			f += fmt.Sprintf(", past cudagraph_dynamic_shape_warn_limit (%d)", s.WarnLimit)
		}
		facts = append(facts, f)
	}
	limit := fmt.Sprintf("%s (%d)", cmp.Or(s.LimitName, "the recompile limit"), s.RecompileLimit)
	switch {
	case s.Failed > 0:
		facts = append(facts, fmt.Sprintf("%s raised FailOnRecompileLimitHit past %s", plural(s.Failed, "call"), limit))
	case s.Fallbacks > 0:
		facts = append(facts, fmt.Sprintf("%s ran uncompiled past %s", plural(s.Fallbacks, "call"), limit))
	case s.LimitHit:
		facts = append(facts, "torch hit "+limit)
	default:
		facts = append(facts, "none ran uncompiled")
	}
	return facts
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// fillSummary takes the target-wide facts from the variants' results.
func (r *Report) fillSummary() {
	for _, v := range r.Variants {
		if r.TorchVersion == "" {
			r.TorchVersion = v.TorchVersion
		}
		if r.Device == "" {
			r.Device = v.Device
		}
		if r.Workload == "" {
			r.Workload = v.Workload
		}
		r.StandIn = r.StandIn || v.StandIn
	}
}

// inputs is the first variant's account of the user's inputs.
func (r Report) inputs() *InputsInfo {
	for _, v := range r.Variants {
		if v.Inputs != nil {
			return v.Inputs
		}
	}
	return nil
}

// Summary is one sentence: each variant and what happened, e.g. "as
// written (threads): AssertionError at torch/_inductor/cudagraph_trees.py:359;
// cudagraphs off: ok (200/200 right)."
func (r Report) Summary() string {
	if why := r.Unrunnable(); why != "" {
		return "Nothing ran: " + strings.TrimSuffix(why, ".") + "."
	}
	parts := make([]string, 0, len(r.Variants))
	for _, v := range r.Variants {
		if line, ok := hazardVerdict(v); ok {
			parts = append(parts, line)
			continue
		}
		parts = append(parts, label(v.Variant)+": "+outcome(v))
	}
	if len(parts) == 0 {
		return "No variants ran."
	}
	s := strings.Join(parts, "; ") + "."
	s = strings.ToUpper(s[:1]) + s[1:]
	if r.Device == "cpu" && !r.StandIn {
		// Real torch on the CPU: say first what the run cannot show.
		s = "This target has no GPU, so CUDA graphs never run here and the CUDA-graph hazard cannot show; what threads do to torch.compile itself: " + s
	}
	return s
}

// Unrunnable is the one reason every variant gave for not running, when
// they all gave the same one (a target whose torch cannot run any
// workload, one without torch): the report is that sentence, not a table
// of variants each saying it. "" otherwise.
func (r Report) Unrunnable() string {
	why := ""
	for i, v := range r.Variants {
		if v.Unsupported == "" || v.Failure != "" || (i > 0 && v.Unsupported != why) {
			return ""
		}
		why = v.Unsupported
	}
	return why
}

// outcome says in a few words how a variant ended.
func outcome(v VariantResult) string {
	switch {
	case v.Failure != "":
		return firstLine(v.Failure)
	case v.Unsupported != "":
		return "not run: " + v.Unsupported
	case v.OK:
		return fmt.Sprintf("ok (%d/%d right)", v.Right, v.Calls)
	}
	var parts []string
	if len(v.Errors) > 0 {
		e := v.Errors[0]
		s := e.Type
		if f, ok := e.TorchFrame(); ok {
			s += fmt.Sprintf(" at %s:%d", shortPath(f.File), f.Line)
		}
		parts = append(parts, s)
	}
	if v.Wrong > 0 {
		parts = append(parts, fmt.Sprintf("wrong results in %d of %d calls", v.Wrong, v.Calls))
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("incomplete (%d of %d calls ran)", v.Calls, v.ExpectedCalls))
	}
	return strings.Join(parts, ", ")
}

// shortPath cuts a target path to start at its torch package directory.
func shortPath(p string) string {
	p = strings.ReplaceAll(p, "\\", "/")
	if i := strings.LastIndex(p, "/torch/"); i >= 0 && !strings.HasPrefix(p, "<") {
		return p[i+1:]
	}
	return p
}

// Markdown renders the report: a summary sentence, a table of variants
// and the notes. mapFrame links a target path and line to the local
// mirror; it may be nil, and frames it cannot map are shown as text.
func (r Report) Markdown(mapFrame func(targetPath string, line int) (localURL string, ok bool)) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## torch.compile %s on `%s`\n\n", r.kind(), r.Target)
	var facts []string
	if r.TorchVersion != "" {
		facts = append(facts, "torch "+r.TorchVersion)
	}
	if r.Device != "" {
		facts = append(facts, "device "+r.Device)
	}
	if !r.Started.IsZero() {
		facts = append(facts, "run "+r.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if r.StandIn {
		facts = append(facts, "stand-in compile backend (no real CUDA graphs)")
	}
	if len(facts) > 0 {
		b.WriteString(strings.Join(facts, "; ") + ".\n")
	}
	if r.Workload != "" {
		fmt.Fprintf(&b, "Workload: %s.\n", cell(r.Workload))
	}
	if r.WorkloadReason != "" {
		fmt.Fprintf(&b, "Why this workload: %s.\n", cell(r.WorkloadReason))
	}
	if in := r.inputs(); in != nil {
		fmt.Fprintf(&b, "Inputs (%s): %s.\n", cell(in.Source), cell(strings.Join(in.Values, "; ")))
	}
	// The summary names paths such as <torchlsp-stand-in>/…: escape what
	// Markdown would take for HTML.
	fmt.Fprintf(&b, "\n**%s**\n\n", strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(oneLine(r.Summary())))
	if r.Unrunnable() != "" {
		if r.Dir != "" {
			fmt.Fprintf(&b, "Scripts and output: `%s`\n", r.Dir)
		}
		return b.String()
	}

	b.WriteString("| Variant | Result | Calls | Details |\n|---|---|---|---|\n")
	for _, v := range r.Variants {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", v.Variant, verdict(v), calls(v), details(v, mapFrame))
	}

	var verdicts []string
	for _, v := range r.Variants {
		if line, ok := hazardVerdict(v); ok {
			verdicts = append(verdicts, fmt.Sprintf("- %s: %s.\n", v.Variant, cell(line)))
		}
	}
	if len(verdicts) > 0 {
		b.WriteString("\nVerdicts:\n" + strings.Join(verdicts, ""))
	}

	for _, v := range r.Variants {
		if len(v.PerDevice) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nPer device, %s:\n\n| Device | Result | Calls | Details |\n|---|---|---|---|\n", v.Variant)
		for _, d := range v.PerDevice {
			dv := VariantResult{Variant: v.Variant, Calls: d.Calls, ExpectedCalls: d.Calls, Right: d.Right, Wrong: d.Wrong, Errors: d.Errors,
				OK: d.Wrong == 0 && len(d.Errors) == 0 && d.Calls > 0}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(d.Device), verdict(dv), calls(dv), details(dv, mapFrame))
		}
	}

	var notes []string
	seen := map[string]bool{}
	for _, v := range r.Variants {
		for _, n := range v.Notes {
			if !seen[n] {
				seen[n] = true
				notes = append(notes, n)
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", cell(n))
		}
	}
	if r.Dir != "" {
		fmt.Fprintf(&b, "\nScripts and output: `%s`\n", r.Dir)
	}
	return b.String()
}

func verdict(v VariantResult) string {
	switch {
	case v.Failure != "":
		return "**no result**"
	case v.Unsupported != "":
		return "not run"
	case v.OK:
		return "ok"
	case v.Kept != nil || v.Sizes != nil || v.Pending != nil || v.GraphCapture != nil:
		return "**hazard shown**"
	case v.Wrong > 0 && len(v.Errors) > 0:
		return "**FAIL**: raised, wrong results"
	case v.Wrong > 0:
		return "**FAIL**: wrong results"
	case len(v.Errors) > 0:
		return "**FAIL**: raised"
	}
	return "**FAIL**: incomplete"
}

func calls(v VariantResult) string {
	if v.Failure != "" || v.Unsupported != "" {
		return ""
	}
	if v.OK {
		return fmt.Sprintf("%d/%d right", v.Right, v.Calls)
	}
	var parts []string
	if v.Wrong > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d wrong", v.Wrong, v.Calls))
	}
	if n := v.ErrorCount(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d raised", n, max(v.Calls, n)))
	}
	if v.Calls != v.ExpectedCalls {
		parts = append(parts, fmt.Sprintf("%d of %d ran", v.Calls, v.ExpectedCalls))
	}
	if len(parts) == 0 {
		// Every call answered right, and the hazard still showed.
		return fmt.Sprintf("%d/%d right", v.Right, v.Calls)
	}
	return strings.Join(parts, ", ")
}

// maxErrorsShown bounds the exceptions listed per variant.
const maxErrorsShown = 3

func details(v VariantResult, mapFrame func(string, int) (string, bool)) string {
	switch {
	case v.Failure != "":
		return cell(v.Failure)
	case v.Unsupported != "":
		return cell(v.Unsupported)
	}
	var parts []string
	if s := v.Sizes; s != nil {
		parts = append(parts, sizesDetails(s))
	}
	if k := v.Kept; k != nil {
		parts = append(parts, keptDetails(k))
	}
	if pi := v.Pending; pi != nil {
		parts = append(parts, pendingDetails(pi))
	}
	if c := v.GraphCapture; c != nil {
		parts = append(parts, captureDetails(c, v.StandIn))
	}
	for i, e := range v.Errors {
		if i == maxErrorsShown {
			parts = append(parts, fmt.Sprintf("and %d more kinds of exception", len(v.Errors)-i))
			break
		}
		s := fmt.Sprintf("`%s` ×%d", e.Type, e.Count)
		if e.Message != "" {
			s += ": " + cell(e.Message)
		}
		if f, ok := e.TorchFrame(); ok {
			s += " at " + frameLink(f, mapFrame) + " in `" + f.Func + "`"
			if f.Code != "" {
				s += ": " + code(f.Code)
			}
		}
		if e.Phase != "" && e.Phase != "compiled" {
			s += " (" + e.Phase + ")"
		}
		parts = append(parts, s)
	}
	if v.Wrong > 0 && len(v.Mismatches) > 0 {
		m := v.Mismatches[0]
		parts = append(parts, cell(fmt.Sprintf("first wrong: thread %d call %d, %s", m.Thread, m.Call, m.Diff)))
	}
	return strings.Join(parts, "<br>")
}

// keptDetails says how a kept-outputs variant kept and read its outputs.
func keptDetails(k *KeptInfo) string {
	s := "every output kept, read after the last call"
	if k.Cloned {
		s = "every output cloned right after its call, read after the last call"
	}
	if k.Varied {
		s += "; the inputs, the same at every call, rolled by the call's index"
	}
	return cell(s)
}

// pendingDetails says how a pending-backward variant called and what it
// counted.
func pendingDetails(pi *PendingInfo) string {
	s := "grad mode, every output kept alive, no backward run"
	if pi.NoGrad {
		s = "under torch.no_grad(), every output kept alive"
	}
	if pi.InputsRequireGrad {
		s += "; the floating-point inputs made to require grad"
	}
	if pi.CUDAGraphsOn {
		s += fmt.Sprintf("; %s recorded, %s replayed", plural(pi.CUDAGraphs, "CUDA graph"), plural(pi.Replays, "call"))
	} else {
		s += "; CUDA graphs off in this compile"
	}
	if pi.Warning != "" {
		s += "; torch: " + pi.Warning
	}
	return cell(s)
}

// captureDetails says how a first-call-in-capture variant captured; the
// stand-in's capture has no streams.
func captureDetails(c *GraphCaptureInfo, standIn bool) string {
	s := "first call inside torch.cuda.graph(g)"
	if c.Warmed {
		where := "on a side stream"
		if standIn {
			where = "(the stand-in has no streams)"
		}
		s = fmt.Sprintf("%s %s, then captured in torch.cuda.graph(g)", plural(c.Warmups, "warm-up call"), where)
	}
	if c.Captured {
		s += fmt.Sprintf("; %s on new inputs copied into the captured ones", plural(c.Replays, "replay"))
	}
	return cell(s)
}

// sizesDetails gives a sizes variant's sizes, the target's limits, its
// counts and the warnings torch logged.
func sizesDetails(s *SizesInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "leading sizes %d–%d", s.First, s.Last)
	if s.Bucketed {
		fmt.Fprintf(&b, " (%d asked for, padded to %d powers of two)", s.Tried, s.Ran)
	}
	var limits []string
	if s.RecompileLimit > 0 {
		limits = append(limits, fmt.Sprintf("%s %d", cmp.Or(s.LimitName, "recompile_limit"), s.RecompileLimit))
	}
	if s.WarnLimit > 0 {
		limits = append(limits, fmt.Sprintf("cudagraph_dynamic_shape_warn_limit %d", s.WarnLimit))
	}
	if len(limits) > 0 {
		b.WriteString("; the target's " + strings.Join(limits, ", "))
	}
	b.WriteString("; " + strings.Join(sizesFacts(s)[1:], ", "))
	if s.Compiles == nil {
		b.WriteString("; the target's torch does not count compiled graphs")
	}
	out := cell(b.String())
	for _, w := range s.Warnings {
		out += "<br>torch warned: " + code(w)
	}
	return out
}

func frameLink(f Frame, mapFrame func(string, int) (string, bool)) string {
	text := fmt.Sprintf("%s:%d", shortPath(f.File), f.Line)
	if mapFrame != nil {
		if url, ok := mapFrame(f.File, f.Line); ok {
			return "[" + cell(text) + "](" + url + ")"
		}
	}
	return code(text)
}

// oneLine joins s into one line with no bare pipes.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

// cell makes text safe inside a table cell: one line, no bare pipes, cut
// to a readable length.
func cell(s string) string {
	const maxLen = 300
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxLen {
		n := maxLen
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// code wraps s in a code span whose fence no backtick run in s matches.
func code(s string) string {
	s = cell(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
