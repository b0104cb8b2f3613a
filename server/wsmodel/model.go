package wsmodel

import (
	"sort"
	"strings"
	"sync"
)

// Model is one immutable version of the workspace: its files linked by
// module. With returns a new version; a Model is never changed, so every
// request and check reads one consistent version.
type Model struct {
	roots []string
	files map[string]*File // by path

	// Made on first use, once per version; once guards them.
	once    sync.Once
	modules map[string]*File  // module → its file
	defs    map[string]defRef // module.Qual (":path:Qual" for a file under no root) → definition
	tops    map[string]bool   // the top-level names of the workspace's modules
	// verdictOnce guards verdict, computed on first use.
	verdictOnce sync.Once
	verdict     *Verdicts
}

type defRef struct {
	file *File
	def  *Def
}

// fileScopes indexes a file's bindings, returns and calls by scope.
type fileScopes struct {
	bindings map[string]map[string][]Expr // scope → target → values
	attrs    map[string]map[string][]scoped
	returns  map[string][]Expr
	calls    map[string][]*Call
	defs     map[string]*Def // Qual → def
}

// scoped is a value and the scope it is evaluated in.
type scoped struct {
	scope string
	value Expr
}

// New makes a model of files under roots.
func New(roots []string, files []*File) *Model {
	m := &Model{roots: roots, files: make(map[string]*File, len(files))}
	for _, f := range files {
		m.files[f.Path] = f
	}
	return m
}

// With returns a version of the model with f in place of the file at its
// path (or added).
func (m *Model) With(f *File) *Model {
	n := &Model{roots: m.roots, files: make(map[string]*File, len(m.files)+1)}
	for p, g := range m.files {
		n.files[p] = g
	}
	n.files[f.Path] = f
	return n
}

// Without returns a version of the model without the file at path.
func (m *Model) Without(path string) *Model {
	if _, ok := m.files[path]; !ok {
		return m
	}
	n := &Model{roots: m.roots, files: make(map[string]*File, len(m.files))}
	for p, g := range m.files {
		if p != path {
			n.files[p] = g
		}
	}
	return n
}

// File returns the model's facts of the file at path.
func (m *Model) File(path string) (*File, bool) {
	f, ok := m.files[path]
	return f, ok
}

// Len is the number of files in the model.
func (m *Model) Len() int { return len(m.files) }

// Roots are the directories the model's modules are named from.
func (m *Model) Roots() []string { return m.roots }

func (m *Model) link() {
	m.once.Do(func() {
		m.modules = map[string]*File{}
		m.defs = map[string]defRef{}
		m.tops = map[string]bool{}
		paths := make([]string, 0, len(m.files))
		for p := range m.files {
			paths = append(paths, p)
		}
		// The same module named by two files (two roots): the first path
		// in order wins, so that every version answers alike.
		sort.Strings(paths)
		for _, p := range paths {
			f := m.files[p]
			if f.Module != "" {
				if _, ok := m.modules[f.Module]; !ok {
					m.modules[f.Module] = f
				}
				top, _, _ := strings.Cut(f.Module, ".")
				m.tops[top] = true
			}
		}
		for _, p := range paths {
			f := m.files[p]
			for i := range f.Defs {
				d := &f.Defs[i]
				switch {
				case f.Module == "":
					// A file under no root: its definitions are still
					// followed from the file itself.
					m.defs[":"+f.Path+":"+d.Qual] = defRef{f, d}
				case m.modules[f.Module] == f:
					m.defs[f.Module+"."+d.Qual] = defRef{f, d}
				}
			}
		}
	})
}

// index is the file's bindings, returns and calls by scope, made once
// per File (a File is never changed) when a resolution first reads the
// file: a new version of the model indexes only the files that changed,
// and files no path reaches are never indexed.
func (f *File) index() *fileScopes {
	f.indexOnce.Do(func() {
		fs := &fileScopes{bindings: map[string]map[string][]Expr{}, attrs: map[string]map[string][]scoped{},
			returns: map[string][]Expr{}, calls: map[string][]*Call{}, defs: map[string]*Def{}}
		for i := range f.Defs {
			d := &f.Defs[i]
			fs.defs[d.Qual] = d
		}
		for _, b := range f.Bindings {
			if rest, ok := strings.CutPrefix(b.Target, "self."); ok && !strings.Contains(rest, ".") {
				if cls := fs.classOf(b.Scope); cls != "" {
					if fs.attrs[cls] == nil {
						fs.attrs[cls] = map[string][]scoped{}
					}
					fs.attrs[cls][rest] = append(fs.attrs[cls][rest], scoped{b.Scope, b.Value})
					continue
				}
			}
			if fs.bindings[b.Scope] == nil {
				fs.bindings[b.Scope] = map[string][]Expr{}
			}
			fs.bindings[b.Scope][b.Target] = append(fs.bindings[b.Scope][b.Target], b.Value)
		}
		for _, r := range f.Returns {
			fs.returns[r.Scope] = append(fs.returns[r.Scope], r.Value)
		}
		for i := range f.Calls {
			c := &f.Calls[i]
			fs.calls[c.Scope] = append(fs.calls[c.Scope], c)
		}
		f.scopes = fs
	})
	return f.scopes
}

// classOf is the class a method scope belongs to, or "".
func (fs *fileScopes) classOf(scope string) string {
	if d := fs.defs[scope]; d != nil && d.Class != "" {
		return d.Class
	}
	return ""
}

// parentScope is the scope that holds scope.
func parentScope(scope string) string {
	if i := strings.LastIndexByte(scope, '.'); i >= 0 {
		return scope[:i]
	}
	return ""
}
