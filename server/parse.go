package server

import (
	"runtime"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// newParse makes the engine's parse function: one parse of a document
// version, with tree-sitter parsers lent from a bounded pool (they hold C
// memory), then the buffer analysis of that one tree.
func newParse() func(src []byte) *pybuf.Buffer {
	pool := syntax.NewPool(runtime.GOMAXPROCS(0))
	return func(src []byte) *pybuf.Buffer {
		t, err := pool.Parse(src)
		if err != nil {
			return pybuf.Parse(src) // no parser to lend: a parser for this call
		}
		return pybuf.FromTree(t)
	}
}
