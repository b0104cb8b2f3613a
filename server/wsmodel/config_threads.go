package wsmodel

import (
	"fmt"

	"github.com/torchlsp/torchlsp/server/diagnose"
)

// configThreads gives each file that writes torch's config the thread
// starts of the workspace whose threads run compiled code, when the two
// are linked by imports (diagnose.Options.ExternalThreads): on a torch
// that keeps config overrides per thread (TL012, decided by diagnose
// from the target's _config_module.py), a write made on the main thread
// in train.py does not reach the threads server.py starts to run the
// model that model.py compiles.
//
// Linked means the writing file is on the path, imports (transitively)
// a file of the path, or is imported by the file that starts the
// threads: its module-level code runs in the same process before or
// while the threads run. Two scripts of one repository that share
// nothing are not linked.
func (m *Model) configThreads(runs []threadRun, paths []string, v *Verdicts) {
	var writers []*File
	for _, p := range paths {
		if f := m.files[p]; len(f.ConfigWrites) > 0 {
			writers = append(writers, f)
		}
	}
	if len(writers) == 0 || len(runs) == 0 {
		return
	}
	closures := map[*File]map[*File]bool{}
	closure := func(f *File) map[*File]bool {
		if c, ok := closures[f]; ok {
			return c
		}
		c := m.importClosure(f)
		closures[f] = c
		return c
	}
	for _, run := range runs {
		h := run.first
		onPath := map[*File]bool{run.from: true, h.compile.file: true}
		if h.callIn != nil {
			onPath[h.callIn] = true
		}
		for _, s := range h.steps {
			onPath[s.file] = true
		}
		how := fmt.Sprintf("%s in %s, line %d", run.start.How, m.rel(run.from.Path), run.start.Line+1)
		sets := threadWrites(run.reached)
		for _, w := range writers {
			if !onPath[w] && !closure(run.from)[w] && !intersects(closure(w), onPath) {
				continue
			}
			v.Threads[w.Path] = append(v.Threads[w.Path], diagnose.ExternalThreads{How: how, Path: m.pathOf(h), Sets: sets})
		}
	}
}

// threadRun is a thread start whose threads run compiled code: the first
// path found to it, and every function the threads run.
type threadRun struct {
	from    *File
	start   *Start
	first   hit
	reached []reachedFunc
}

// threadWrites are the config flags the functions a start runs set
// (full names and the names they alias).
func threadWrites(reached []reachedFunc) []string {
	var sets []string
	for _, fn := range reached {
		for _, w := range fn.file.ConfigWrites {
			if w.Func == fn.def.Line {
				sets = append(sets, w.Flag)
				if w.Alias != "" {
					sets = append(sets, w.Alias)
				}
			}
		}
	}
	return sets
}

// importClosure is every workspace file f imports, directly or through
// the files it imports.
func (m *Model) importClosure(f *File) map[*File]bool {
	m.link()
	seen := map[*File]bool{}
	queue := []*File{f}
	for len(queue) > 0 {
		g := queue[0]
		queue = queue[1:]
		for _, q := range g.Imports {
			if h := m.moduleFile(q); h != nil && !seen[h] {
				seen[h] = true
				queue = append(queue, h)
			}
		}
	}
	return seen
}

// moduleFile is the workspace file of the longest module prefix of a
// qualified name (pkg.mod.func → pkg/mod.py), or nil.
func (m *Model) moduleFile(q string) *File {
	return longestModule(q, func(q string) *File { return m.modules[q] })
}

// intersects says two sets of files share one.
func intersects(a, b map[*File]bool) bool {
	for f := range b {
		if a[f] {
			return true
		}
	}
	return false
}
