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
	"sort"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
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
	// CodePendingBackward and CodeFirstCallInCapture are decided in one
	// file, from the target's CUDA graph sources.
	CodePendingBackward    = "TL016 cudagraph-pending-backward"
	CodeFirstCallInCapture = "TL017 compiled-first-call-in-capture"
	// CodeCompiledUnderCheckpoint is decided from the target's
	// torch/utils/checkpoint.py (its recomputation check).
	CodeCompiledUnderCheckpoint = "TL019 compiled-under-checkpoint"
	// CodeCompiledFreeThreaded is decided by the target's interpreter
	// (Options.FreeThreaded), not by a line of its torch.
	CodeCompiledFreeThreaded = "TL018 compiled-free-threaded"
	// CodeGradsAccumulated is decided in one file, from the target's
	// cudagraph_trees.py (the check TL011 cites).
	CodeGradsAccumulated = "TL020 cudagraph-grad-accumulated"
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
	// ExternalThreads are thread starts of other files whose threads run
	// compiled code, in files linked to this one by imports: a config
	// override this buffer makes outside those threads does not reach
	// them on a torch that keeps overrides per thread (TL012).
	ExternalThreads []ExternalThreads
	// ExternalCalls are calls of the buffer whose callee the workspace
	// model found holding compiled code made in another file (a loader's
	// return, another module's global): TL011, TL016 and TL017 read them
	// as calls of that compiled code.
	ExternalCalls []ExternalCall
	// FreeThreaded says the target's Python is built without the GIL
	// (sysconfig's Py_GIL_DISABLED is 1) and ran without it when the
	// helper started there (remote.Hello.FreeThreaded): threads run
	// Python at once.
	FreeThreaded bool
}

// ExternalThreads is a thread start the workspace model found running
// compiled code, somewhere in the files this buffer imports or is
// imported by.
type ExternalThreads struct {
	// How and Path are as ExternalStart's.
	How  string
	Path []Related
	// Sets are the config flags the threads set themselves
	// ("torch._dynamo.config.recompile_limit"): a write of one of them
	// outside the threads is matched there.
	Sets []string
}

// ExternalCall is a call of the buffer that the workspace model
// (server/wsmodel) found running compiled code made in another file:
// model = load(); model(x), where load returns torch.compile(net, …).
type ExternalCall struct {
	// Span is the callee as written, and Name its text: the call is
	// the buffer's call whose callee has both.
	Span pybuf.Span
	Name string
	// CUDAGraphs and Why are the compile's (CompileFact's); Module and
	// Forward too: the compiled value is a module, or a module's forward,
	// whose parameters require grad.
	CUDAGraphs      bool
	Why             string
	Module, Forward bool
	// CompilePath and Compile are the compile site's file (absolute,
	// local) and span: calls of one compiled value share them. At names
	// the site in messages ("model.py:7").
	CompilePath string
	Compile     pybuf.Span
	At          string
	// CalledElsewhere says the model found the compiled value called in
	// another file too (a warm-up, for all the buffer can tell).
	CalledElsewhere bool
	// Path leads from the call to the compile, as related information.
	Path []Related
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
		(threadRules{c}).threads()
		ruleTL011{c}.outputsOverwritten()
		ruleTL013{c}.recompiles()
		ruleTL016{c}.pendingBackwards()
		ruleTL020{c}.gradsAccumulated()
		ruleTL017{c}.firstCallsInCapture()
		ruleTL019{c}.compiledUnderCheckpoint()
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
	if !some || c.opts.SiteDir == "" || (cudagraphDecision{c}).moduleCompile() >= 0 {
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
	// hot are the calls of compiled code with CUDA graphs, with what
	// TL011 learns of them, made once for the rules that read them
	// (hotCalls); nil before.
	hot *tl011
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
				r.Spelling == SpellEnvVar && (cudagraphDecision{c}).envValue(r) == "1" && (a.torchAt < 0 || r.Span.Start.Line < a.torchAt)) {
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
