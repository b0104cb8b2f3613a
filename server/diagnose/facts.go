package diagnose

import (
	"strings"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Facts is what one buffer tells the workspace model (server/wsmodel),
// which links the files of a workspace: where the buffer compiles, and
// with what settings as the target's torch reads them, and where it
// starts threads. Nodes are of the buffer's tree; the model turns them
// into plain data.
type Facts struct {
	Compiles     []CompileFact
	Starts       []StartFact
	ConfigWrites []ConfigWriteFact
}

// ConfigWriteFact is a write of one of torch's config flags (an
// assignment, setattr or patch; not a compile's options key or an
// environment variable).
type ConfigWriteFact struct {
	// Flag is the flag's full name (torch._dynamo.config.recompile_limit);
	// Alias the name it is an alias of, if any.
	Flag, Alias string
	// Func is the 0-based line of the def of the innermost function
	// holding the write, or -1 at module level.
	Func int
}

// CompileFact is one compile site of the buffer.
type CompileFact struct {
	// Node is the compiling call, or a decorator's expression.
	Node int32
	// Span is where a diagnostic on the site stands (torch.compile as
	// written); Options.External names sites by it.
	Span pybuf.Span
	// CUDAGraphs says the compiled code uses CUDA graphs (its mode,
	// options, backend, or a config write of the file turn them on);
	// Why says how, as TL001's message does.
	CUDAGraphs bool
	Why        string
	// ThreadHazard says the target's torch fails (or computes wrong
	// results) when this compiled code runs in several threads: CUDA
	// graphs on, and the target's cudagraph_trees keeps its state in one
	// thread, or trees are off so that legacy graphs share buffers.
	ThreadHazard bool
	// Derived is set for a call of a wrapper or partial of torch.compile
	// that this buffer defines: the wrapper's own site is a fact too.
	Derived bool
	// Decorates is set when the site is a decorator: it compiles the
	// function it decorates.
	Decorates bool
	// OrigModLine is, for a site that returns a new object wrapping what
	// it compiles (torch.compile(m), not m.compile()), the 0-based line
	// of the target's eval_frame.py where OptimizedModule keeps the
	// module as its submodule _orig_mod (so the wrapper's state_dict keys
	// start with "_orig_mod."); -1 when the target's torch has none.
	OrigModLine int
	// Module says the site compiles a module, and Forward a module's
	// forward, whose parameters require grad as far as the buffer tells
	// (it turns no requires_grad off): its forwards with grad mode on
	// leave backwards pending (TL016).
	Module, Forward bool
}

// StartFact is one place the buffer runs a callable in another thread.
type StartFact struct {
	// Node is the call that starts it, or the class of a Thread subclass.
	Node int32
	How  string
	// Exprs are the callable expressions it runs; Class is, for a start
	// that runs methods of a class (a Thread subclass's run, a request
	// handler's handle or do_GET, a servicer's methods), the class (else
	// -1), and Methods their names.
	Exprs   []int32
	Class   int32
	Methods []string
	Many    bool
}

// FactsOf reads the facts of a buffer against cat, the target's catalog,
// from the same analysis Check makes.
func FactsOf(buf *pybuf.Buffer, cat *gates.Catalog, opts Options) Facts {
	if buf == nil || cat == nil || !cat.HasCompile {
		return Facts{}
	}
	a := analyze(buf, cat)
	c := &checker{a: a, t: a.t, cat: cat, opts: opts, files: newSiteFiles(opts.SiteDir)}
	c.confirmInPlace()
	var f Facts
	origMod := c.origModLine()
	frozen := len(a.sites) > 0 && (ruleTL016{c}).freezesGrad()
	for _, s := range a.sites {
		cg := (cudagraphDecision{c}).cudagraphs(s)
		orig := -1
		if s.kind != siteInPlace && s.call != nil && a.t.Kind(a.t.Parent(s.node)) != syntax.KindDecorator {
			orig = origMod
		}
		f.Compiles = append(f.Compiles, CompileFact{
			Node: s.node, Span: c.siteSpan(s), CUDAGraphs: cg.on, Why: cg.why,
			ThreadHazard: cg.on && (cudagraphDecision{c}).threadHazard(s),
			Derived:      s.kind == siteDerived, Decorates: s.call == nil || a.t.Kind(a.t.Parent(s.node)) == syntax.KindDecorator,
			OrigModLine: orig,
		})
		if why := (ruleTL016{c}).moduleSite(&hotName{site: s}); why != "" && !frozen {
			last := &f.Compiles[len(f.Compiles)-1]
			last.Module, last.Forward = !strings.HasPrefix(why, itForward), strings.HasPrefix(why, itForward)
		}
	}
	for _, st := range a.starts {
		sf := StartFact{Node: st.node, How: st.how, Exprs: st.exprs, Class: st.within, Many: st.many}
		if st.within >= 0 {
			sf.Methods = st.targets
		}
		f.Starts = append(f.Starts, sf)
	}
	for i := range a.refs {
		r := &a.refs[i]
		if !r.Write || r.Flag == nil || r.Spelling == SpellOptionsKey || r.Spelling == SpellEnvVar {
			continue
		}
		w := ConfigWriteFact{Flag: r.Module + "." + r.Key, Alias: r.Flag.Alias, Func: -1}
		if r.fn >= 0 {
			w.Func = a.t.StartPos(r.fn).Line
		}
		f.ConfigWrites = append(f.ConfigWrites, w)
	}
	return f
}

// fileEvalFrame is where torch keeps Dynamo's entry points and the module
// torch.compile returns for a module.
const fileEvalFrame = "torch/_dynamo/eval_frame.py"

// origModLine is the line of the target's OptimizedModule that keeps the
// compiled module as its submodule _orig_mod, or -1.
func (c *checker) origModLine() int {
	class := c.files.findStatement(fileEvalFrame, 0, "class", "class OptimizedModule")
	if class < 0 {
		return -1
	}
	return c.files.find(fileEvalFrame, class, "self._orig_mod = mod")
}

// ThreadPool says whether qual names a thread pool of the catalogue
// (concurrent.futures.ThreadPoolExecutor, multiprocessing's ThreadPool),
// and PoolMethod whether method runs its first argument in such a pool's
// threads, several inputs at once when many: the workspace model asks
// them of pools only it can see.
func ThreadPool(qual string) bool { return executorTypes[qual] }

// PoolMethod: see ThreadPool.
func PoolMethod(method string) (ok, many bool) { return poolMethods[method], manyMethods[method] }
