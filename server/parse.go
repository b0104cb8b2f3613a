package server

import (
	"context"
	"runtime"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/source"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// newParse makes the engine's parse function: one parse of a document
// version, with tree-sitter parsers lent from a bounded pool (they hold C
// memory), then the buffer analysis of that one tree. A parse stops when
// its context is done (a newer version superseded it).
func newParse() source.ParseFunc {
	pool := syntax.NewPool(runtime.GOMAXPROCS(0))
	return func(ctx context.Context, src []byte) (*pybuf.Buffer, error) {
		t, err := pool.ParseContext(ctx, src)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return pybuf.Parse(src), nil // no parser to lend: a parser for this call
		}
		return pybuf.FromTree(t), nil
	}
}

// parseFile parses a local Python file's text (a workspace module a run
// sends, a file the site's import scan reads) to the end, with the
// engine's parsers.
func parseFile(parse source.ParseFunc) func(src []byte) *pybuf.Buffer {
	return func(src []byte) *pybuf.Buffer {
		b, err := parse(context.Background(), src)
		if err != nil {
			return pybuf.Parse(src) // not reached: a background parse is never stopped
		}
		return b
	}
}
