package pybuf

import (
	"context"
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

// readChunk is the most text handed to tree-sitter per read.
const readChunk = 64 << 10

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
	b, _ := p.ParseContext(context.Background(), src)
	return b
}

// ParseContext is Parse that gives up when ctx is done, as when a newer
// version of the buffer has arrived; it then returns ctx's error and no
// Buffer.
func (p *Parser) ParseContext(ctx context.Context, src []byte) (*Buffer, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pybuf: parse: %w", err)
	}
	b := &Buffer{src: src, lines: newLineIndex(src)}
	if p.ts != nil && len(src) <= maxSource {
		var opts *sitter.ParseOptions
		if ctx.Done() != nil {
			opts = &sitter.ParseOptions{ProgressCallback: func(sitter.ParseState) bool {
				return ctx.Err() != nil
			}}
		}
		read := func(i int, _ sitter.Point) []byte {
			if i >= len(src) {
				return nil
			}
			// The binding copies each chunk into C memory: keep chunks
			// bounded so re-reads cost little.
			return src[i:min(i+readChunk, len(src))]
		}
		tree := p.ts.ParseWithOptions(read, nil, opts)
		if err := ctx.Err(); err != nil {
			if tree != nil {
				tree.Close()
			}
			p.ts.Reset() // a cancelled parse leaves state behind
			return nil, fmt.Errorf("pybuf: parse: %w", err)
		}
		if tree != nil {
			b.nodes = p.flatten(tree)
			tree.Close()
		}
	}
	analyze(b)
	return b, nil
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
