package diagnose

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// optionsExpr is the expression a site's options come from: the
// argument as written, or, for options inside a **splat, their value.
func (c cudagraphDecision) optionsExpr(s *compileSite) int32 {
	t := c.t
	st := s.settings["options"]
	if p := t.Parent(st.arg); p >= 0 && t.Kind(p) == syntax.KindDictionarySplat {
		return st.value
	}
	return st.arg
}

// cudagraphs decides whether compile site s turns CUDA graphs on: its
// backend, its options, then its mode (as the target's mode table says),
// then settings made elsewhere in the file or the target's environment.
// Mode, options and the config reach CUDA graphs only through Inductor:
// another backend, or one the buffer does not spell, leaves them off.
func (c cudagraphDecision) cudagraphs(s *compileSite) cudagraphState {
	a := c.a
	t := c.t
	a.work++
	if v := s.settingValue("disable"); v >= 0 && t.Kind(v) == syntax.KindTrue {
		return cudagraphState{}
	}
	if v := s.settingValue("backend"); v >= 0 {
		b, ok := t.PlainString(v)
		switch {
		case ok && b == "cudagraphs" && c.cudagraphsBackend() >= 0:
			return cudagraphState{on: true, kind: "backend", why: `backend="cudagraphs"` + c.via(s, "backend", v),
				span: t.Span(s.settings["backend"].arg)}
		case !ok || b != "inductor":
			return cudagraphState{}
		}
	}
	flag := a.lookupFlag(inductorConfig, keyCudagraphs)
	if flag == nil {
		return cudagraphState{}
	}
	if d := s.settingValue("options"); d >= 0 {
		// A display, dict(...), and what the file assigns into it before
		// the compile: the last write of the key counts.
		entries, _ := (valueFacts{a}).builtDict(c.optionsExpr(s), s.node)
		v := int32(-1)
		for _, e := range entries {
			a.work++
			if e.key == keyCudagraphs && e.value >= 0 {
				v = e.value
			}
		}
		if v >= 0 {
			if rv := a.resolve(v); t.Kind(rv) == syntax.KindTrue {
				cg := cudagraphState{on: true, kind: "options", why: `options={"triton.cudagraphs": True}` + c.via(s, "options", d), span: t.Span(v), edit: t.Span(v)}
				if arg := t.Unwrap(s.settings["options"].arg); !a.within(v, arg) {
					cg.span = t.Span(arg) // the dict is written elsewhere: point at the call's argument
				}
				return cg
			}
			return cudagraphState{}
		}
	}
	if s.mode != "" {
		if v, ok := c.cat.Modes[s.mode][keyCudagraphs]; ok {
			if v == "True" {
				return cudagraphState{on: true, kind: "mode", why: fmt.Sprintf("mode=%q", s.mode) + c.via(s, "mode", s.settingValue("mode")),
					span: t.Span(s.modeNode)}
			}
			return cudagraphState{}
		}
	}
	ix := c.index()
	span := c.siteSpan(s)
	if r := ix.cudagraphsOn; r != nil {
		if r.Spelling == SpellEnvVar {
			return cudagraphState{on: true, kind: "env", span: span, ref: r,
				why: fmt.Sprintf("%s with %s=1 (line %d)", s.compiler(), r.EnvVar, r.Span.Start.Line+1)}
		}
		return cudagraphState{on: true, kind: "config", span: span, ref: r,
			why: fmt.Sprintf("%s with triton.cudagraphs = True (line %d)", s.compiler(), r.Span.Start.Line+1)}
	}
	for _, e := range flag.Env() {
		if c.opts.Env[e] == "1" {
			return cudagraphState{on: true, kind: "env", span: span,
				why: fmt.Sprintf("%s with %s=1 in the target's environment", s.compiler(), e)}
		}
	}
	return cudagraphState{}
}

// via says, for a setting not written as a literal at the compiling call,
// where its value was written: " (MODE, line 4)".
func (c cudagraphDecision) via(s *compileSite, name string, value int32) string {
	t := c.t
	st, ok := s.settings[name]
	if !ok || value < 0 {
		return ""
	}
	arg := t.Unwrap(st.arg)
	if arg == value && s.kind != siteDerived {
		return ""
	}
	what := oneLineText(t.Text(arg), 40)
	if t.Kind(arg) == syntax.KindDictionarySplat || t.Kind(t.Parent(arg)) == syntax.KindDictionarySplat {
		what = "**" + strings.TrimPrefix(what, "**")
	}
	if s.kind == siteDerived && arg == value {
		return fmt.Sprintf(" (through %s, line %d)", c.siteName(s), t.StartPos(value).Line+1)
	}
	return fmt.Sprintf(" (%s, line %d)", what, t.StartPos(value).Line+1)
}

// siteName names what a derived site calls.
func (c cudagraphDecision) siteName(s *compileSite) string {
	if s.call != nil {
		return oneLineText(c.t.Text(s.call.calleeNode), 40)
	}
	return oneLineText(c.t.Text(s.node), 40)
}

// cudagraphsBackend is the line of the target's cudagraphs backend that
// builds on CUDA graph trees, or -1.
func (c cudagraphDecision) cudagraphsBackend() int {
	const f = "torch/_dynamo/backends/cudagraphs.py"
	if c.files.find(f, 0, "register_backend", `"cudagraphs"`) < 0 {
		return -1
	}
	return c.files.find(f, 0, "cudagraph_trees")
}

// moduleCompile is the line of nn.Module.compile in the target's torch,
// or -1.
func (c cudagraphDecision) moduleCompile() int {
	return c.files.findStatement("torch/nn/modules/module.py", 0, "def", "def compile(")
}

// envValue is the literal string an environment write sets, or "".
func (c cudagraphDecision) envValue(r *FlagRef) string {
	if r.valueNode < 0 {
		return ""
	}
	v, _ := c.t.PlainString(r.valueNode)
	return v
}

// treesOff returns the module-level write that turns cudagraph trees off,
// or the options entry of site s that does, whichever comes first.
func (c cudagraphDecision) treesOff(s *compileSite) *FlagRef {
	ix := c.index()
	first := ix.treesOffModule
	if s != nil {
		if i, ok := ix.treesOffByCall[s.node]; ok && (first < 0 || i < first) {
			first = i
		}
	}
	if first < 0 {
		return nil
	}
	return &c.a.refs[first]
}

// threadHazard says whether compiled code of site s with CUDA graphs on
// fails or goes wrong in threads on the target. The failure this rests
// on is cudagraph_trees' TLS lookup asserting that the calling thread has
// the state (get_obj): a torch whose trees create that state per thread
// has no such assert, and no hazard unless trees are off.
func (c cudagraphDecision) threadHazard(s *compileSite) bool {
	return c.treesOff(s) != nil || len(c.index().treeGates) == 0 || c.tlsAssert() >= 0
}

// tlsAssert is the line of the target's cudagraph_trees.py where a thread
// without the trees' state fails: get_obj's `assert
// torch._C._is_key_in_tls(...)`, while the state is made only when the
// module is imported (module-level statements fill the thread-local and
// stash it for autograd's threads). It is -1 when get_obj asserts nothing
// of the kind, or when a function of the module makes that state for a
// thread that lacks it (the shape of pytorch PR 184357: per-thread state
// created lazily, capture serialised by a lock): there the assert is not
// reached. A capture lock alone changes nothing: get_obj runs before any
// capture (get_container, then the tree manager), so a thread without the
// state still fails at the assert.
func (c cudagraphDecision) tlsAssert() int {
	def, end := c.files.topLevelDef(fileTrees, "get_obj")
	if def < 0 {
		return -1
	}
	line := c.files.findStatement(fileTrees, def+1, "assert", "_is_key_in_tls")
	if line < 0 || line >= end || c.lazyTLS() >= 0 {
		return -1
	}
	return line
}

// lazyTLS is the first line of the target's cudagraph_trees.py where a
// function (an indented statement) makes the trees' per-thread state: it
// stashes an object in the C++ thread-local store, or sets an attribute of
// the module's threading.local. -1 when only import does.
func (c cudagraphDecision) lazyTLS() int {
	lines := c.files.file(fileTrees)
	for i, l := range lines {
		code := strings.TrimLeft(l, " \t")
		if code == l || strings.HasPrefix(code, "#") {
			continue // module level, or a comment
		}
		if strings.Contains(code, "_stash_obj_in_tls(") || strings.HasPrefix(code, "setattr(local,") ||
			strings.HasPrefix(code, "local.") && isAttrAssignment(code[len("local."):]) {
			return i
		}
	}
	return -1
}

// isAttrAssignment reports whether rest ("name = ...", after "local.")
// assigns the attribute it names.
func isAttrAssignment(rest string) bool {
	i := 0
	for i < len(rest) && isNameByte(rest[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	rest = strings.TrimLeft(rest[i:], " ")
	if j := strings.Index(rest, ":"); j == 0 { // an annotated assignment
		rest = rest[1:]
		if k := strings.Index(rest, "="); k >= 0 {
			rest = rest[k:]
		}
	}
	return strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==")
}

// modeLine finds the mode's entry in list_mode_options.
func (c cudagraphDecision) modeLine(mode string) int {
	const f = "torch/_inductor/__init__.py"
	def := c.files.find(f, 0, "def list_mode_options")
	if def < 0 {
		return -1
	}
	return c.files.find(f, def, fmt.Sprintf("%q:", mode))
}

// cudagraphsOffFixes are the edits that compile s without CUDA graphs.
func (c cudagraphDecision) cudagraphsOffFixes(s *compileSite, cg cudagraphState) []Fix {
	t := c.t
	var fixes []Fix
	switch cg.kind {
	case "options":
		fixes = append(fixes, Fix{Title: `Set "triton.cudagraphs" to False`, Preferred: true,
			Edits: []Edit{{Span: cg.edit, NewText: "False"}}})
	case "mode":
		if no := s.mode + "-no-cudagraphs"; c.modeWithoutCudagraphs(no) {
			if e, ok := c.stringEdit(s, "mode", no); ok {
				fixes = append(fixes, Fix{Title: fmt.Sprintf("Use mode=%q", no), Preferred: true, Edits: []Edit{e}})
			}
		}
		if s.optionsNode < 0 && s.modeKw.node >= 0 {
			flags := map[string]string{}
			for k, v := range c.cat.Modes[s.mode] {
				flags[k] = v
			}
			flags[keyCudagraphs] = "False"
			var parts []string
			for _, k := range sortedKeys(flags) {
				parts = append(parts, fmt.Sprintf("%q: %s", k, flags[k]))
			}
			fixes = append(fixes, Fix{
				Title:     fmt.Sprintf("Replace mode=%q with its options, CUDA graphs off", s.mode),
				Preferred: len(fixes) == 0,
				Edits:     []Edit{{Span: t.Span(s.modeKw.node), NewText: "options={" + strings.Join(parts, ", ") + "}"}},
			})
		}
	case "backend":
		// Another backend is no safe swap: say so, change nothing.
	default: // turned on outside the call: turn it off for this call
		const opt = `options={"triton.cudagraphs": False}`
		switch {
		case s.modeNode >= 0 || s.optionsNode >= 0 || s.kind == siteDerived || s.kind == siteOptimize || len(s.settings) > 0 && s.call != nil && len(s.call.splats) > 0:
		case s.call == nil: // bare @torch.compile
			end := t.EndPos(s.node)
			fixes = append(fixes, Fix{Title: "Compile without CUDA graphs", Preferred: true,
				Edits: []Edit{{Span: pybuf.Span{Start: end, End: end}, NewText: "(" + opt + ")"}}})
		case s.call.argList >= 0:
			end := t.EndPos(s.call.argList)
			end.Col-- // before ")"
			text := opt
			if len(t.CodeChildren(s.call.argList)) > 0 {
				text = ", " + opt
			}
			fixes = append(fixes, Fix{Title: "Compile without CUDA graphs", Preferred: true,
				Edits: []Edit{{Span: pybuf.Span{Start: end, End: end}, NewText: text}}})
		}
	}
	return fixes
}

// stringEdit is the edit that makes setting name of site s the string
// value: the literal where it is written (at the call, in a dict, as a
// wrapper's default), or, for a name at the compiling call, the name
// replaced by the literal (the constant may serve other calls).
func (c cudagraphDecision) stringEdit(s *compileSite, name, value string) (Edit, bool) {
	t := c.t
	st, ok := s.settings[name]
	if !ok {
		return Edit{}, false
	}
	arg := t.Unwrap(st.arg)
	if _, lit := t.PlainString(arg); lit {
		return Edit{Span: t.ContentSpan(arg), NewText: value}, true
	}
	if t.Chain(arg) != nil && (st.kw >= 0 || s.kind == siteDerived) {
		return Edit{Span: t.Span(arg), NewText: quoted(value)}, true
	}
	if _, lit := t.PlainString(st.value); lit {
		return Edit{Span: t.ContentSpan(st.value), NewText: value}, true
	}
	return Edit{}, false
}

// modeWithoutCudagraphs reports whether the target has mode and it leaves
// CUDA graphs off.
func (c cudagraphDecision) modeWithoutCudagraphs(mode string) bool {
	flags, ok := c.cat.Modes[mode]
	return ok && flags[keyCudagraphs] != "True"
}

// cudagraphDecision: whether a compile site turns CUDA graphs on (its backend, options, mode, the file's config writes, the target's environment), whether that fails in threads on the target's torch, and the fixes that turn them off. It reads and fills the checker it embeds.
type cudagraphDecision struct{ *checker }
