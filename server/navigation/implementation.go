package navigation

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/opimpl"
	"github.com/torchlsp/torchlsp/server/session"
)

// Implementation lists where the target's torch defines the callable at
// pos for the compiler stack: its meta registration, decompositions,
// torch._refs reference, py_impl kernels and Inductor lowering, in the
// read-only mirror. Each location is the registration's line (the
// registering decorator, or the registering call). It returns nil for
// names that are not torch callables with registrations.
func (n *Navigator) Implementation(ctx context.Context, doc *api.Snapshot, pos api.Position) ([]api.Location, error) {
	items, err := n.Implementations(ctx, doc, pos)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	locs := make([]api.Location, len(items))
	for i, it := range items {
		locs[i] = it.Location
	}
	return locs, nil
}

// ImplementationItem is one place Implementation lists, with what it is.
type ImplementationItem struct {
	api.Location
	Op     string   // the op registered: "aten.add", "aten.mm.default"
	Labels []string // what the place is: "meta", "decomposition", "ref", "lowering", …
	Func   string   // the registered function, when known
	Cond   string   // the if condition it is registered under, "" for always
}

// Implementations is Implementation with what each place is, for the
// command line.
func (n *Navigator) Implementations(ctx context.Context, doc *api.Snapshot, pos api.Position) ([]ImplementationItem, error) {
	ans, ps, err := n.implementations(ctx, doc, pos)
	if err != nil || ps == nil {
		return nil, err
	}
	items := implItems(ps.Mirror(), ans.Impls)
	s, err := n.deps.Session("")
	if err != nil {
		return nil, err
	}
	for i := range items {
		items[i].Location.Path = n.answerPath(s.Spec().Name, ps.Mirror(), items[i].Location.Path)
	}
	return items, nil
}

// implementations resolves the callable at pos and looks it up.
func (n *Navigator) implementations(ctx context.Context, doc *api.Snapshot, pos api.Position) (opimpl.Answer, *session.Package, error) {
	qualname, tensorMethod := "", ""
	if ref, ok := refAt(doc, pos); ok {
		qualname = ref.Qualname
	} else if tensorMethod = attributeAt(doc, pos); tensorMethod == "" {
		return opimpl.Answer{}, nil, nil
	}
	if qualname != "" && session.TopPackage(qualname) != "torch" {
		return opimpl.Answer{}, nil, nil
	}
	s, err := n.deps.Session("")
	if err != nil {
		return opimpl.Answer{}, nil, err
	}
	ps, err := s.Package(ctx, "torch")
	if errors.Is(err, session.ErrNotOnTarget) {
		return opimpl.Answer{}, nil, nil
	}
	if err != nil {
		return opimpl.Answer{}, nil, err
	}
	if tensorMethod != "" {
		// x.view(...) on a value of unknown type: answer only for names
		// that are methods of the target's torch.Tensor.
		qualname = "torch.Tensor." + tensorMethod
		if _, err := ps.Index().Resolve(qualname); err != nil {
			return opimpl.Answer{}, nil, nil
		}
	}
	tab, err := ps.OpTable(ctx)
	if err != nil {
		return opimpl.Answer{}, nil, err
	}
	return tab.ForCallable(qualname), ps, nil
}

// attributeAt returns the identifier at pos when it follows a dot
// (x.view): a method whose receiver's type the buffer cannot tell.
func attributeAt(doc *api.Snapshot, pos api.Position) string {
	if doc == nil || doc.TooLarge() {
		return ""
	}
	return attributeIn([]byte(doc.Text()), pos)
}

// attributeIn is attributeAt on a document's text.
func attributeIn(text []byte, pos api.Position) string {
	lines := strings.SplitN(string(text), "\n", pos.Line+2)
	if pos.Line >= len(lines) {
		return ""
	}
	line := strings.TrimSuffix(lines[pos.Line], "\r")
	if pos.Column > len(line) {
		return ""
	}
	start, end := pos.Column, pos.Column
	for start > 0 && isIdentByte(line[start-1]) {
		start--
	}
	for end < len(line) && isIdentByte(line[end]) {
		end++
	}
	if start == end || start == 0 || line[start-1] != '.' || (line[start] >= '0' && line[start] <= '9') {
		return ""
	}
	if i := strings.IndexByte(line, '#'); i >= 0 && i < start {
		return "" // in a comment
	}
	return line[start:end]
}

func isIdentByte(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// implItems turns table entries into mirror locations, one per line (a
// decomposition that is also the ref is one place, with both labels).
func implItems(m *remote.MirrorTree, impls []opimpl.Impl) []ImplementationItem {
	var out []ImplementationItem
	at := map[string]int{}
	for _, im := range impls {
		key := fmt.Sprintf("%s:%d", im.Path, im.Line)
		if i, ok := at[key]; ok {
			if !containsStr(out[i].Labels, im.Label()) {
				out[i].Labels = append(out[i].Labels, im.Label())
			}
			continue
		}
		at[key] = len(out)
		local := filepath.Join(m.SiteDir, filepath.FromSlash(im.Path))
		out = append(out, ImplementationItem{
			Location: api.Location{
				Path:       local,
				TargetPath: m.TargetPath(local),
				Range: api.Range{
					Start: api.Position{Line: im.Line, Column: im.Col},
					End:   api.Position{Line: im.Line, Column: max(im.EndCol, im.Col)},
				},
			},
			Op:     im.Op.String(),
			Labels: []string{im.Label()},
			Func:   im.Func,
			Cond:   im.Cond,
		})
	}
	return out
}

// The hover's section shows at most maxHoverOps ops and maxHoverPlaces
// places of each; the implementation request lists them all.
const (
	maxHoverOps    = 4
	maxHoverPlaces = 4
)

// CompilerStackSection is the hover's short list of where the target's
// torch defines the hovered callable for the compiler stack, or "" when
// it has nothing. The first hover of an op may wait for the table's scan
// (about a second for torch 2.11 on two loaded cores; a cached table
// opens in milliseconds), which started when the mirror became usable.
func (n *Navigator) CompilerStackSection(ctx context.Context, d *session.Definition) string {
	if d == nil || d.Missing || d.Package == nil || d.Package.Name() != "torch" || d.Package.Mirror() == nil || d.Package.Partial() {
		return "" // the table scans the whole tree: not an on-demand one
	}
	if _, _, ok := opimpl.OpFor(d.Qualname); !ok {
		return ""
	}
	tab, err := d.Package.OpTable(ctx)
	if err != nil {
		return ""
	}
	return renderCompilerStack(d.Package, tab.ForCallable(d.Qualname))
}

// renderCompilerStack writes the section: one line per op (the
// callable's own first), its places in the stack's order, each a link into
// the mirror.
func renderCompilerStack(ps *session.Package, ans opimpl.Answer) string {
	if len(ans.Impls) == 0 {
		return ""
	}
	type place struct {
		labels []string
		im     opimpl.Impl
	}
	byOp := map[string][]*place{}
	at := map[string]*place{}
	for _, im := range ans.Impls {
		op := im.Op.Packet().String()
		if im.Kind == opimpl.KindRef {
			op = ans.Ops[0].Packet().String() // refs belong to the callable
		}
		label := im.Label()
		if im.Op.Overload != "" && im.Kind != opimpl.KindRef {
			label += " (" + im.Op.Overload + ")"
		}
		key := fmt.Sprintf("%s:%d", im.Path, im.Line)
		if p, ok := at[key]; ok {
			if !containsStr(p.labels, label) {
				p.labels = append(p.labels, label)
			}
			continue
		}
		p := &place{labels: []string{label}, im: im}
		at[key] = p
		byOp[op] = append(byOp[op], p)
	}
	var b strings.Builder
	info, m := ps.Info(), ps.Mirror()
	fmt.Fprintf(&b, "\n**Compiler stack** in %s %s:", info.Name, info.Version)
	shownOps, hidden := 0, 0
	for _, o := range ans.Ops {
		places := byOp[o.Packet().String()]
		if len(places) == 0 {
			continue
		}
		if shownOps == maxHoverOps {
			hidden += len(places)
			continue
		}
		shownOps++
		var parts []string
		for i, p := range places {
			if i == maxHoverPlaces {
				hidden += len(places) - i
				break
			}
			im := p.im
			local := filepath.Join(m.SiteDir, filepath.FromSlash(im.Path))
			u := url.URL{Scheme: "file", Path: local, Fragment: fmt.Sprintf("L%d", im.Line+1)}
			part := fmt.Sprintf("%s [`%s:%d`](%s)", strings.Join(p.labels, ", "), im.Path, im.Line+1, u.String())
			if im.Cond != "" {
				part += fmt.Sprintf(" if `%s`", im.Cond)
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(&b, "  \n`%s`: %s", o.Packet(), strings.Join(parts, " · "))
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "  \n… and %d more: go to implementation lists them all", hidden)
	}
	b.WriteString("\n")
	return b.String()
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
