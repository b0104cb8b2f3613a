package diagnose

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

// TL017's second shape: a manual capture in the default
// capture_error_mode ("global") in a file whose threads run compiled
// code. In that mode CUDA forbids the calls that are unsafe while a
// stream captures (an allocation, a synchronization) in every thread of
// the process, so another thread's CUDA work during the capture makes
// the capture, or that thread, fail ("operation not permitted when
// stream is capturing"); "thread_local" forbids them in the capturing
// thread only.

// captureModeLine is the line of the target's torch/cuda/graphs.py where
// torch.cuda.graph takes capture_error_mode with "global" as its
// default, or -1 (a torch whose graph has no such parameter).
func (c ruleTL017) captureModeLine(class int) int {
	if class < 0 {
		return -1
	}
	return c.files.find(fileGraphs, class, `capture_error_mode: str = "global"`)
}

// globalCapturesWithThreads reports each torch.cuda.graph(...) capture
// left in the global mode while threads of the file (or of files the
// workspace model links to it) run compiled code.
func (c ruleTL017) globalCapturesWithThreads(captures []*callInfo, class int) {
	line := c.captureModeLine(class)
	if line < 0 || len(captures) == 0 {
		return
	}
	rc := (threadFacts{c.a}).threadReach()
	var runBy string
	for _, s := range c.a.sites {
		if st, ok := rc.sites[s]; ok {
			runBy = threadRules(c).runBy(st)
			break
		}
	}
	if runBy == "" && len(c.opts.External) > 0 {
		runBy = c.opts.External[0].How
	}
	if runBy == "" {
		return
	}
	t := c.t
	for _, cap := range captures {
		c.a.work++
		if kw, given := cap.keyword("capture_error_mode", t); given {
			if v := strings.Trim(t.Text(kw.value), `"'`); v != "global" {
				continue
			}
		}
		d := Diagnostic{
			Code: CodeFirstCallInCapture, Severity: SeverityWarning, Span: t.Span(cap.calleeNode),
			Message: fmt.Sprintf("this CUDA graph capture runs in capture_error_mode \"global\" (torch.cuda.graph's default, %s:%d) while compiled code runs in other threads (%s): in that mode CUDA forbids, in every thread of the process, the calls that are unsafe during a capture (an allocation, a synchronization), so another thread's CUDA work while this capture runs fails the capture or that thread (\"operation not permitted when stream is capturing\"); pass capture_error_mode=\"thread_local\" to forbid them in the capturing thread only (a draw from the CUDA random generator in another thread still fails during a capture, in either mode: the generator is the capture's)",
				fileGraphs, line+1, runBy),
			Related: []Related{{File: fileGraphs, Line: line, Message: c.files.text(fileGraphs, line)}},
		}
		if fix, ok := c.threadLocalFix(cap); ok {
			d.Fixes = append(d.Fixes, fix)
		}
		c.add(d)
	}
}

// threadLocalFix passes capture_error_mode="thread_local" to a capture
// that does not name the mode (one that says "global" is the user's
// choice, and is not rewritten).
func (c ruleTL017) threadLocalFix(cap *callInfo) (Fix, bool) {
	t := c.t
	if _, given := cap.keyword("capture_error_mode", t); given || cap.argList < 0 || len(cap.splats) > 0 {
		return Fix{}, false
	}
	end := t.EndPos(cap.argList) // just past the closing parenthesis
	if end.Col == 0 {
		return Fix{}, false
	}
	at := pybuf.Pos{Line: end.Line, Col: end.Col - 1}
	text := `capture_error_mode="thread_local"`
	if len(cap.args) > 0 || len(cap.kwargs) > 0 {
		text = ", " + text
	}
	return Fix{
		Title:     `Capture in the "thread_local" mode (capture_error_mode="thread_local")`,
		Preferred: true,
		Edits:     []Edit{{Span: pybuf.Span{Start: at, End: at}, NewText: text}},
	}, true
}
