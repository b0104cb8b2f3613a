package pybuf

import (
	"errors"
	"fmt"
	"math"
	"slices"

	sitter "github.com/tree-sitter/go-tree-sitter"
	python "github.com/tree-sitter/tree-sitter-python/bindings/go"
)

// maxSource is the largest buffer Parse analyses: node offsets are stored
// in 32 bits. Larger buffers get an empty analysis.
const maxSource = math.MaxUint32 - 1

// Parser turns buffer text into a Buffer. A Parser reuses its tree-sitter
// parser between calls; it is not safe for concurrent use (use one per
// goroutine). Close frees it.
type Parser struct {
	ts     *sitter.Parser
	kinds  []kindID  // tree-sitter symbol -> kind
	named  []bool    // tree-sitter symbol -> named node
	fields []fieldID // tree-sitter field id -> field
}

// NewParser returns a Parser for Python.
func NewParser() (*Parser, error) {
	lang := sitter.NewLanguage(python.Language())
	ts := sitter.NewParser()
	if err := ts.SetLanguage(lang); err != nil {
		ts.Close()
		return nil, fmt.Errorf("pybuf: set tree-sitter language: %w", err)
	}
	p := &Parser{ts: ts}
	n := lang.NodeKindCount()
	p.kinds = make([]kindID, n)
	p.named = make([]bool, n)
	for i := range n {
		id := uint16(i)
		p.named[i] = lang.NodeKindIsNamed(id) && lang.NodeKindIsVisible(id)
		if p.named[i] {
			p.kinds[i] = kindByName[lang.NodeKindForId(id)]
		}
	}
	nf := lang.FieldCount()
	p.fields = make([]fieldID, nf+1)
	for i := uint32(1); i <= nf; i++ {
		p.fields[i] = fieldByName[lang.FieldNameForId(uint16(i))]
	}
	return p, nil
}

// Close frees the parser. The Buffers it made stay valid.
func (p *Parser) Close() {
	if p.ts != nil {
		p.ts.Close()
		p.ts = nil
	}
}

// Parse analyses src. The Buffer keeps src (without copying it): do not
// modify src afterwards. Parse never fails; text tree-sitter cannot parse
// still gets the line-level fallback.
func (p *Parser) Parse(src []byte) *Buffer {
	b := &Buffer{src: src, lines: newLineIndex(src)}
	if p.ts != nil && len(src) <= maxSource {
		if tree := p.ts.Parse(src, nil); tree != nil {
			b.nodes = p.flatten(tree)
			tree.Close()
		}
	}
	analyze(b)
	return b
}

// Parse analyses src with a parser made for this call. Use a Parser to
// analyse many buffers.
func Parse(src []byte) *Buffer {
	p, err := NewParser()
	if err != nil {
		// The grammar is linked in; failing to load it is a build defect.
		panic(errors.Join(errors.New("pybuf: no Python grammar"), err))
	}
	defer p.Close()
	return p.Parse(src)
}

// flatten copies the named nodes of tree into a slice, in source order, so
// that analysis runs in Go without crossing into C for every question.
func (p *Parser) flatten(tree *sitter.Tree) []node {
	c := tree.Walk()
	defer c.Close()
	nodes := make([]node, 0, 256)
	var lastChild []int32 // per node: its last child so far
	var stack []int32     // named ancestors of the cursor's node
	anc := int32(-1)
	for {
		n := c.Node()
		sym := n.KindId()
		cur := int32(-1)
		kind, named := p.symbol(sym)
		if named {
			cur = int32(len(nodes))
			start, end := n.ByteRange()
			var field fieldID
			if fid := c.FieldId(); int(fid) < len(p.fields) {
				field = p.fields[fid]
			}
			nodes = append(nodes, node{
				start: uint32(start), end: uint32(end),
				parent: anc, firstChild: -1, nextSibling: -1,
				kind: kind, field: field,
			})
			lastChild = append(lastChild, -1)
			if anc >= 0 {
				if last := lastChild[anc]; last >= 0 {
					nodes[last].nextSibling = cur
				} else {
					nodes[anc].firstChild = cur
				}
				lastChild[anc] = cur
			}
		}
		if c.GotoFirstChild() {
			stack = append(stack, anc)
			if named {
				anc = cur
			}
			continue
		}
		for !c.GotoNextSibling() {
			if !c.GotoParent() {
				if cap(nodes) > len(nodes)+len(nodes)/4 {
					nodes = slices.Clone(nodes) // a Buffer may live long: drop the slack
				}
				return nodes
			}
			anc = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
	}
}

func (p *Parser) symbol(sym uint16) (kindID, bool) {
	if int(sym) < len(p.kinds) {
		return p.kinds[sym], p.named[sym]
	}
	if sym == math.MaxUint16 { // ts_builtin_sym_error
		return kError, true
	}
	return kOther, false
}
