package wsmodel

import (
	"strconv"

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

// compiledCalls finds, in every file, the calls whose callee the
// resolver says holds compiled code made in another file (a loader's
// return, another module's global, an attribute set there, what a
// caller passes), and hands each file's check those calls with the
// compile's facts (Verdicts.Calls): TL011, TL016 and TL017 judge them as
// they judge calls of the file's own compiled values. A call in the
// compile's own file is that file's check's. It reads r's memo, which
// the threading paths filled, and has a budget of its own (maxWork): it
// runs last, and what it resolves is bounded apart from them.
func (m *Model) compiledCalls(r *resolver, paths []string, v *Verdicts) {
	some := false
	for _, f := range m.files {
		some = some || len(f.Compiles) > 0
	}
	if !some {
		return
	}
	r.work = 0
	type found struct {
		in   *File
		call *Call
		site siteRef
	}
	var all []found
	// calledIn are, by compile site, the files that call what it made.
	calledIn := map[siteRef]map[*File]bool{}
	for _, p := range paths {
		f := m.files[p]
		for i := range f.Calls {
			c := &f.Calls[i]
			n := 0
			for _, val := range r.eval(f, c.Scope, c.Callee, 0) {
				if val.kind != valCompiled {
					continue
				}
				s := siteRef{val.file, val.compile}
				if calledIn[s] == nil {
					calledIn[s] = map[*File]bool{}
				}
				calledIn[s][f] = true
				if val.file != f && n < maxCompilesPerCall {
					all = append(all, found{in: f, call: c, site: s})
					n++
				}
			}
		}
	}
	for _, fd := range all {
		site := fd.site.file.Compiles[fd.site.compile]
		elsewhere := false
		for g := range calledIn[fd.site] {
			elsewhere = elsewhere || g != fd.in
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
		v.Calls[fd.in.Path] = append(v.Calls[fd.in.Path], diagnose.ExternalCall{
			Span: fd.call.Span, Name: name,
			CUDAGraphs: site.CUDAGraphs, Why: site.Why, Module: site.Module, Forward: site.Forward,
			CompilePath: fd.site.file.Path, Compile: site.Span, At: at,
			CalledElsewhere: elsewhere,
			Path:            []diagnose.Related{m.related(fd.site.file, site.Line(), what)},
		})
	}
}
