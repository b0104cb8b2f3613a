package diagnose

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// fileTorchInit holds torch.compile.
const fileTorchInit = "torch/__init__.py"

// compiledFreeThreaded reports compiled code that threads run on a target
// whose Python is built without the GIL (TL018). torch.compile is not
// thread-safe (pytorch issue 168042 and the issues it links); with the
// GIL, a thread switch comes only between bytecodes, and the races it hid
// in Dynamo's and Inductor's Python state come out as crashes or wrong
// results once threads run at once. What decides is the target's
// interpreter (Options.FreeThreaded, from its sysconfig), never its
// version string; the check torch.compile makes of such a build is cited
// where the target's torch has one.
func (c ruleTL018) compiledFreeThreaded(s *compileSite, st threadStart) {
	if !c.opts.FreeThreaded {
		return
	}
	if v := s.settingValue("disable"); v >= 0 && c.t.Kind(v) == syntax.KindTrue {
		return // compiles nothing
	}
	d := Diagnostic{
		Code: CodeCompiledFreeThreaded, Severity: SeverityWarning, Span: c.siteSpan(s),
		Message: fmt.Sprintf("%s makes compiled code that runs in other threads (%s), and the target's Python is built without the GIL (its sysconfig has Py_GIL_DISABLED = 1, and the GIL was off when torchlsp's helper started there): torch.compile is not thread-safe, and without the GIL the races it hid (Dynamo's caches and guards, Inductor's compile state) can crash or give wrong results",
			s.compiler(), threadRules(c).where(st)),
	}
	if st.ext != nil {
		d.Related = append(d.Related, st.ext.Path...)
	}
	line, refusesAll := c.freeThreadedCheck()
	switch {
	case line >= 0 && refusesAll:
		d.Severity = SeverityError
		d.Message += fmt.Sprintf("; %s refuses torch.compile on such a build outright (RuntimeError, %s:%d)", c.torchName(), fileTorchInit, line+1)
		d.Related = append(d.Related, Related{File: fileTorchInit, Line: line, Message: "torch.compile refuses a build without the GIL: " + c.files.text(fileTorchInit, line)})
	case line >= 0:
		d.Related = append(d.Related, Related{File: fileTorchInit, Line: line, Message: "torch.compile checks for a build without the GIL only to refuse older Pythons: " + c.files.text(fileTorchInit, line)})
	}
	d.Message += "; make every compiled call from one thread, or run a Python built with the GIL"
	c.add(d)
}

// freeThreadedCheck is the line of torch.compile (torch/__init__.py)
// that tests for a build without the GIL (sysconfig's Py_GIL_DISABLED),
// or -1, and whether its condition refuses every such build (torch 2.6:
// `elif sysconfig.get_config_var("Py_GIL_DISABLED") == 1:`) rather than
// only some Python versions (2.11: `… == 1 and sys.version_info < (3, 13,
// 3)`).
func (c ruleTL018) freeThreadedCheck() (int, bool) {
	const f = fileTorchInit
	lines := c.files.file(f)
	for i := c.files.find(f, 0, "Py_GIL_DISABLED"); i >= 0; i = c.files.find(f, i+1, "Py_GIL_DISABLED") {
		def := i
		for def >= 0 && !strings.HasPrefix(lines[def], "def ") {
			def--
		}
		if def < 0 || !strings.HasPrefix(lines[def], "def compile(") {
			continue
		}
		// The condition runs to the line that ends with its colon.
		cond := ""
		for j := i; j < len(lines) && j < i+8; j++ {
			cond += lines[j]
			if strings.HasSuffix(strings.TrimSpace(lines[j]), ":") {
				break
			}
		}
		return i, !strings.Contains(cond, "version_info")
	}
	return -1, false
}

// ruleTL018 is the TL018 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL018 struct{ *checker }
