package pyindex

import (
	"fmt"

	"github.com/torchlsp/torchlsp/server/internal/torchtree"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// maxParamFiles bounds the files whose parameter tables an Index keeps: a
// keyword's answer reads one file, usually the same few (functional.py).
const maxParamFiles = 16

// Param is a parameter of a def, as written in its signature.
type Param struct {
	Name      string
	Line, Col int    // 0-based line, UTF-8 byte column of the name
	Text      string // the parameter as written: "dim: int = -1"
}

// paramFile is the keyword parameters of every def in one version of a file,
// by the 0-based line of the def's name and of its first decorator.
type paramFile struct {
	size, mtime int64
	defs        map[int][]Param
}

// Parameter finds the parameter called name in the def at line (0-based)
// of the file at path: the line of the def's name, or of its first
// decorator, which is where inspect places a decorated function. *args and
// **kwargs are not parameters by name, and positional-only parameters
// (before "/") cannot be passed as keywords. ok is false when the file has
// no such def or the def no such parameter.
func (ix *Index) Parameter(path string, line int, name string) (Param, bool, error) {
	pf, err := ix.paramFile(path)
	if err != nil {
		return Param{}, false, fmt.Errorf("pyindex: parameter %s: %w", name, err)
	}
	for _, p := range pf.defs[line] {
		if p.Name == name {
			return p, true, nil
		}
	}
	return Param{}, false, nil
}

// paramFile returns the parameter table of a file, parsing it unless the
// same version is cached. The file, a mirror's, is read as the cache's
// files are (torchtree.ReadFile): opened without following a link at its
// name and without blocking, a regular file by its open descriptor, whose
// facts tell the cached version, read through torchtree.MaxFileBytes.
func (ix *Index) paramFile(path string) (*paramFile, error) {
	f, info, err := localfile.OpenNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ix.paramMu.Lock()
	pf := ix.params[path]
	ix.paramMu.Unlock()
	if pf != nil && pf.size == info.Size() && pf.mtime == info.ModTime().UnixNano() {
		return pf, nil
	}
	src, err := localfile.ReadOpen(f, path, torchtree.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	p, err := ix.parsers.Get()
	if err != nil {
		return nil, err
	}
	defer ix.parsers.Put(p)
	pf = &paramFile{size: info.Size(), mtime: info.ModTime().UnixNano(), defs: map[int][]Param{}}
	p.Visit(src, func(t *syntax.Tree) { collectParams(t, pf.defs) })
	ix.paramMu.Lock()
	if ix.params == nil || len(ix.params) >= maxParamFiles {
		ix.params = map[string]*paramFile{}
	}
	ix.params[path] = pf
	ix.paramMu.Unlock()
	return pf, nil
}

// collectParams records the keyword parameters of every def in a tree.
func collectParams(t *syntax.Tree, defs map[int][]Param) {
	for i := range t.Nodes() {
		n := int32(i)
		if t.Kind(n) != syntax.KindFunctionDefinition {
			continue
		}
		nm := t.Child(n, syntax.FieldName)
		params := t.Child(n, syntax.FieldParameters)
		if nm < 0 || params < 0 {
			continue
		}
		ps := keywordParams(t, params)
		defs[int(t.Node(nm).StartRow)] = ps
		if par := t.Parent(n); par >= 0 && t.Kind(par) == syntax.KindDecoratedDefinition {
			defs[int(t.Node(par).StartRow)] = ps
		}
	}
}

// keywordParams lists the parameters of a parameter list that a call can
// pass by name.
func keywordParams(t *syntax.Tree, params int32) []Param {
	var out []Param
	for c := range t.Children(params) {
		id := int32(-1)
		switch t.Kind(c) {
		case syntax.KindPositionalSeparator:
			out = out[:0] // what came before "/" is positional-only
			continue
		case syntax.KindIdentifier:
			id = c
		case syntax.KindTypedParameter:
			if f := t.NthChild(c, 0); f >= 0 && t.Kind(f) == syntax.KindIdentifier {
				id = f
			}
		case syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
			if f := t.Child(c, syntax.FieldName); f >= 0 && t.Kind(f) == syntax.KindIdentifier {
				id = f
			}
		}
		if id >= 0 {
			nd := t.Node(id)
			out = append(out, Param{Name: t.Text(id), Line: int(nd.StartRow), Col: int(nd.StartCol), Text: oneLine(t.Text(c), true)})
		}
	}
	return out
}
