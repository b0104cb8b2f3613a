package wsmodel

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/torchlsp/torchlsp/server/diagnose"
)

// maxCompilesPerCall bounds the compile sites of other files one call is
// named a call of.
const maxCompilesPerCall = 4

// siteRef names a compile site: its file and index in File.Compiles.
type siteRef struct {
	file    *File
	compile int
}

// lazyCalls computes Verdicts.Calls one file at a time, when a file's
// check first asks (Verdicts.CallsOf): an editor checks its open
// documents, not the workspace, and resolving every callee of a large
// workspace (130,000 calls in diffusers) on each edit doubled the time
// of its verdicts. `torchlsp check DIR` asks for every file, at the cost
// the whole pass had.
type lazyCalls struct {
	mu sync.Mutex // guards the fields below and the Verdicts' Calls
	m  *Model
	r  *resolver // shared with the paths' pass: its memo is theirs
	// done are the files whose calls are in Calls.
	done map[string]bool
	// calledIn are, by compile site, the files that call what it made;
	// made by one pass over the workspace the first time a file with a
	// capture needs it (ExternalCall.CalledElsewhere).
	calledIn map[siteRef]map[*File]bool
}

// CallsOf are a file's calls of compiled code made in other files
// (diagnose.Options.ExternalCalls), found on first ask.
func (v *Verdicts) CallsOf(path string) []diagnose.ExternalCall {
	if v.lazy == nil {
		return v.Calls[path]
	}
	l := v.lazy
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done[path] {
		l.done[path] = true
		if f, ok := l.m.files[path]; ok {
			if calls := l.compiledCalls(f); len(calls) > 0 {
				v.Calls[path] = calls
			}
		}
	}
	return v.Calls[path]
}

// compiledCalls finds the calls of f whose callee the resolver says
// holds compiled code made in another file (a loader's return, another
// module's global, an attribute set there, what a caller passes), with
// the compile's facts: TL011, TL016 and TL017 judge them as they judge
// calls of the file's own compiled values. A call in the compile's own
// file is that file's check's. Each file has a budget of its own
// (maxWork).
func (l *lazyCalls) compiledCalls(f *File) []diagnose.ExternalCall {
	m, r := l.m, l.r
	r.work = 0
	type found struct {
		call *Call
		site siteRef
	}
	var all []found
	for i := range f.Calls {
		c := &f.Calls[i]
		n := 0
		for _, val := range r.eval(f, c.Scope, c.Callee, 0) {
			if val.kind == valCompiled && val.file != f && n < maxCompilesPerCall {
				all = append(all, found{call: c, site: siteRef{val.file, val.compile}})
				n++
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	var out []diagnose.ExternalCall
	for _, fd := range all {
		site := fd.site.file.Compiles[fd.site.compile]
		elsewhere := false
		if f.Captures {
			for g := range l.callers()[fd.site] {
				elsewhere = elsewhere || g != f
			}
		}
		name := fd.call.Callee.Text
		if fd.call.Callee.Kind == ExprSubscript {
			name += "[…]"
		}
		what := "compiled here"
		if site.Why != "" {
			what += " (" + site.Why + ")"
		}
		at := m.rel(fd.site.file.Path) + ":" + strconv.Itoa(site.Line()+1)
		out = append(out, diagnose.ExternalCall{
			Span: fd.call.Span, Name: name,
			CUDAGraphs: site.CUDAGraphs, Why: site.Why, Module: site.Module, Forward: site.Forward,
			CompilePath: fd.site.file.Path, Compile: site.Span, At: at,
			CalledElsewhere: elsewhere,
			Path:            []diagnose.Related{m.related(fd.site.file, site.Line(), what)},
		})
	}
	return out
}

// callers are, by compile site, the files of the workspace that call
// what it made: one pass over every call, made once. l.mu held.
func (l *lazyCalls) callers() map[siteRef]map[*File]bool {
	if l.calledIn != nil {
		return l.calledIn
	}
	l.calledIn = map[siteRef]map[*File]bool{}
	paths := make([]string, 0, len(l.m.files))
	for p := range l.m.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	l.r.work = 0
	for _, p := range paths {
		f := l.m.files[p]
		for i := range f.Calls {
			c := &f.Calls[i]
			for _, val := range l.r.eval(f, c.Scope, c.Callee, 0) {
				if val.kind != valCompiled {
					continue
				}
				s := siteRef{val.file, val.compile}
				if l.calledIn[s] == nil {
					l.calledIn[s] = map[*File]bool{}
				}
				l.calledIn[s][f] = true
			}
		}
	}
	return l.calledIn
}

// captureCalls are what a manual CUDA graph capture is called by
// (TL017 judges the first calls of compiled code inside one).
var captureCalls = map[string]bool{
	"torch.cuda.graph": true, "torch.cuda.graphs.graph": true,
	"torch.cuda.make_graphed_callables": true, "torch.cuda.graphs.make_graphed_callables": true,
}

// hasCapture says whether f calls a manual CUDA graph capture, by any
// name its imports give it (before the calls of other packages are
// dropped).
func hasCapture(f *File) bool {
	for i := range f.Calls {
		text := f.Calls[i].Callee.Text
		head, rest, _ := strings.Cut(text, ".")
		if q, ok := f.Imports[head]; ok {
			text = q
			if rest != "" {
				text += "." + rest
			}
		}
		if captureCalls[text] {
			return true
		}
	}
	return false
}
