package pyindex

import (
	"sort"
	"strings"
	"sync"

	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// What the index keeps of a file (fileData) is its module- and class-level
// bindings; a few questions need the whole file: which attributes a class's
// methods assign through self, which names a __getattr__ serves. Those
// parse the file into a pyscope.Table, of which the index keeps the few
// used last.

const (
	// maxTables and maxTableSource bound the tables an index keeps: a
	// table holds its file's syntax tree, about 30 bytes for each byte of
	// source (4 MB for compile_fx.py's 120 KB), so the tables kept hold
	// trees of at most 1 MiB of source in all, 30 MB. A larger file is
	// parsed into no table: its classes answer from their bodies only.
	maxTables      = 4
	maxTableSource = 1 << 20
)

// tableCache holds the tables of the files parsed last.
type tableCache struct {
	mu    sync.Mutex // guards order, byRel and bytes
	order []string   // least recently used first
	byRel map[string]*pyscope.Table
	bytes int // source bytes of the tables kept
}

// table returns the table of file f, parsing it unless it is among the
// last ones used; nil when the file cannot be read or is over
// maxTableSource.
func (ix *Index) table(f *fileState) *pyscope.Table {
	c := &ix.tables
	c.mu.Lock()
	if t, ok := c.byRel[f.rel]; ok {
		c.touch(f.rel)
		c.mu.Unlock()
		return t
	}
	c.mu.Unlock()
	if f.size > maxTableSource {
		return nil
	}
	var src []byte
	var err error
	if ix.read != nil {
		src, err = ix.read(f.rel)
	} else {
		// A mirror's file, read as the cache is (torchtree.ReadFile),
		// through maxTableSource: a larger one makes no table anyway.
		src, err = localfile.ReadNoFollow(ix.abs(f), maxTableSource)
	}
	if err != nil || len(src) > maxTableSource {
		return nil
	}
	p, err := ix.parsers.Get()
	if err != nil {
		return nil
	}
	tree := p.Parse(src)
	ix.parsers.Put(p)
	t := pyscope.New(tree)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byRel == nil {
		c.byRel = map[string]*pyscope.Table{}
	}
	if _, ok := c.byRel[f.rel]; ok {
		return t // parsed twice at once: the first one is kept
	}
	c.order = append(c.order, f.rel)
	c.byRel[f.rel] = t
	c.bytes += len(src)
	for len(c.order) > maxTables || c.bytes > maxTableSource {
		old := c.byRel[c.order[0]]
		c.bytes -= len(old.Tree().Src())
		delete(c.byRel, c.order[0])
		c.order = c.order[1:]
	}
	return t
}

// touch moves rel to the end of the order; the caller holds mu.
func (c *tableCache) touch(rel string) {
	for i, r := range c.order {
		if r == rel {
			copy(c.order[i:], c.order[i+1:])
			c.order[len(c.order)-1] = rel
			return
		}
	}
}

// instanceAttr finds where the methods of class t assign self.name.
func (ix *Index) instanceAttr(t target, name string) (*extSite, bool) {
	tab := ix.table(t.file)
	if tab == nil {
		return nil, false
	}
	cs := tab.ClassScope(int(t.b.line), int(t.b.col))
	if cs < 0 {
		return nil, false
	}
	a := tab.InstanceAttr(cs, name)
	if a < 0 {
		return nil, false
	}
	pos := tab.Tree().StartPos(a)
	return &extSite{file: t.file, line: int32(pos.Line), col: int32(pos.Col), name: name, kind: KindVariable, owner: t.path}, true
}

// valueText is the whole right-hand side of the assignment that binds
// variable t, read from its file ("" when it cannot be).
func (ix *Index) valueText(t target) string {
	tab := ix.table(t.file)
	if tab == nil {
		return ""
	}
	tr := tab.Tree()
	want := syntax.Pos{Line: int(t.b.line), Col: int(t.b.col)}
	occs := tab.Occurrences()
	i := sort.Search(len(occs), func(i int) bool {
		p := tr.StartPos(occs[i].Node)
		return p.Line > want.Line || p.Line == want.Line && p.Col >= want.Col
	})
	if i >= len(occs) || tr.StartPos(occs[i].Node) != want {
		return ""
	}
	asg := tr.Parent(occs[i].Node)
	if asg < 0 || tr.Kind(asg) != syntax.KindAssignment {
		return ""
	}
	v := tr.Child(asg, syntax.FieldRight)
	if v < 0 || tr.End(v)-tr.Start(v) > maxAnnText {
		return ""
	}
	var b strings.Builder
	for line := range strings.SplitSeq(tr.Text(v), "\n") {
		b.WriteString(stripComment(line))
		b.WriteByte(' ')
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// stripComment cuts a line of code at its comment.
func stripComment(line string) string {
	cut := len(line)
	walkTopLevel(line, 0, func(i int, c byte, _ int) bool {
		if c == '#' {
			cut = i
			return false
		}
		return true
	})
	return line[:cut]
}

// maxAnnText bounds the text of an alias read back from its file.
const maxAnnText = 4096

// servedName finds, in the body of the __getattr__ def ga, the string
// literal that compares the attribute's name ("if name == 'allow_tf32':"):
// the place that makes the name an attribute.
func (r *resolver) servedName(ga entity, name string) (entity, bool) {
	if ga.kind != entFunction {
		return entity{}, false
	}
	var tree *syntax.Tree
	def := int32(-1)
	if ga.fn >= 0 && r.nav != nil {
		tree, def = r.nav.tree, ga.fn
	} else if ga.node < 0 && ga.t.b != nil && ga.t.site == nil {
		tab := r.ix.table(ga.t.file)
		if tab == nil {
			return entity{}, false
		}
		tree = tab.Tree()
		def = functionAt(tree, int(ga.t.b.line), int(ga.t.b.col))
	}
	if def < 0 {
		return entity{}, false
	}
	lit := literalIn(tree, def, name)
	if lit < 0 {
		return entity{}, false
	}
	pos := tree.ContentSpan(lit).Start
	if ga.fn >= 0 && r.nav != nil {
		// A place in the source: no identifier stands there, so it is
		// described by the index's kind of site, in the source file.
		return entity{kind: entOpaque, node: -1, fn: -1, bind: -1, cls: classRef{local: -1},
			t: target{site: &extSite{line: int32(pos.Line), col: int32(pos.Col), name: name, kind: KindVariable}}}, true
	}
	owner := ga.t.path[:max(strings.LastIndexByte(ga.t.path, '.'), 0)]
	return indexEntity(target{mod: ga.t.mod, site: &extSite{file: ga.t.file, line: int32(pos.Line), col: int32(pos.Col), name: name, kind: KindVariable, owner: owner}}), true
}

// functionAt is the def whose name starts at line and col, or -1.
func functionAt(tree *syntax.Tree, line, col int) int32 {
	for i := range tree.Nodes() {
		n := int32(i)
		if tree.Kind(n) != syntax.KindFunctionDefinition {
			continue
		}
		if nm := tree.Child(n, syntax.FieldName); nm >= 0 && tree.StartPos(nm) == (syntax.Pos{Line: line, Col: col}) {
			return n
		}
	}
	return -1
}

// literalIn finds, in the body of def, the string literal equal to value
// that is compared with the def's second parameter (the name a __getattr__
// is asked for): name == "x", "x" == name, name in ("x", "y").
func literalIn(tree *syntax.Tree, def int32, value string) int32 {
	param := ""
	if ps := tree.Child(def, syntax.FieldParameters); ps >= 0 {
		i := 0
		for c := tree.FirstChild(ps); c >= 0; c = tree.NextSibling(c) {
			id := c
			if k := tree.Kind(c); k == syntax.KindTypedParameter {
				id = tree.FirstChild(c)
			} else if k == syntax.KindDefaultParameter || k == syntax.KindTypedDefaultParameter {
				id = tree.Child(c, syntax.FieldName)
			}
			if tree.Kind(id) != syntax.KindIdentifier {
				continue
			}
			if i == 1 {
				param = tree.Text(id)
				break
			}
			i++
		}
	}
	body := tree.Child(def, syntax.FieldBody)
	if param == "" || body < 0 {
		return -1
	}
	end := tree.End(body)
	for n := body; int(n) < tree.Len() && tree.Start(n) < end; n++ {
		if tree.Kind(n) != syntax.KindComparisonOperator {
			continue
		}
		ops := tree.CodeChildren(n)
		if len(ops) != 2 {
			continue
		}
		for i, other := range [2]int32{ops[1], ops[0]} {
			if mine := ops[i]; tree.Kind(mine) != syntax.KindIdentifier || tree.Text(mine) != param {
				continue
			}
			if lit := literalOf(tree, tree.Unwrap(other), value); lit >= 0 {
				return lit
			}
		}
	}
	return -1
}

// literalOf is n when it is the string literal value, or the element of a
// tuple, list or set display n that is; -1 otherwise.
func literalOf(tree *syntax.Tree, n int32, value string) int32 {
	switch tree.Kind(n) {
	case syntax.KindString:
		if v, ok := tree.PlainString(n); ok && v == value {
			return n
		}
	case syntax.KindTuple, syntax.KindList, syntax.KindSet:
		for c := tree.FirstChild(n); c >= 0; c = tree.NextSibling(c) {
			if lit := literalOf(tree, c, value); lit >= 0 {
				return lit
			}
		}
	}
	return -1
}
