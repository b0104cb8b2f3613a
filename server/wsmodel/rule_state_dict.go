package wsmodel

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/diagnose"
)

// stateDicts is TL015, a rule over the model: the state_dict() of what
// torch.compile returned for a module, in any file the value reaches,
// written out (Call.Saved: a state dict compared in memory with another
// compiled module's harms nothing).
// The target's OptimizedModule keeps the module as its submodule
// _orig_mod, so every key starts with "_orig_mod."; loaded into the
// plain module (a checkpoint written by training, read by serving) they
// fail with `Unexpected key(s) in state_dict` (pytorch issues 101107,
// 149894). Only a compile site whose target's torch has that line counts
// (diagnose.CompileFact.OrigModLine).
func (m *Model) stateDicts(r *resolver, paths []string, v *Verdicts) {
	for _, p := range paths {
		f := m.files[p]
		for i := range f.Calls {
			c := &f.Calls[i]
			recv, ok := strings.CutSuffix(c.Callee.Text, ".state_dict")
			if c.Callee.Kind != ExprName || !ok || recv == "" || !c.Saved {
				continue
			}
			for _, val := range r.eval(f, c.Scope, Expr{Kind: ExprName, Text: recv, Line: c.Line()}, 0) {
				if val.kind != valCompiled {
					continue
				}
				site := val.file.Compiles[val.compile]
				if site.OrigModLine < 0 {
					continue
				}
				v.Findings[f.Path] = append(v.Findings[f.Path], diagnose.Diagnostic{
					Code: diagnose.CodeStateDictPrefixed, Severity: diagnose.SeverityWarning, Span: c.Span,
					Message: fmt.Sprintf("%s is what torch.compile returned (%s:%d): the target's torch keeps the compiled module as its submodule _orig_mod, so every key of this state_dict() starts with \"_orig_mod.\", and loading it into the module itself fails with \"Unexpected key(s) in state_dict\"; save %s._orig_mod.state_dict(), or compile in place with .compile()",
						recv, m.rel(val.file.Path), site.Line()+1, recv),
					Related: []diagnose.Related{
						m.related(val.file, site.Line(), "compiled here"),
						{File: "torch/_dynamo/eval_frame.py", Line: site.OrigModLine, Message: "OptimizedModule keeps the module as _orig_mod"},
					},
					Fixes: []diagnose.Fix{{
						Title: "Save the module's own state_dict (" + recv + "._orig_mod.state_dict())", Preferred: true,
						Edits: []diagnose.Edit{{Span: c.Span, NewText: recv + "._orig_mod.state_dict"}},
					}},
				})
				break
			}
		}
	}
}
