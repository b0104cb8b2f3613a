package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
)

// Definition returns where the torch object at pos is defined, in the
// read-only local mirror of the target's sources (same line numbers as on
// the target). It returns nil for names torchlsp does not answer for.
func (e *Engine) Definition(ctx context.Context, doc *Snapshot, pos Position) ([]Location, error) {
	ft, _, err := e.flagAt(ctx, doc, pos)
	switch {
	case err != nil && !errors.Is(err, errCatalog):
		return nil, err // the target is unreachable: do not try it twice
	case err == nil && ft != nil:
		return []Location{e.flagLocation(ft)}, nil
	}
	t, err := e.lookup(ctx, doc, pos)
	if err != nil || t == nil || t.localPath == "" {
		return nil, err
	}
	return []Location{{
		// The Python server reading the site answers with the site's
		// path: the editor then shows one definition, not the same one
		// twice.
		Path:       e.answerPath(t.spec, t.pkg.mirror, t.localPath),
		TargetPath: t.targetPath,
		Range: Range{
			Start: Position{Line: t.line, Column: t.col},
			End:   Position{Line: t.line, Column: t.col + t.nameLen},
		},
	}}, nil
}

// nameColumn finds the byte column of name on a line of a file, preferring
// the name after "def " or "class "; 0 when it cannot tell.
func nameColumn(path string, line int, name string) int {
	data, err := os.ReadFile(path)
	if err != nil || name == "" {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for i := 0; sc.Scan(); i++ {
		if i != line {
			continue
		}
		text := sc.Text()
		for _, kw := range []string{"def ", "class "} {
			if j := strings.Index(text, kw+name); j >= 0 {
				return j + len(kw)
			}
		}
		if j := strings.Index(text, name); j >= 0 {
			return j
		}
		return 0
	}
	return 0
}
