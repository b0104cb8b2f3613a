package server

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
)

// flagAt finds a config flag named at pos in any spelling (attribute
// chain, options key, patch key, env var). It consults the target's flag
// catalog only when the position could name one, so hovering the user's
// own names never waits for torch to be mirrored.
func (e *Engine) flagAt(ctx context.Context, doc *Snapshot, pos Position) (*flagTarget, pybuf.Span, error) {
	if doc == nil {
		return nil, pybuf.Span{}, nil
	}
	buf := doc.Buffer()
	p := pybuf.Pos{Line: pos.Line, Col: pos.Column}
	ref, refOK := buf.RefAt(p)
	_, _, strOK := buf.StringAt(p)
	if !strOK && !(refOK && topPackage(ref.Qualname) == "torch") {
		return nil, pybuf.Span{}, nil
	}
	s, err := e.session("")
	if err != nil {
		return nil, pybuf.Span{}, err
	}
	if !strOK && !mayBeFlag(ref.Qualname) && !s.mirrored("torch") {
		// The catalog needs the whole tree: a name that cannot be a flag
		// does not wait for the mirror, it is answered on demand.
		return nil, pybuf.Span{}, nil
	}
	cat, ps, err := s.catalog(ctx)
	if errors.Is(err, ErrNotOnTarget) {
		return nil, pybuf.Span{}, nil
	}
	if err != nil {
		return nil, pybuf.Span{}, err
	}
	fr, ok := flagRefAt(doc.FlagRefs(cat), p)
	if !ok || midChain(fr, p) {
		return nil, pybuf.Span{}, nil
	}
	ft := &flagTarget{flag: fr.Flag, cat: cat, pkg: ps, spec: s.spec}
	return ft, fr.Span, nil
}

// flagRefAt returns the first reference naming a flag whose span holds pos
// (or ends at it), as diagnose.FlagAt does, from references already found.
func flagRefAt(refs []diagnose.FlagRef, p pybuf.Pos) (diagnose.FlagRef, bool) {
	for _, r := range refs {
		if r.Flag != nil && !posBefore(p, r.Span.Start) && !posBefore(r.Span.End, p) {
			return r, true
		}
	}
	return diagnose.FlagRef{}, false
}

// midChain says whether p is on a name before the flag's own in an
// attribute chain (triton in config.triton.cudagraphs): that name is the
// class the flag sits in, not the flag.
func midChain(fr diagnose.FlagRef, p pybuf.Pos) bool {
	if fr.Spelling != diagnose.SpellAttribute || fr.Span.Start.Line != fr.Span.End.Line || p.Line != fr.Span.End.Line {
		return false
	}
	name := fr.Key[strings.LastIndexByte(fr.Key, '.')+1:]
	return p.Col < fr.Span.End.Col-len(name)
}

func posBefore(a, b pybuf.Pos) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
}

// withValue asks the target for the flag's effective value, waiting at
// most ValueWait: an editor's hover answers at once with what is known
// (the read started when the document opened), the command line waits.
func (e *Engine) withValue(ctx context.Context, ft *flagTarget) {
	s, err := e.session("")
	if err != nil {
		return
	}
	v, ok, err := s.effective(ctx, ft.flag, e.opts.ValueWait)
	switch {
	case err != nil:
		ft.valErr = err
	case ok:
		ft.value = &v
	default:
		ft.pending = true
	}
}

// flagLocation is where a flag is defined, in the mirror.
func (e *Engine) flagLocation(ft *flagTarget) Location {
	local := filepath.Join(ft.pkg.mirror.SiteDir, filepath.FromSlash(ft.flag.File))
	name := ft.flag.Key[strings.LastIndexByte(ft.flag.Key, '.')+1:]
	return Location{
		Path:       e.answerPath(ft.spec, ft.pkg.mirror, local),
		TargetPath: ft.pkg.mirror.TargetPath(local),
		Range: Range{
			Start: Position{Line: ft.flag.Line, Column: ft.flag.Col},
			End:   Position{Line: ft.flag.Line, Column: ft.flag.Col + len(name)},
		},
	}
}

// siteLocations are the places torch reads a flag, in the mirror.
func (e *Engine) siteLocations(ft *flagTarget) []Location {
	sites := ft.cat.Sites(ft.flag.FullKey())
	out := make([]Location, 0, len(sites))
	for _, st := range sites {
		local := filepath.Join(ft.pkg.mirror.SiteDir, filepath.FromSlash(st.File))
		out = append(out, Location{
			Path:       e.answerPath(ft.spec, ft.pkg.mirror, local),
			TargetPath: ft.pkg.mirror.TargetPath(local),
			Range:      Range{Start: Position{Line: st.Line, Column: st.Col}, End: Position{Line: st.Line, Column: st.Col}},
		})
	}
	return out
}

// workspaceUses finds a flag's uses in the open documents.
func (e *Engine) workspaceUses(cat *gates.Catalog, f *gates.Flag) []Location {
	var out []Location
	for _, d := range e.docs.All() {
		for _, r := range d.FlagRefs(cat) {
			if r.Flag != f {
				continue
			}
			out = append(out, Location{URI: d.URI(), Path: d.Path(), Range: spanRange(r.Span)})
		}
	}
	return out
}

func spanRange(s pybuf.Span) Range {
	return Range{
		Start: Position{Line: s.Start.Line, Column: s.Start.Col},
		End:   Position{Line: s.End.Line, Column: s.End.Col},
	}
}
