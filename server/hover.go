package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

// Hover describes the torch object at pos: its signature, the summary of
// its docstring, where it is defined on the target, and which torch and
// target answered. It returns nil when torchlsp has nothing to say.
func (e *Engine) Hover(ctx context.Context, doc *Snapshot, pos Position) (*Hover, error) {
	ft, span, err := e.flagAt(ctx, doc, pos)
	if err != nil && !errors.Is(err, errCatalog) {
		return nil, err // the target is unreachable: do not try it twice
	}
	if ft != nil {
		e.withValue(ctx, ft)
		r := spanRange(span)
		return &Hover{Markdown: renderFlagHover(ft), Range: &r}, nil
	}
	t, err := e.lookup(ctx, doc, pos)
	if err != nil || t == nil {
		return nil, err
	}
	md := t.hover
	if md == "" {
		md = renderHover(t)
	}
	if !t.missing && t.localPath != "" && e.siteCompact(t.spec.Name) {
		md = renderSiteHover(t, e.siteHanded(t.spec.Name))
	}
	if t.kind != "parameter" {
		md += e.compilerStackSection(ctx, t)
	}
	// The range is this request's name: a cached target carries none.
	return &Hover{Markdown: md, Range: refRange(t.ref)}, nil
}

// refRange is the span of the name hovered, or nil right after a dot.
func refRange(ref pybuf.Ref) *Range {
	if ref.Span == (pybuf.Span{}) || ref.AfterDot {
		return nil
	}
	r := spanRange(ref.Span)
	return &r
}

// renderHover writes the hover's Markdown.
func renderHover(t *target) string {
	var b strings.Builder
	if t.missing {
		fmt.Fprintf(&b, "`%s` does not exist in %s %s on target **%s**.\n", t.qualname, t.pkg.info.Name, t.pkg.info.Version, t.spec.Name)
		return b.String()
	}
	name := lastComponent(t.qualname)
	b.WriteString("```python\n")
	switch t.kind {
	case "function", "builtin", "method", "method_descriptor":
		for _, d := range t.decorators {
			fmt.Fprintf(&b, "@%s\n", d)
		}
		sig := t.signature
		if sig == "" {
			sig = "(...)"
		}
		fmt.Fprintf(&b, "def %s%s\n", name, sig)
	case "class":
		fmt.Fprintf(&b, "class %s%s\n", name, t.signature)
	case "module":
		fmt.Fprintf(&b, "module %s\n", t.qualname)
	case "parameter":
		fmt.Fprintf(&b, "(parameter) %s\n", t.paramText)
	default:
		fmt.Fprintf(&b, "%s%s\n", name, t.signature)
	}
	b.WriteString("```\n")
	fmt.Fprintf(&b, "`%s`", t.qualname)
	if len(t.chain) > 0 {
		fmt.Fprintf(&b, " · re-exported by %s", strings.Join(t.chain, ", "))
	}
	b.WriteString("\n\n")
	if t.docSummary != "" {
		b.WriteString(t.docSummary)
		b.WriteString("\n\n")
	}
	b.WriteString("---\n")
	if t.targetPath != "" {
		fmt.Fprintf(&b, "Defined at `%s:%d` on target **%s**", t.targetPath, t.line+1, t.spec.Name)
		if t.localPath != "" {
			u := url.URL{Scheme: "file", Path: t.localPath, Fragment: fmt.Sprintf("L%d", t.line+1)}
			fmt.Fprintf(&b, " ([`%s:%d`](%s))", t.relPath(), t.line+1, u.String())
		}
		b.WriteString("  \n")
	} else {
		fmt.Fprintf(&b, "No Python source on target **%s** (compiled)  \n", t.spec.Name)
	}
	fmt.Fprintf(&b, "%s %s", t.pkg.info.Name, t.pkg.info.Version)
	if t.via == "helper" {
		b.WriteString(" · answered by the target's interpreter")
	}
	b.WriteString("\n")
	return b.String()
}

// renderSiteHover is the hover beside a Python server that reads the
// target's site: that server shows the signature and the docstring from
// the same files, so this one says only what it alone knows — where the
// definition is on the target, which target and which version.
func renderSiteHover(t *target, site *SiteResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`%s:%d` on target **%s** · %s %s", t.targetPath, t.line+1, t.spec.Name, t.pkg.info.Name, t.pkg.info.Version)
	if t.via == "helper" {
		b.WriteString(" · answered by the target's interpreter")
	}
	local := t.localPath
	if p, ok := site.sitePath(t.pkg.mirror, local); ok {
		local = p
	}
	u := url.URL{Scheme: "file", Path: local, Fragment: fmt.Sprintf("L%d", t.line+1)}
	fmt.Fprintf(&b, " ([open](%s))\n", u.String())
	return b.String()
}
