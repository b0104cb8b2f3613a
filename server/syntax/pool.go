package syntax

import (
	"context"
	"fmt"
)

// Pool lends Parsers to goroutines: at most size idle ones are kept, and
// more are made when all are lent. It is safe for concurrent use.
type Pool struct {
	free chan *Parser // idle parsers; a parser serves one goroutine at a time
}

// NewPool returns a pool that keeps up to size idle parsers (at least one).
func NewPool(size int) *Pool { return &Pool{free: make(chan *Parser, max(size, 1))} }

// Get lends a parser; give it back with Put.
func (p *Pool) Get() (*Parser, error) {
	select {
	case ps := <-p.free:
		return ps, nil
	default:
	}
	ps, err := NewParser()
	if err != nil {
		return nil, fmt.Errorf("syntax: pool: %w", err)
	}
	return ps, nil
}

// Put gives a parser back; one the pool has no room for is closed.
func (p *Pool) Put(ps *Parser) {
	select {
	case p.free <- ps:
	default:
		ps.Close()
	}
}

// Parse parses src with a lent parser.
func (p *Pool) Parse(src []byte) (*Tree, error) {
	ps, err := p.Get()
	if err != nil {
		return nil, err
	}
	defer p.Put(ps)
	return ps.Parse(src), nil
}

// ParseContext parses src with a lent parser, giving up when ctx is done.
func (p *Pool) ParseContext(ctx context.Context, src []byte) (*Tree, error) {
	ps, err := p.Get()
	if err != nil {
		return nil, err
	}
	defer p.Put(ps)
	return ps.ParseContext(ctx, src)
}

// Close closes the idle parsers. The pool stays usable.
func (p *Pool) Close() {
	for {
		select {
		case ps := <-p.free:
			ps.Close()
		default:
			return
		}
	}
}

// Parse parses src with a parser made for this call. Use a Parser or a
// Pool to parse many texts.
func Parse(src []byte) (*Tree, error) {
	p, err := NewParser()
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Parse(src), nil
}
