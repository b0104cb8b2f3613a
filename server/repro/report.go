package repro

import (
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
	}
	return variant
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
		parts = append(parts, label(v.Variant)+": "+outcome(v))
	}
	if len(parts) == 0 {
		return "No variants ran."
	}
	s := strings.Join(parts, "; ") + "."
	return strings.ToUpper(s[:1]) + s[1:]
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
	fmt.Fprintf(&b, "## torch.compile threading repro on `%s`\n\n", r.Target)
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
