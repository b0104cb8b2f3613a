package wsmodel

import "strings"

// maxReexportHops bounds the modules a re-export is followed through.
const maxReexportHops = 8

// Reexport is the name outside the workspace that a module of the
// workspace binds name to by its imports, followed through the
// workspace's other modules: pkg/util.py's `from torch._inductor import
// cudagraph_trees` makes Reexport("pkg.util", "cudagraph_trees")
// "torch._inductor.cudagraph_trees". Navigation asks it
// (pyindex.Reexports), so that references of a torch name reach a file
// that imports it from the user's own module.
func (m *Model) Reexport(module, name string) (string, bool) {
	m.link()
	return reexport(module, name, func(q string) *File { return m.modules[q] })
}

// reexport follows name, bound by module's imports, through the modules
// fileOf finds (the workspace file that is a module, nil for none), at
// most maxReexportHops: what Model.Reexport and ImportsOnly.Reexport
// share.
func reexport(module, name string, fileOf func(module string) *File) (string, bool) {
	for range maxReexportHops {
		f := fileOf(module)
		if f == nil {
			return "", false
		}
		q, ok := f.Imports[name]
		if !ok {
			return "", false
		}
		g := longestModule(q, fileOf)
		if g == nil {
			return q, true // outside the workspace: torch's, or another package's
		}
		if g.Module == q {
			return "", false // a module of the workspace itself
		}
		module, name = g.Module, q[len(g.Module)+1:]
		if strings.Contains(name, ".") {
			return "", false // a name inside a class or function of the workspace
		}
	}
	return "", false
}

// longestModule is the file fileOf finds for the longest module prefix of
// the dotted name q; nil when no prefix is a module of the workspace.
func longestModule(q string, fileOf func(module string) *File) *File {
	for {
		if f := fileOf(q); f != nil {
			return f
		}
		i := strings.LastIndexByte(q, '.')
		if i < 0 {
			return nil
		}
		q = q[:i]
	}
}
