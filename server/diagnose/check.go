// Package diagnose finds torch config flags in a user's Python buffer, in
// every spelling, and checks how the code uses them and torch.compile
// against the target's torch: CUDA graphs reached from threads, config
// changed inside threads, unknown flags, mode and options together, values
// of the wrong type, aliases, environment variables set too late, and the
// hazards users meet in the field: outputs of CUDA graphs kept past the
// next call, config overrides one thread does not see, recompile limits
// and CUDA-graph re-recording, and compiled graphs shared by threads.
//
// Every verdict comes from the target's catalog (server/gates) and, where a
// diagnostic cites torch's own lines, from the mirrored source; nothing
// about a torch version is hard-coded. It is pure analysis: no processes,
// no LSP types.
//
// The checks read the syntax tree of the pybuf.Buffer they are handed,
// never parsing again, and cost steps in proportion to the buffer's size:
// per-node facts (enclosing function, statement) come from one pass over
// the tree, and per-site questions from one index of the references.
package diagnose

import (
	"fmt"
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Severity of a diagnostic, as LSP ranks them.
type Severity string

// The severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
	SeverityHint    Severity = "hint"
)

// Diagnostic codes. They are stable: editors and the check CLI show them
// and users may filter on them.
const (
	CodeCudagraphsInThreads = "TL001 cudagraphs-in-threads"
	CodeTreesOffInThreads   = "TL002 cudagraph-trees-off-in-threads"
	CodeConfigInThread      = "TL003 config-in-thread"
	CodeUnknownFlag         = "TL004 unknown-flag"
	CodeNoCompile           = "TL005 no-torch-compile"
	CodeModeAndOptions      = "TL006 mode-and-options"
	CodeFlagType            = "TL007 flag-type"
	CodeFlagAlias           = "TL008 flag-alias"
	CodeEnvAfterImport      = "TL009 env-after-import"
	CodeEnvForced           = "TL010 env-forced"
	CodeOutputOverwritten   = "TL011 cudagraph-output-overwritten"
	CodeConfigPerThread     = "TL012 config-per-thread"
	CodeRecompileLimit      = "TL013 recompile-limit"
	CodeSharedCallable      = "TL014 compiled-callable-shared"
	// CodeStateDictPrefixed is decided by the workspace model
	// (server/wsmodel), which follows the compiled module to the call.
	CodeStateDictPrefixed = "TL015 compiled-state-dict"
)

// Diagnostic is one finding in the user's buffer.
type Diagnostic struct {
	Code     string
	Severity Severity
	Span     pybuf.Span
	Message  string
	// Related are the lines of the target's torch the finding rests on.
	Related []Related
	Fixes   []Fix
}

// Related is a line of the target's torch tree, or of a workspace file.
type Related struct {
	File    string // relative to the site dir, slash separated
	Line    int    // 0-based
	Message string
	// Path is, for a line of the user's workspace, the file's absolute
	// local path; File is empty then.
	Path string
}

// Fix is a quick fix: edits to the user's buffer.
type Fix struct {
	Title     string
	Edits     []Edit
	Preferred bool
}

// Edit replaces Span of the buffer with NewText. The edits of one Fix do
// not overlap.
type Edit struct {
	Span    pybuf.Span
	NewText string
}

// Options tune Check.
type Options struct {
	// SiteDir is the mirrored site-packages directory of the target; the
	// checks read torch's files there to cite their lines. Empty: no
	// citations beyond the catalog's.
	SiteDir string
	// Env is the target's environment as far as it is known (variables
	// set for the interpreter torchlsp runs there).
	Env map[string]string
	// External are the thread starts the workspace model found, in other
	// files or through them, that reach compile sites of this buffer;
	// ExternalFuncs the buffer's functions they run.
	External      []ExternalStart
	ExternalFuncs []ExternalFunc
}

// ExternalFunc is a function of the buffer that the workspace model found
// run in threads started in another file.
type ExternalFunc struct {
	// Name and Line (0-based, the def's first line) name the function.
	Name string
	Line int
	// How and Path are as ExternalStart's.
	How  string
	Path []Related
}

// ExternalStart is a thread start that the workspace model
// (server/wsmodel) found reaching a compile site of the buffer through
// other files: a loader that returns the compiled model, imported by a
// server that calls it in its threads.
type ExternalStart struct {
	// Compile is the site's span, as FactsOf gave it.
	Compile pybuf.Span
	// How says where the thread starts: "threading.Thread, server.py
	// line 12".
	How  string
	Many bool
	// Path leads from the thread start to the call of the compiled code.
	Path []Related
}

const (
	inductorConfig = "torch._inductor.config"
	keyCudagraphs  = "triton.cudagraphs"
	keyTrees       = "triton.cudagraph_trees"
)

// Check runs every check on the buffer, reading the syntax tree buf was
// analysed from (no second parse) against cat, the target's catalog. The
// result is sorted by position.
func Check(buf *pybuf.Buffer, cat *gates.Catalog, opts Options) []Diagnostic {
	if buf == nil || cat == nil {
		return nil
	}
	a := analyze(buf, cat)
	c := &checker{a: a, t: a.t, cat: cat, opts: opts, files: newSiteFiles(opts.SiteDir)}
	c.run()
	return c.out
}

// run runs every check and sorts what they found by position, one
// finding per code and span.
func (c *checker) run() {
	c.confirmInPlace()
	if !c.cat.HasCompile {
		ruleTL005{c}.noCompile()
	} else {
		ruleTL006{c}.compileArgs()
		c.threads()
		ruleTL011{c}.outputsOverwritten()
		ruleTL013{c}.recompiles()
	}
	c.flagUse()
	ruleTL009{c}.envAfterImport()
	sort.SliceStable(c.out, func(i, j int) bool {
		if c.out[i].Span.Start != c.out[j].Span.Start {
			return less(c.out[i].Span.Start, c.out[j].Span.Start)
		}
		return c.out[i].Code < c.out[j].Code
	})
	type key struct {
		code string
		span pybuf.Span
	}
	seen := map[key]bool{}
	out := c.out[:0]
	for _, d := range c.out {
		k := key{d.Code, d.Span}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	c.out = out
}

// confirmInPlace drops the model.compile(...) sites, and what derives
// from them, when the target's nn.Module has no compile method.
func (c *checker) confirmInPlace() {
	c.confirmSpellings()
	a := c.a
	some := false
	for _, s := range a.sites {
		some = some || s.kind == siteInPlace
	}
	if !some || c.opts.SiteDir == "" || c.moduleCompile() >= 0 {
		return
	}
	inPlace := func(s *compileSite) bool {
		for ; s != nil; s = s.inner {
			if s.kind == siteInPlace {
				return true
			}
		}
		return false
	}
	kept := a.sites[:0]
	for _, s := range a.sites {
		if !inPlace(s) {
			kept = append(kept, s)
		}
	}
	a.sites = kept
	for name, ss := range a.siteByTarget {
		var k []*compileSite
		for _, s := range ss {
			if !inPlace(s) {
				k = append(k, s)
			}
		}
		a.siteByTarget[name] = k
	}
}

type checker struct {
	a     *analysis
	t     *tree
	cat   *gates.Catalog
	opts  Options
	files *siteFiles
	out   []Diagnostic
	ix    *refIndex // built on first use
}

// refIndex answers the questions the checks ask about the references
// once per site or per reference, each from one pass over them.
type refIndex struct {
	cudagraphsOn   *FlagRef      // the first module-level write that turns CUDA graphs on
	treesOffByCall map[int32]int // call → index of the first options entry turning cudagraph trees off
	treesOffModule int           // index of the first module-level write turning them off, or -1
	envWrites      map[envFlag]*FlagRef
	bySpan         map[pybuf.Span][]*FlagRef // environment references by span
	treeGates      []gates.Site
}

type envFlag struct {
	env  string
	flag *gates.Flag
}

func (c *checker) index() *refIndex {
	if c.ix != nil {
		return c.ix
	}
	a := c.a
	ix := &refIndex{treesOffByCall: map[int32]int{}, treesOffModule: -1,
		envWrites: map[envFlag]*FlagRef{}, bySpan: map[pybuf.Span][]*FlagRef{}, treeGates: c.conditionSites(keyTrees)}
	flag := a.lookupFlag(inductorConfig, keyCudagraphs)
	for i := range a.refs {
		a.work++
		r := &a.refs[i]
		if flag != nil && ix.cudagraphsOn == nil && r.Flag == flag && r.Write && r.fn < 0 &&
			((r.Spelling == SpellAttribute || r.Spelling == SpellGetattr) && r.Value == "True" ||
				r.Spelling == SpellEnvVar && c.envValue(r) == "1" && (a.torchAt < 0 || r.Span.Start.Line < a.torchAt)) {
			ix.cudagraphsOn = r
		}
		if r.Key == keyTrees && r.Module == inductorConfig && r.Write && r.Value == "False" && r.Flag != nil {
			switch {
			case r.Spelling == SpellOptionsKey:
				if _, ok := ix.treesOffByCall[r.call]; !ok {
					ix.treesOffByCall[r.call] = i
				}
			case r.Spelling != SpellEnvVar && r.fn < 0 && ix.treesOffModule < 0:
				ix.treesOffModule = i
			}
		}
		if r.Spelling == SpellEnvVar {
			if k := (envFlag{r.EnvVar, r.Flag}); r.Write && ix.envWrites[k] == nil {
				ix.envWrites[k] = r
			}
			ix.bySpan[r.Span] = append(ix.bySpan[r.Span], r)
		}
	}
	c.ix = ix
	return ix
}

func (c *checker) add(d Diagnostic) { c.out = append(c.out, d) }

// torchName names the target's torch in messages.
func (c *checker) torchName() string {
	if c.cat.Version != "" {
		return "torch " + c.cat.Version
	}
	return "the target's torch"
}

func (c *checker) flagRelated(f *gates.Flag, msg string) Related {
	return Related{File: f.File, Line: f.Line, Message: msg}
}

// siteSpan is the callee of a compile site (torch.compile).
func (c *checker) siteSpan(s *compileSite) pybuf.Span {
	if s.call != nil {
		return c.t.Span(s.call.calleeNode)
	}
	return c.t.Span(s.node)
}

// cudagraphState says whether a compile site runs with CUDA graphs and why.
type cudagraphState struct {
	on   bool
	why  string // for messages
	kind string // "mode", "options", "backend", "config", "env"
	span pybuf.Span
	edit pybuf.Span // for "options": the value to turn off
	ref  *FlagRef
}

// cudagraphs decides whether compile site s turns CUDA graphs on: its
// backend, its options, then its mode (as the target's mode table says),
// then settings made elsewhere in the file or the target's environment.
// Mode, options and the config reach CUDA graphs only through Inductor:
// another backend, or one the buffer does not spell, leaves them off.
func (c *checker) cudagraphs(s *compileSite) cudagraphState {
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
		entries, _ := a.builtDict(c.optionsExpr(s), s.node)
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
func (c *checker) via(s *compileSite, name string, value int32) string {
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
func (c *checker) siteName(s *compileSite) string {
	if s.call != nil {
		return oneLineText(c.t.Text(s.call.calleeNode), 40)
	}
	return oneLineText(c.t.Text(s.node), 40)
}

// cudagraphsBackend is the line of the target's cudagraphs backend that
// builds on CUDA graph trees, or -1.
func (c *checker) cudagraphsBackend() int {
	const f = "torch/_dynamo/backends/cudagraphs.py"
	if c.files.find(f, 0, "register_backend", `"cudagraphs"`) < 0 {
		return -1
	}
	return c.files.find(f, 0, "cudagraph_trees")
}

// moduleCompile is the line of nn.Module.compile in the target's torch,
// or -1.
func (c *checker) moduleCompile() int {
	return c.files.findStatement("torch/nn/modules/module.py", 0, "def", "def compile(")
}

// envValue is the literal string an environment write sets, or "".
func (c *checker) envValue(r *FlagRef) string {
	if r.valueNode < 0 {
		return ""
	}
	v, _ := c.t.PlainString(r.valueNode)
	return v
}

// treesOff returns the module-level write that turns cudagraph trees off,
// or the options entry of site s that does, whichever comes first.
func (c *checker) treesOff(s *compileSite) *FlagRef {
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

// threads runs the checks that need to know what runs in other threads.
func (c *checker) threads() {
	a := c.a
	if len(a.starts) == 0 && len(a.backwardStarts) == 0 && len(c.opts.External) == 0 && len(c.opts.ExternalFuncs) == 0 {
		return
	}
	rc := (threadFacts{a}).threadReach()
	c.externalStarts(rc)
	c.externalFuncs(rc)
	field, looked := -1, false
	var hot []*compileSite // compiled code with CUDA graphs run in threads
	for _, s := range a.sites {
		a.work++
		st, ok := rc.sites[s]
		if !ok {
			continue
		}
		cg := c.cudagraphs(s)
		if !cg.on {
			continue
		}
		hot = append(hot, s)
		ruleTL001{c}.cudagraphsInThreads(s, st, cg)
		if !looked {
			field, looked = ruleTL014{c}.sharedCallable(), true
		}
		if field >= 0 {
			ruleTL014{c}.sharedCallableInThreads(s, st, cg, rc, field)
		}
	}
	if len(hot) > 0 {
		ruleTL002{c}.treesOffInThreads(hot, rc)
	}
	writes := false
	for i := range a.refs {
		if a.refs[i].Write {
			writes = true
			break
		}
	}
	if !writes {
		return
	}
	if ctx := (ruleTL012{c}).perThreadConfig(); ctx >= 0 {
		// Overrides are per thread: one set in a thread stays there, and
		// one set elsewhere does not reach it.
		ruleTL012{c}.configNotInThreads(rc, ctx)
		if len(a.backwardStarts) > 0 {
			ruleTL012{c}.configNotInThreads((threadFacts{a}).reachOf(a.backwardStarts), ctx)
		}
		return
	}
	ruleTL003{c}.configInThreads(rc)
}

// threadHazard says whether compiled code of site s with CUDA graphs on
// fails or goes wrong in threads on the target. The failure this rests
// on is cudagraph_trees' TLS lookup asserting that the calling thread has
// the state (get_obj): a torch whose trees create that state per thread
// has no such assert, and no hazard unless trees are off.
func (c *checker) threadHazard(s *compileSite) bool {
	return c.treesOff(s) != nil || len(c.index().treeGates) == 0 ||
		c.files.findStatement(fileTrees, 0, "assert", "_is_key_in_tls") >= 0
}

// where says where a thread start is: "threading.Thread, line 12", or
// what the workspace model said of a start in another file.
func (c *checker) where(st threadStart) string {
	if st.ext != nil {
		return st.ext.How
	}
	return fmt.Sprintf("%s, line %d", st.how, c.t.StartPos(st.node).Line+1)
}

// runBy names a start for "the code run by ...": "threading.Thread
// (line 12)".
func (c *checker) runBy(st threadStart) string {
	if st.ext != nil {
		return st.ext.How
	}
	return fmt.Sprintf("%s (line %d)", st.how, c.t.StartPos(st.node).Line+1)
}

// externalStarts adds the starts the workspace model found to what the
// buffer's own starts reach.
func (c *checker) externalStarts(rc reach) {
	if len(c.opts.External) == 0 {
		return
	}
	bySpan := map[pybuf.Span]*compileSite{}
	for _, s := range c.a.sites {
		bySpan[c.siteSpan(s)] = s
	}
	for i := range c.opts.External {
		ext := &c.opts.External[i]
		s, ok := bySpan[ext.Compile]
		if !ok {
			continue
		}
		if _, ok := rc.sites[s]; !ok {
			rc.sites[s] = threadStart{node: -1, how: ext.How, within: -1, param: -1, fn: -1, many: ext.Many, ext: ext}
		}
		rc.starts[s]++
	}
}

// externalFuncs adds the functions the workspace model found run in
// threads of other files to what the buffer's own starts reach.
func (c *checker) externalFuncs(rc reach) {
	for i := range c.opts.ExternalFuncs {
		f := &c.opts.ExternalFuncs[i]
		for _, def := range c.a.funcs[f.Name] {
			if c.t.StartPos(def).Line != f.Line {
				continue
			}
			if _, ok := rc.funcs[def]; !ok {
				rc.funcs[def] = threadStart{node: -1, how: f.How, within: -1, param: -1, fn: -1,
					ext: &ExternalStart{How: f.How, Path: f.Path}}
			}
		}
	}
}

// conditionSites are the sites where a flag decides a branch.
func (c *checker) conditionSites(key string) []gates.Site {
	var out []gates.Site
	for _, s := range c.cat.Sites(key) {
		if s.InCondition && s.Kind == gates.KindRead {
			out = append(out, s)
		}
	}
	return out
}

// modeLine finds the mode's entry in list_mode_options.
func (c *checker) modeLine(mode string) int {
	const f = "torch/_inductor/__init__.py"
	def := c.files.find(f, 0, "def list_mode_options")
	if def < 0 {
		return -1
	}
	return c.files.find(f, def, fmt.Sprintf("%q:", mode))
}

// cudagraphsOffFixes are the edits that compile s without CUDA graphs.
func (c *checker) cudagraphsOffFixes(s *compileSite, cg cudagraphState) []Fix {
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
func (c *checker) stringEdit(s *compileSite, name, value string) (Edit, bool) {
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
func (c *checker) modeWithoutCudagraphs(mode string) bool {
	flags, ok := c.cat.Modes[mode]
	return ok && flags[keyCudagraphs] != "True"
}

// line returns line i of the buffer without its ending.
func (c *checker) line(i int) string { return c.t.line(i) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// deleteArg deletes one argument of a call with its separating comma.
func (c *checker) deleteArg(call *callInfo, arg int32) Edit {
	t := c.t
	args := t.CodeChildren(call.argList)
	for i, x := range args {
		if x != arg {
			continue
		}
		switch {
		case i > 0:
			return Edit{Span: pybuf.Span{Start: t.EndPos(args[i-1]), End: t.EndPos(x)}}
		case i+1 < len(args):
			return Edit{Span: pybuf.Span{Start: t.StartPos(x), End: t.StartPos(args[i+1])}}
		}
	}
	return Edit{Span: t.Span(arg)}
}
