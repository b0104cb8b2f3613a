package navigation

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/session"
)

// Hover describes the torch object at pos: its signature, the summary of
// its docstring, where it is defined on the target, and which torch and
// target answered. It returns nil when torchlsp has nothing to say.
func (n *Navigator) Hover(ctx context.Context, doc *api.Snapshot, pos api.Position) (*api.Hover, error) {
	a, err := n.resolve(ctx, doc, pos, wantDefinition)
	if err != nil {
		return nil, err
	}
	if a.flag != nil {
		n.withValue(ctx, a.flag)
		r := api.RangeOf(a.flagSpan)
		return &api.Hover{Markdown: renderFlagHover(a.flag), Range: &r}, nil
	}
	d, ref := a.def, a.ref
	if d == nil {
		return nil, nil
	}
	md := d.Hover
	if md == "" {
		md = RenderHover(d)
	}
	if !d.Missing && d.LocalPath != "" && n.deps.SiteCompact(d.Target) {
		md = renderSiteHover(d, n.answerPath(d.Target, d.Package.Mirror(), d.LocalPath))
	}
	if d.Kind != "parameter" {
		md += n.CompilerStackSection(ctx, d)
	}
	// The range is this request's name: a cached definition serves any.
	h := &api.Hover{Markdown: md, Range: refRange(ref)}
	if d.Missing {
		info := d.Package.Info()
		h.Missing = fmt.Sprintf("%s does not exist in %s %s on target %s", d.Qualname, info.Name, info.Version, d.Target)
	}
	return h, nil
}

// refRange is the span of the name hovered, or nil right after a dot.
func refRange(ref pybuf.Ref) *api.Range {
	if ref.Span == (pybuf.Span{}) || ref.AfterDot {
		return nil
	}
	r := api.RangeOf(ref.Span)
	return &r
}

// RenderHover writes a definition's hover Markdown.
func RenderHover(t *session.Definition) string {
	var b strings.Builder
	info := t.Package.Info()
	if t.Missing {
		fmt.Fprintf(&b, "`%s` does not exist in %s %s on target **%s**.\n", t.Qualname, info.Name, info.Version, t.Target)
		return b.String()
	}
	name := t.Name()
	b.WriteString("```python\n")
	switch t.Kind {
	case "function", "builtin", "method", "method_descriptor":
		for _, d := range t.Decorators {
			fmt.Fprintf(&b, "@%s\n", d)
		}
		sig := t.Signature
		if sig == "" {
			sig = "(...)"
		}
		fmt.Fprintf(&b, "def %s%s\n", name, sig)
	case "class":
		fmt.Fprintf(&b, "class %s%s\n", name, t.Signature)
	case "module":
		fmt.Fprintf(&b, "module %s\n", t.Qualname)
	case "parameter":
		fmt.Fprintf(&b, "(parameter) %s\n", t.ParamText)
	default:
		fmt.Fprintf(&b, "%s%s\n", name, t.Signature)
	}
	b.WriteString("```\n")
	fmt.Fprintf(&b, "`%s`", t.Qualname)
	if len(t.Chain) > 0 {
		fmt.Fprintf(&b, " · re-exported by %s", strings.Join(t.Chain, ", "))
	}
	b.WriteString("\n\n")
	if t.DocSummary != "" {
		b.WriteString(t.DocSummary)
		b.WriteString("\n\n")
	}
	b.WriteString("---\n")
	if t.TargetPath != "" {
		fmt.Fprintf(&b, "Defined at `%s:%d` on target **%s**", t.TargetPath, t.Line+1, t.Target)
		if t.LocalPath != "" {
			u := url.URL{Scheme: "file", Path: t.LocalPath, Fragment: fmt.Sprintf("L%d", t.Line+1)}
			fmt.Fprintf(&b, " ([`%s:%d`](%s))", t.RelPath(), t.Line+1, u.String())
		}
		b.WriteString("  \n")
	} else {
		fmt.Fprintf(&b, "No Python source on target **%s** (compiled)  \n", t.Target)
	}
	fmt.Fprintf(&b, "%s %s", info.Name, info.Version)
	if t.Via == "helper" {
		b.WriteString(" · answered by the target's interpreter")
	}
	b.WriteString("\n")
	return b.String()
}

// renderSiteHover is the hover beside a Python server that reads the
// target's site: that server shows the signature and the docstring from
// the same files, so this one says only what it alone knows — where the
// definition is on the target, which target and which version.
func renderSiteHover(t *session.Definition, local string) string {
	var b strings.Builder
	info := t.Package.Info()
	fmt.Fprintf(&b, "`%s:%d` on target **%s** · %s %s", t.TargetPath, t.Line+1, t.Target, info.Name, info.Version)
	if t.Via == "helper" {
		b.WriteString(" · answered by the target's interpreter")
	}
	u := url.URL{Scheme: "file", Path: local, Fragment: fmt.Sprintf("L%d", t.Line+1)}
	fmt.Fprintf(&b, " ([open](%s))\n", u.String())
	return b.String()
}
