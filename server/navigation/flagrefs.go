package navigation

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/pyindex"
	"github.com/torchlsp/torchlsp/server/session"
)

// flagAt finds a config flag named at pos in any spelling (attribute
// chain, options key, patch key, env var). It consults the target's flag
// catalog only when the position could name one, so hovering the user's
// own names never waits for torch to be mirrored.
func (n *Navigator) flagAt(ctx context.Context, doc *api.Snapshot, pos api.Position) (*flagTarget, pybuf.Span, error) {
	if doc == nil {
		return nil, pybuf.Span{}, nil
	}
	buf := doc.Buffer()
	p := pybuf.Pos{Line: pos.Line, Col: pos.Column}
	ref, refOK := buf.RefAt(p)
	_, _, strOK := buf.StringAt(p)
	if !strOK && !(refOK && session.TopPackage(ref.Qualname) == "torch") {
		return nil, pybuf.Span{}, nil
	}
	s, err := n.deps.Session("")
	if err != nil {
		return nil, pybuf.Span{}, err
	}
	if !strOK && !mayBeFlag(ref.Qualname) && !s.Mirrored("torch") {
		// The catalog needs the whole tree: a name that cannot be a flag
		// does not wait for the mirror, it is answered on demand.
		return nil, pybuf.Span{}, nil
	}
	cat, ps, err := s.Catalog(ctx)
	if errors.Is(err, session.ErrNotOnTarget) {
		return nil, pybuf.Span{}, nil
	}
	if err != nil {
		return nil, pybuf.Span{}, err
	}
	fr, ok := diagnose.FlagAt(doc.FlagRefs(cat), p)
	if !ok || midChain(fr, p) {
		return nil, pybuf.Span{}, nil
	}
	ft := &flagTarget{flag: fr.Flag, cat: cat, pkg: ps, target: s.Spec().Name}
	return ft, fr.Span, nil
}

// mayBeFlag reports whether a dotted name could be a torch config flag:
// flags live in config modules and torch.backends. Other names need not
// wait for the flag catalog, which needs the whole mirror.
func mayBeFlag(qualname string) bool {
	for _, part := range strings.Split(qualname, ".") {
		if strings.Contains(part, "config") || part == "backends" || part == "_dynamo" || part == "_inductor" || part == "_functorch" || part == "fx" || part == "export" {
			return true
		}
	}
	return false
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

// withValue asks the target for the flag's effective value, waiting at
// most ValueWait: an editor's hover answers at once with what is known
// (the read started when the document opened), the command line waits.
func (n *Navigator) withValue(ctx context.Context, ft *flagTarget) {
	s, err := n.deps.Session("")
	if err != nil {
		return
	}
	v, ok, err := s.FlagValue(ctx, ft.flag, n.deps.ValueWait)
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
func (n *Navigator) flagLocation(ft *flagTarget) api.Location {
	m := ft.pkg.Mirror()
	local := filepath.Join(m.SiteDir, filepath.FromSlash(ft.flag.File))
	name := ft.flag.Key[strings.LastIndexByte(ft.flag.Key, '.')+1:]
	return api.Location{
		Path:       n.answerPath(ft.target, m, local),
		TargetPath: m.TargetPath(local),
		Range: api.Range{
			Start: api.Position{Line: ft.flag.Line, Column: ft.flag.Col},
			End:   api.Position{Line: ft.flag.Line, Column: ft.flag.Col + len(name)},
		},
	}
}

// siteLocations are the places torch reads a flag, in the mirror.
func (n *Navigator) siteLocations(ft *flagTarget) []api.Location {
	sites := ft.cat.Sites(ft.flag.FullKey())
	out := make([]api.Location, 0, len(sites))
	m := ft.pkg.Mirror()
	for _, st := range sites {
		local := filepath.Join(m.SiteDir, filepath.FromSlash(st.File))
		out = append(out, api.Location{
			Path:       n.answerPath(ft.target, m, local),
			TargetPath: m.TargetPath(local),
			Range:      api.Range{Start: api.Position{Line: st.Line, Column: st.Col}, End: api.Position{Line: st.Line, Column: st.Col}},
		})
	}
	return out
}

// workspaceUses finds a flag's uses in the workspace's files: the open
// documents as they are, the others from disk, those whose words hold
// the key's last name or one of the flag's environment variables (every
// spelling names one: an attribute, a key in a string, a keyword, an
// environment variable).
func (n *Navigator) workspaceUses(ctx context.Context, cat *gates.Catalog, f *gates.Flag) ([]api.Location, error) {
	var out []api.Location
	for _, d := range n.deps.Documents() {
		for _, r := range d.FlagRefs(cat) {
			if r.Flag != f {
				continue
			}
			out = append(out, api.Location{URI: d.URI(), Path: d.Path(), Range: api.RangeOf(r.Span)})
		}
	}
	if n.deps.Workspace == nil {
		return out, nil
	}
	names := append([]string{f.Key[strings.LastIndexByte(f.Key, '.')+1:]}, f.Env()...)
	files, err := n.deps.Workspace.Mentioning(ctx, names, n.openPaths())
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		err := file.Visit(ctx, func(src pyindex.Source) {
			for _, r := range diagnose.FlagRefs(pybuf.FromTree(src.Table.Tree()), cat) {
				if r.Flag == f {
					out = append(out, api.Location{Path: src.Path, Range: api.RangeOf(r.Span)})
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
