package diagnose

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// perThreadConfig is the line of the target's _config_module.py that
// keeps config overrides in a ContextVar (per thread), or -1.
func (c ruleTL012) perThreadConfig() int {
	for from := 0; ; {
		i := c.files.find(fileConfigModule, from, "ContextVar(")
		if i < 0 {
			return -1
		}
		if code := strings.TrimSpace(c.files.text(fileConfigModule, i)); !strings.HasPrefix(code, "#") {
			return i
		}
		from = i + 1
	}
}

// configNotInThreads reports config overrides made on one thread while
// compiled code runs on others, on a torch that keeps overrides per
// thread (TL012): threads of this buffer that reach its compile sites,
// or else threads of files linked by imports that run compiled code
// (Options.ExternalThreads, from the workspace model).
func (c ruleTL012) configNotInThreads(rc reach, ctx int) {
	a := c.a
	hotStart, found := threadStart{}, false
	for _, s := range a.sites {
		if st, ok := rc.sites[s]; ok {
			hotStart, found = st, true
			break
		}
	}
	inThreads := map[string]bool{}
	if !found {
		if len(c.opts.ExternalThreads) == 0 {
			return
		}
		ext := &c.opts.ExternalThreads[0]
		hotStart = threadStart{node: -1, how: ext.How, within: -1, param: -1, fn: -1,
			ext: &ExternalStart{How: ext.How, Path: ext.Path}}
		for _, flag := range ext.Sets {
			inThreads[flag] = true
		}
	}
	for i := range a.refs {
		a.work++
		r := &a.refs[i]
		if _, ok := rc.funcs[r.fn]; ok && r.Write && r.fn >= 0 {
			inThreads[r.Module+"."+r.Key] = true
			if r.Flag != nil && r.Flag.Alias != "" {
				inThreads[r.Flag.Alias] = true
			}
		}
	}
	for i := range a.refs {
		a.work++
		r := &a.refs[i]
		if !r.Write || r.Flag == nil || r.Spelling == SpellOptionsKey || r.Spelling == SpellEnvVar {
			continue
		}
		if _, ok := rc.funcs[r.fn]; ok && r.fn >= 0 {
			continue
		}
		full := r.Module + "." + r.Key
		if inThreads[full] || r.Flag.Alias != "" && inThreads[r.Flag.Alias] {
			continue
		}
		deflt := r.Flag.Default
		if target, ok := c.cat.Flag(r.Flag.Alias); r.Flag.Alias != "" && ok {
			deflt = target.Default
		}
		d := Diagnostic{
			Code: CodeConfigPerThread, Severity: SeverityWarning, Span: r.Span,
			Message: fmt.Sprintf("%s keeps config overrides per thread (a ContextVar, %s:%d): %s set here is not seen by the compiled code run by %s, which uses the default (%s); set it in the function the thread runs, or with %s.patch there",
				c.torchName(), fileConfigModule, ctx+1, full, threadRules(c).runBy(hotStart), oneLineText(deflt, 24), r.Module),
			Related: []Related{
				{File: fileConfigModule, Line: ctx, Message: c.files.text(fileConfigModule, ctx)},
				c.flagRelated(r.Flag, r.Key+" is defined here"),
			},
		}
		if hotStart.ext != nil {
			d.Related = append(d.Related, hotStart.ext.Path...)
		}
		if fix, ok := c.setInThreadFix(r, hotStart); ok {
			d.Fixes = append(d.Fixes, fix)
		}
		c.add(d)
	}
}

// setInThreadFix copies a one-line module-level config write to the top
// of the function a thread start runs.
func (c ruleTL012) setInThreadFix(r *FlagRef, st threadStart) (Fix, bool) {
	a, t := c.a, c.t
	if r.fn >= 0 || r.Spelling != SpellAttribute || r.stmt < 0 || t.StartPos(r.stmt).Line != t.EndPos(r.stmt).Line {
		return Fix{}, false
	}
	def := int32(-1)
	switch {
	case st.within >= 0:
		for _, d := range a.funcs["run"] {
			if t.clsOf[d] == st.within {
				def = d
			}
		}
	case len(st.targets) == 1 && len(a.funcs[st.targets[0]]) == 1:
		def = a.funcs[st.targets[0]][0]
	}
	if def < 0 {
		return Fix{}, false
	}
	if name := t.Text(t.Child(def, syntax.FieldName)); len(a.siteByTarget[name]) > 0 || t.Kind(t.Parent(def)) == syntax.KindDecoratedDefinition {
		return Fix{}, false // compiled (or wrapped) code: a config write there is traced, not run
	}
	text := t.Text(r.stmt)
	head := text
	if i := strings.IndexAny(head, ". ="); i > 0 {
		head = head[:i]
	}
	if _, ok := a.moduleImports()[head]; !ok {
		return Fix{}, false
	}
	body := t.Child(def, syntax.FieldBody)
	stmts := t.CodeChildren(body)
	if len(stmts) == 0 {
		return Fix{}, false
	}
	first := stmts[0]
	if t.Kind(first) == syntax.KindExpressionStatement && len(t.CodeChildren(first)) == 1 && t.Kind(t.CodeChildren(first)[0]) == syntax.KindString {
		if len(stmts) < 2 {
			return Fix{}, false
		}
		first = stmts[1]
	}
	at := t.StartPos(first)
	if at.Line == t.StartPos(def).Line {
		return Fix{}, false // def f(): body on one line
	}
	name := t.Text(t.Child(def, syntax.FieldName))
	return Fix{
		Title:     fmt.Sprintf("Set it in %s, on the thread that runs the compiled code", name),
		Preferred: true,
		Edits:     []Edit{{Span: pybuf.Span{Start: at, End: at}, NewText: text + "\n" + strings.Repeat(" ", at.Col)}},
	}, true
}

// ruleTL012 is the TL012 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL012 struct{ *checker }
