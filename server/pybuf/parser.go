package pybuf

import (
	"context"
	"errors"
	"fmt"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// Parser turns buffer text into a Buffer. A Parser reuses its parser
// between calls; it is not safe for concurrent use (use one per
// goroutine). Close frees it.
type Parser struct {
	p *syntax.Parser
}

// NewParser returns a Parser for Python.
func NewParser() (*Parser, error) {
	p, err := syntax.NewParser()
	if err != nil {
		return nil, fmt.Errorf("pybuf: %w", err)
	}
	return &Parser{p: p}, nil
}

// Close frees the parser. The Buffers it made stay valid.
func (p *Parser) Close() {
	if p.p != nil {
		p.p.Close()
		p.p = nil
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
	if p.p == nil {
		return FromTree(&syntax.Tree{}), nil
	}
	t, err := p.p.ParseContext(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("pybuf: %w", err)
	}
	return FromTree(t), nil
}

// Parse analyses src with a parser made for this call. Use a Parser to
// analyse many buffers.
func Parse(src []byte) *Buffer {
	t, err := syntax.Parse(src)
	if err != nil {
		// The grammar is linked in; failing to load it is a build defect.
		panic(errors.Join(errors.New("pybuf: no Python grammar"), err))
	}
	return FromTree(t)
}

// FromTree analyses a syntax tree (of syntax.Parse, a syntax.Pool...): a
// caller that parses through its own pool gets the same Buffer as Parse
// would give.
func FromTree(t *syntax.Tree) *Buffer {
	src := t.Src()
	b := &Buffer{src: src, lines: syntax.NewLines(src), tree: t, nodes: t.Nodes()}
	analyze(b)
	return b
}
