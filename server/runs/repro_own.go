package runs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/repro"
)

// ownCode is where the user's own compiled object and inputs come from.
type ownCode struct {
	Module   string // the document's module name, from the workspace root
	Rel      string // the document's path relative to the workspace, slashes
	Function string // "module:qualname" of the compiled object, when top-level
	Inputs   string // "module:qualname" of the input factory, when named
	Entry    string // workspace-relative script run to capture the first call
}

// directive is a comment naming an input factory or an entry point, on
// the compile call's lines or the three lines above it:
//
//	# torchlsp: inputs=make_batch entry=train.py
var (
	directive   = regexp.MustCompile(`#\s*torchlsp:\s*(.*)$`)
	directiveKV = regexp.MustCompile(`^(inputs|entry)=(\S+)$`)
	pyIdent     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	decorated   = regexp.MustCompile(`^(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)`)
)

// ownCodeOf works out, from the document alone, how the compile call's
// object and inputs are reached on the target.
func ownCodeOf(workspace, path, text string, call pybuf.Call) (ownCode, error) {
	rel, err := filepath.Rel(workspace, path)
	if err != nil || strings.HasPrefix(rel, "..") || !strings.HasSuffix(rel, ".py") {
		return ownCode{}, fmt.Errorf("%s is not a Python file of the workspace %s", path, workspace)
	}
	rel = filepath.ToSlash(rel)
	mod := strings.TrimSuffix(strings.TrimSuffix(rel, ".py"), "/__init__")
	mod = strings.ReplaceAll(mod, "/", ".")
	if !pyIdent.MatchString(mod) {
		return ownCode{}, fmt.Errorf("%s: %q is not an importable module name", rel, mod)
	}
	oc := ownCode{Module: mod, Rel: rel, Entry: rel}
	lines := strings.Split(text, "\n")
	for i := max(0, call.Span.Start.Line-3); i <= call.Span.End.Line && i < len(lines); i++ {
		m := directive.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		for _, field := range strings.Fields(m[1]) {
			kv := directiveKV.FindStringSubmatch(field)
			if kv == nil {
				return oc, fmt.Errorf("line %d: torchlsp directive %q: want inputs=NAME or entry=FILE", i+1, field)
			}
			switch kv[1] {
			case "inputs":
				oc.Inputs = kv[2]
				if !strings.Contains(oc.Inputs, ":") {
					oc.Inputs = mod + ":" + oc.Inputs
				}
			case "entry":
				oc.Entry = kv[2]
			}
		}
	}
	name := ""
	if len(call.Args) > 0 {
		name = call.Args[0].Text
	} else {
		// @torch.compile(...) over a def: the function below.
		for i := call.Span.End.Line + 1; i < len(lines) && i <= call.Span.End.Line+5; i++ {
			if m := decorated.FindStringSubmatch(lines[i]); m != nil {
				name = m[1]
				break
			}
		}
	}
	if pyIdent.MatchString(name) && topLevel(text, strings.SplitN(name, ".", 2)[0]) {
		oc.Function = mod + ":" + name
	}
	return oc, nil
}

// topLevel says whether name is bound at the module's top level.
func topLevel(text, name string) bool {
	q := regexp.QuoteMeta(name)
	re := regexp.MustCompile(`(?m)^(?:(?:async\s+)?def\s+` + q + `\b|class\s+` + q + `\b|` + q + `\s*(?::[^=\n]*)?=[^=]|from\s+\S+\s+import\s+.*\b` + q + `\b|import\s+` + q + `\b)`)
	return re.MatchString(text)
}

// apply puts the user's code into spec: the files (or the workdir), the
// object, the factory, and the call to capture when either is missing.
func (oc ownCode) apply(spec *repro.Spec, call pybuf.Call, files []repro.File, workdir string) {
	spec.Files = files
	spec.Workdir = workdir
	spec.Function = oc.Function
	spec.Inputs = oc.Inputs
	if oc.Function == "" || oc.Inputs == "" {
		spec.Entry = oc.Entry
		spec.CaptureFile = oc.Rel
		spec.CaptureLines = [2]int{call.Span.Start.Line + 1, call.Span.End.Line + 1}
	}
}

// describe says, for the report, which of the user's code runs and where
// its inputs come from.
func (oc ownCode) describe() string {
	switch {
	case oc.Function != "" && oc.Inputs != "":
		return fmt.Sprintf("your code ran: %s, with inputs from the factory %s", oc.Function, oc.Inputs)
	case oc.Function != "":
		return fmt.Sprintf("your code ran: %s, with the inputs of its first call, captured by running %s", oc.Function, oc.Entry)
	}
	return fmt.Sprintf("your code ran: the object compiled at %s, with its first call captured by running %s", oc.Rel, oc.Entry)
}
