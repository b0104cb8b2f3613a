package server

import (
	"context"
	"errors"

	"github.com/torchlsp/torchlsp/server/session"
)

// Definition returns where the torch object at pos is defined, in the
// read-only local mirror of the target's sources (same line numbers as on
// the target). It returns nil for names torchlsp does not answer for.
func (e *Engine) Definition(ctx context.Context, doc *Snapshot, pos Position) ([]Location, error) {
	ft, _, err := e.flagAt(ctx, doc, pos)
	switch {
	case err != nil && !errors.Is(err, session.ErrCatalog):
		return nil, err // the target is unreachable: do not try it twice
	case err == nil && ft != nil:
		return []Location{e.flagLocation(ft)}, nil
	}
	d, _, err := e.lookup(ctx, doc, pos)
	if err != nil || d == nil || d.LocalPath == "" {
		return nil, err
	}
	return []Location{{
		// The Python server reading the site answers with the site's
		// path: the editor then shows one definition, not the same one
		// twice.
		Path:       e.answerPath(d.Target, d.Package.Mirror(), d.LocalPath),
		TargetPath: d.TargetPath,
		Range: Range{
			Start: Position{Line: d.Line, Column: d.Col},
			End:   Position{Line: d.Line, Column: d.Col + d.NameLen},
		},
	}}, nil
}
