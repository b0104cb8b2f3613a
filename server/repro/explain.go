package repro

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
)

// VariantExplain is the script that reports Dynamo's graph breaks and
// recompiles instead of running the threaded matrix.
const VariantExplain = "explain"

// DefaultExplainInputs is how many input sets explain runs (factory seeds
// 0..n-1): recompiles show only across different inputs.
const DefaultExplainInputs = 4

// CompileEvent is one graph break or recompile, where torch reported it:
// File is relative to the workspace when it lies in the user's code.
type CompileEvent struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Func   string `json:"func"`
	Reason string `json:"reason"`
	Code   string `json:"code"` // Dynamo's graph-break code ("GB0007"), when it names one
}

// ExplainInfo is what explain found, and by which means.
type ExplainInfo struct {
	Method          string         `json:"method"` // "TORCH_LOGS=graph_breaks,recompiles and torch._dynamo.explain", or the stand-in
	Graphs          *int           `json:"graphs"`
	GraphBreakCount *int           `json:"graph_break_count,omitempty"`
	GraphBreaks     []CompileEvent `json:"graph_breaks"`
	Recompiles      []CompileEvent `json:"recompiles"`
}

// GenerateExplain returns the explain script for spec's user code
// (Function/Inputs or Entry with the capture fields); the threading
// fields are ignored and CallsPerThread is the number of input sets.
func GenerateExplain(spec Spec) (Variant, error) {
	if spec.Entry == "" && (spec.Function == "" || spec.Inputs == "") {
		return Variant{}, errors.New("explain: needs the user's code: a function and an input factory, or an entry point")
	}
	if spec.CallsPerThread == 0 {
		spec.CallsPerThread = DefaultExplainInputs
	}
	spec.Threads, spec.Devices, spec.Variants = 1, 1, nil
	p, err := baseParams(spec)
	if err != nil {
		return Variant{}, err
	}
	p.Variant = VariantExplain
	script, err := render(p)
	if err != nil {
		return Variant{}, fmt.Errorf("generate explain: %w", err)
	}
	v := Variant{Name: VariantExplain, Script: script}
	if len(spec.Files) > 0 {
		if v.Input, err = encodeFiles(spec.Files); err != nil {
			return Variant{}, fmt.Errorf("explain spec: %w", err)
		}
	}
	return v, nil
}

// Explain runs the explain script on t and returns its result; the run's
// files are kept under opts.Workspace as a repro's are.
// local links the report's workspace paths; it may be nil.
func Explain(ctx context.Context, t remote.Target, in remote.Interpreter, v Variant, opts RunOptions, local func(file string, line int) (string, bool), sink func(Event)) (Report, error) {
	rep, err := run(ctx, t, in, []Variant{v}, opts, serialized(sink))
	if rep.Dir != "" {
		// run wrote the threaded table; this run's report is explain's.
		if werr := os.WriteFile(filepath.Join(rep.Dir, "report.md"), []byte(rep.ExplainMarkdown(local)), 0o600); werr != nil {
			err = errors.Join(err, fmt.Errorf("explain report: %w", werr))
		}
	}
	if err != nil {
		return rep, err
	}
	if len(rep.Variants) != 1 {
		return rep, fmt.Errorf("explain on %s: no result", t.Name())
	}
	r := rep.Variants[0]
	switch {
	case r.Failure != "":
		return rep, fmt.Errorf("explain on %s: %s", t.Name(), r.Failure)
	case r.Unsupported != "":
		return rep, fmt.Errorf("explain on %s: %s", t.Name(), r.Unsupported)
	case len(r.Errors) > 0:
		e := r.Errors[0]
		return rep, fmt.Errorf("explain on %s: %s: %s", t.Name(), e.Type, e.Message)
	case r.Explain == nil:
		return rep, fmt.Errorf("explain on %s: the script reported nothing", t.Name())
	}
	return rep, nil
}

// ExplainMarkdown renders explain's report: counts, then each event.
func (r Report) ExplainMarkdown(local func(file string, line int) (url string, ok bool)) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## torch.compile explained on `%s`\n\n", r.Target)
	if len(r.Variants) == 0 {
		b.WriteString("No result.\n")
		return b.String()
	}
	if v := r.Variants[0]; v.Explain == nil {
		fmt.Fprintf(&b, "**No result**: %s\n", outcome(v))
		if d := details(v, nil); d != "" {
			fmt.Fprintf(&b, "\n%s\n", strings.ReplaceAll(d, "<br>", "\n"))
		}
		for _, n := range v.Notes {
			fmt.Fprintf(&b, "\n- %s", cell(n))
		}
		return b.String()
	}
	v := r.Variants[0]
	ex := v.Explain
	var facts []string
	if v.TorchVersion != "" {
		facts = append(facts, "torch "+v.TorchVersion)
	}
	if v.Device != "" {
		facts = append(facts, "device "+v.Device)
	}
	facts = append(facts, "from "+ex.Method)
	b.WriteString(cell(strings.Join(facts, "; ")) + ".\n")
	if v.Workload != "" {
		fmt.Fprintf(&b, "Workload: %s.\n", cell(v.Workload))
	}
	if v.Inputs != nil {
		fmt.Fprintf(&b, "Inputs (%s): %s.\n", cell(v.Inputs.Source), cell(strings.Join(v.Inputs.Values, "; ")))
	}
	graphs := ""
	if ex.Graphs != nil {
		graphs = fmt.Sprintf(", %d graph(s)", *ex.Graphs)
	}
	fmt.Fprintf(&b, "\n**%d graph break(s), %d recompile(s)%s.**\n", len(ex.GraphBreaks), len(ex.Recompiles), graphs)
	for _, sec := range []struct {
		title string
		evs   []CompileEvent
	}{{"Graph breaks", ex.GraphBreaks}, {"Recompiles", ex.Recompiles}} {
		if len(sec.evs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n| %s | Where | Code | Reason |\n|---|---|---|---|\n", sec.title)
		for i, e := range sec.evs {
			where := code(fmt.Sprintf("%s:%d", e.File, e.Line))
			if local != nil {
				if u, ok := local(e.File, e.Line); ok {
					where = "[" + cell(fmt.Sprintf("%s:%d", e.File, e.Line)) + "](" + u + ")"
				}
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", i+1, where, cell(e.Code), cell(e.Reason))
		}
	}
	for _, n := range v.Notes {
		fmt.Fprintf(&b, "\n- %s", cell(n))
	}
	if len(v.Notes) > 0 {
		b.WriteString("\n")
	}
	if r.Dir != "" {
		fmt.Fprintf(&b, "\nScript and output: `%s`\n", r.Dir)
	}
	return b.String()
}
