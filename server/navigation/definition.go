package navigation

import (
	"context"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/session"
)

// Definition returns where the torch object at pos is defined, in the
// read-only local mirror of the target's sources (same line numbers as on
// the target). It returns nil for names torchlsp does not answer for.
func (n *Navigator) Definition(ctx context.Context, doc *api.Snapshot, pos api.Position) ([]api.Location, error) {
	a, err := n.resolve(ctx, doc, pos, wantDefinition)
	if err != nil {
		return nil, err
	}
	if a.flag != nil {
		return []api.Location{n.flagLocation(a.flag)}, nil
	}
	d := a.def
	if d == nil || d.LocalPath == "" {
		return nil, nil
	}
	var locs []api.Location
	// A member of a union: every class's, as pyright answers.
	for _, d := range append([]*session.Definition{d}, d.Also...) {
		if d.LocalPath == "" {
			continue
		}
		locs = append(locs, api.Location{
			// The Python server reading the site answers with the site's
			// path: the editor then shows one definition, not the same one
			// twice.
			Path:       n.answerPath(d.Target, d.Package.Mirror(), d.LocalPath),
			TargetPath: d.TargetPath,
			Range: api.Range{
				Start: api.Position{Line: d.Line, Column: d.Col},
				End:   api.Position{Line: d.Line, Column: d.Col + d.NameLen},
			},
		})
	}
	return locs, nil
}
