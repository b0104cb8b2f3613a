package server

import (
	"runtime"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

// parserPool hands out tree-sitter parsers; each is used by one goroutine
// at a time. Parsers hold C memory, so the pool is a bounded free list
// rather than a sync.Pool, which would drop them without freeing.
type parserPool struct {
	free chan *pybuf.Parser
}

func newParserPool() *parserPool {
	return &parserPool{free: make(chan *pybuf.Parser, runtime.GOMAXPROCS(0))}
}

func (p *parserPool) parse(src []byte) *pybuf.Buffer {
	var parser *pybuf.Parser
	select {
	case parser = <-p.free:
	default:
		var err error
		if parser, err = pybuf.NewParser(); err != nil {
			return pybuf.Parse(src)
		}
	}
	buf := parser.Parse(src)
	select {
	case p.free <- parser:
	default:
		parser.Close()
	}
	return buf
}
