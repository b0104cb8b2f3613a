package wsmodel

import (
	"fmt"

	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"

	"github.com/torchlsp/torchlsp/server/diagnose"
)

// Verdicts are what the model decides for the checks, by file path.
type Verdicts struct {
	// External are, for the file of a compile site, the thread starts
	// that reach it through other files (diagnose.Options.External).
	External map[string][]diagnose.ExternalStart
	// Findings are, by file, what the model's own rules find there: TL001
	// at a call of compiled code that threads reach through other files,
	// TL015 at a compiled module's state_dict().
	Findings map[string][]diagnose.Diagnostic
	// Funcs are, for a file, its functions that threads started in other
	// files run (diagnose.Options.ExternalFuncs): a config write there
	// changes every thread's (TL003).
	Funcs map[string][]diagnose.ExternalFunc
	// Threads are, for a file that writes torch's config, the starts of
	// linked files whose threads run compiled code
	// (diagnose.Options.ExternalThreads): TL012 on a torch that keeps
	// overrides per thread.
	Threads map[string][]diagnose.ExternalThreads
	// Calls are, for a file, its calls of compiled code made in another
	// file (diagnose.Options.ExternalCalls): TL011, TL016 and TL017
	// judge them as calls of that code. The model fills it per file on
	// first ask: read it through CallsOf.
	Calls map[string][]diagnose.ExternalCall
	// lazy finds Calls (nil for Verdicts made by hand).
	lazy *lazyCalls
}

// For fills what a file's check reads of the verdicts into its options:
// the starts, functions and threads of other files that reach it, and
// its calls of compiled code made in other files.
func (v *Verdicts) For(path string, opts diagnose.Options) diagnose.Options {
	opts.External, opts.ExternalFuncs, opts.ExternalThreads = v.External[path], v.Funcs[path], v.Threads[path]
	opts.ExternalCalls = v.CallsOf(path)
	return opts
}

// maxCallDepth bounds how many functions deep a path from a thread start
// is followed.
const maxCallDepth = 8

// maxPathsPerStart bounds the compiled calls reported for one start.
const maxPathsPerStart = 16

// Verdicts computes, once per version of the model, every path from a
// thread start to a call of compiled code with a threading hazard that
// crosses files.
func (m *Model) Verdicts() *Verdicts {
	m.link()
	m.verdictOnce.Do(func() { m.verdict = m.computeVerdicts() })
	return m.verdict
}

// poolStarts are the starts one file's own check cannot see: a pool's
// method called on a value that only the model knows is a thread pool (a
// parameter another module passes a ThreadPoolExecutor, a pool kept by
// another module), where the file has no start of its own at that line.
func (r *resolver) poolStarts(f *File) []Start {
	var out []Start
	for i := range f.Calls {
		c := &f.Calls[i]
		recv, method, ok := cutLast(c.Callee.Text)
		isPool, many := diagnose.PoolMethod(method)
		if c.Callee.Kind != ExprName || !ok || !isPool || len(c.Args) == 0 || c.Args[0].Kind == 0 {
			continue
		}
		if slices.ContainsFunc(f.Starts, func(s Start) bool { return s.Line == c.Line() }) {
			continue
		}
		for _, v := range r.eval(f, c.Scope, Expr{Kind: ExprName, Text: recv, Line: c.Line()}, 0) {
			if v.kind == valExternalInstance && diagnose.ThreadPool(v.qual) {
				out = append(out, Start{Scope: c.Scope, How: recv + "." + method, Line: c.Line(), Span: c.Span,
					Many: many, Targets: []Expr{c.Args[0]}})
				break
			}
		}
	}
	return out
}

// cutLast splits a.b.c into a.b and c.
func cutLast(text string) (string, string, bool) {
	i := strings.LastIndexByte(text, '.')
	if i <= 0 {
		return "", "", false
	}
	return text[:i], text[i+1:], true
}

// hit is one path from a thread start to a call of compiled code.
type hit struct {
	start   *Start
	from    *File
	steps   []step // the functions on the way, in order
	call    *Call  // nil when the start runs the compiled code itself
	callIn  *File
	compile value
}

// step is one function a path goes through, and the call it leaves by.
type step struct {
	file *File
	call *Call
}

func (m *Model) computeVerdicts() *Verdicts {
	v := &Verdicts{External: map[string][]diagnose.ExternalStart{}, Findings: map[string][]diagnose.Diagnostic{},
		Funcs: map[string][]diagnose.ExternalFunc{}, Threads: map[string][]diagnose.ExternalThreads{},
		Calls: map[string][]diagnose.ExternalCall{}}
	seenFunc := map[*Def]bool{}
	r := newResolver(m)
	paths := make([]string, 0, len(m.files))
	for p := range m.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	seenCall := map[string]map[pybuf.Pos]bool{}
	var runs []threadRun
	for _, p := range paths {
		f := m.files[p]
		starts := f.Starts
		if more := r.poolStarts(f); len(more) > 0 {
			starts = append(append([]Start(nil), f.Starts...), more...)
		}
		for i := range starts {
			st := &starts[i]
			hits, reached := r.reach(f, st)
			if len(hits) > 0 {
				runs = append(runs, threadRun{from: f, start: st, first: hits[0], reached: reached})
			}
			for _, fn := range reached {
				if seenFunc[fn.def] || fn.file == f && !crosses(f, fn.steps) {
					continue
				}
				seenFunc[fn.def] = true
				name := fn.def.Qual[strings.LastIndexByte(fn.def.Qual, '.')+1:]
				v.Funcs[fn.file.Path] = append(v.Funcs[fn.file.Path], diagnose.ExternalFunc{
					Name: name, Line: fn.def.Line,
					How:  fmt.Sprintf("%s in %s, line %d", st.How, m.rel(f.Path), st.Line+1),
					Path: m.pathTo(f, st, fn.steps),
				})
			}
			for _, h := range hits {
				c := h.compile.file.Compiles[h.compile.compile]
				if !c.CUDAGraphs || !c.ThreadHazard || !h.crossesFiles() {
					continue
				}
				path := m.pathOf(h)
				cf := h.compile.file.Path
				v.External[cf] = append(v.External[cf], diagnose.ExternalStart{
					Compile: c.Span, How: fmt.Sprintf("%s in %s, line %d", h.start.How, m.rel(h.from.Path), h.start.Line+1),
					Many: h.start.Many, Path: path,
				})
				// The place that runs the compiled code in the threads: the
				// call, or the start that is handed it itself.
				at, in, what := pybuf.Span{}, (*File)(nil), "this call runs compiled code with CUDA graphs (%s, compiled at %s:%d) in other threads"
				switch {
				case h.call != nil:
					at, in = h.call.Span, h.callIn
				case h.start.Span != pybuf.Span{}:
					at, in, what = h.start.Span, h.from, "this hands compiled code with CUDA graphs (%s, compiled at %s:%d) to other threads"
				default:
					continue
				}
				if seenCall[in.Path] == nil {
					seenCall[in.Path] = map[pybuf.Pos]bool{}
				}
				if seenCall[in.Path][at.Start] {
					continue
				}
				seenCall[in.Path][at.Start] = true
				v.Findings[in.Path] = append(v.Findings[in.Path], diagnose.Diagnostic{
					Code: diagnose.CodeCudagraphsInThreads, Severity: diagnose.SeverityError, Span: at,
					Message: fmt.Sprintf(what, c.Why, m.rel(cf), c.Line()+1) + fmt.Sprintf(" (%s in %s, line %d): the target's torch fails there or shares CUDA graph buffers between threads (see the diagnostic at the compile for torch's lines and the fixes); turn CUDA graphs off for threaded use, or make every compiled call from one thread",
						h.start.How, m.rel(h.from.Path), h.start.Line+1),
					Related: path,
				})
			}
		}
	}
	m.stateDicts(r, paths, v)
	m.configThreads(runs, paths, v)
	v.lazy = &lazyCalls{m: m, r: r, done: map[string]bool{}}
	return v
}

// crossesFiles says the path involves more than one file: what one file
// shows, its own check reports.
func (h hit) crossesFiles() bool {
	files := map[*File]bool{h.from: true, h.compile.file: true}
	if h.callIn != nil {
		files[h.callIn] = true
	}
	for _, s := range h.steps {
		files[s.file] = true
	}
	return len(files) > 1
}

// crosses says whether a path from a start in f goes through another
// file.
func crosses(f *File, steps []step) bool {
	for _, s := range steps {
		if s.file != f {
			return true
		}
	}
	return false
}

// pathTo lists the start and each call on the way as related
// information.
func (m *Model) pathTo(from *File, st *Start, steps []step) []diagnose.Related {
	out := []diagnose.Related{m.related(from, st.Line, "the thread starts here: "+st.How)}
	for _, s := range steps {
		out = append(out, m.related(s.file, s.call.Line(), "then "+s.call.Text()))
	}
	return out
}

func (m *Model) related(f *File, line int, msg string) diagnose.Related {
	return diagnose.Related{Path: f.Path, Line: line, Message: fmt.Sprintf("%s:%d: %s", m.rel(f.Path), line+1, msg)}
}

// pathOf lists a path as related information: the start, each call on
// the way, the compiled call and the compile.
func (m *Model) pathOf(h hit) []diagnose.Related {
	out := m.pathTo(h.from, h.start, h.steps)
	add := func(f *File, line int, msg string) { out = append(out, m.related(f, line, msg)) }
	if h.call != nil {
		add(h.callIn, h.call.Line(), "calls the compiled code: "+h.call.Text())
	}
	c := h.compile.file.Compiles[h.compile.compile]
	what := "compiled here"
	if c.Why != "" {
		what += " (" + c.Why + ")"
	}
	add(h.compile.file, c.Line(), what)
	return out
}

// rel names a file for a message: relative to the root holding it.
func (m *Model) rel(path string) string {
	for _, root := range m.roots {
		if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
	}
	return filepath.Base(path)
}

// frame is a function to visit and how the path came to it.
type frame struct {
	qual  string
	steps []step
}

// reach follows calls from a start, across files, to the calls of
// compiled code, breadth first, each function once per start.
func (r *resolver) reach(f *File, st *Start) ([]hit, []reachedFunc) {
	var hits []hit
	var reached []reachedFunc
	var queue []frame
	seen := map[string]bool{}
	visit := func(vals []value, steps []step, call *Call, in *File) {
		for _, v := range vals {
			switch v.kind {
			case valCompiled:
				if len(hits) < maxPathsPerStart {
					hits = append(hits, hit{start: st, from: f, steps: steps, call: call, callIn: in, compile: v})
				}
			case valFunc:
				if !seen[v.qual] && len(steps) < maxCallDepth {
					seen[v.qual] = true
					queue = append(queue, frame{qual: v.qual, steps: steps})
				}
			}
		}
	}
	for _, e := range st.Targets {
		visit(r.eval(f, st.Scope, e, 0), nil, nil, nil)
	}
	for _, e := range st.Lambda {
		visit(r.eval(f, st.Scope, e, 0), nil, nil, nil)
	}
	for len(queue) > 0 && r.work <= maxWork {
		fr := queue[0]
		queue = queue[1:]
		d, ok := r.m.defs[fr.qual]
		if !ok || d.def.IsClass {
			continue
		}
		reached = append(reached, reachedFunc{file: d.file, def: d.def, steps: fr.steps})
		for _, c := range d.file.index().calls[d.def.Qual] {
			vals := r.eval(d.file, d.def.Qual, c.Callee, 0)
			var compiled, funcs []value
			for _, v := range vals {
				switch v.kind {
				case valCompiled:
					compiled = append(compiled, v)
				case valInstance:
					// Calling an object runs its __call__, or an
					// nn.Module's forward through Module.__call__.
					for _, name := range []string{"__call__", "forward"} {
						for _, m := range r.classMember(v, name, 0, 0) {
							if m.kind == valCompiled {
								compiled = append(compiled, m)
							} else {
								funcs = append(funcs, m)
							}
						}
					}
				default:
					funcs = append(funcs, v)
				}
			}
			visit(compiled, fr.steps, c, d.file)
			if len(funcs) > 0 {
				next := append(append([]step(nil), fr.steps...), step{file: d.file, call: c})
				visit(funcs, next, nil, nil)
			}
		}
	}
	return hits, reached
}

// reachedFunc is a function a start runs, and the way it got there.
type reachedFunc struct {
	file  *File
	def   *Def
	steps []step
}
