package navigation

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/session"
)

// flagTarget is what hover and definition know about a config flag.
type flagTarget struct {
	flag    *gates.Flag
	cat     *gates.Catalog
	pkg     *session.Package
	target  string
	value   *remote.ConfigValue // the target's effective value, when known
	pending bool                // the target is still being asked
	valErr  error
}

// renderFlagHover writes a config flag's hover: its definition, what the
// target computes for it, the env vars that set it, and every place torch
// reads it.
func renderFlagHover(ft *flagTarget) string {
	f := ft.flag
	var b strings.Builder
	b.WriteString("```python\n")
	typ := ""
	if f.Type != "" {
		typ = ": " + f.Type
	}
	fmt.Fprintf(&b, "%s%s = %s\n", f.Key, typ, oneLineShort(f.Default, 160))
	b.WriteString("```\n")
	info, m := ft.pkg.Info(), ft.pkg.Mirror()
	fmt.Fprintf(&b, "`%s` · config flag of %s %s\n\n", f.FullKey(), info.Name, info.Version)
	if f.Doc != "" {
		b.WriteString(strings.TrimSpace(f.Doc))
		b.WriteString("\n\n")
	}
	switch {
	case ft.value != nil:
		fmt.Fprintf(&b, "On target **%s**: `%s`", ft.target, ft.value.Repr)
		if ft.value.DefaultRepr != "" && ft.value.DefaultRepr != ft.value.Repr {
			fmt.Fprintf(&b, " (default `%s`)", ft.value.DefaultRepr)
		}
		b.WriteString("  \n")
	case ft.pending:
		fmt.Fprintf(&b, "On target **%s**: being read (torch is importing there); hover again in a moment  \n", ft.target)
	case ft.valErr != nil:
		fmt.Fprintf(&b, "On target **%s**: could not be read: %v  \n", ft.target, ft.valErr)
	}
	if env := f.Env(); len(env) > 0 {
		parts := make([]string, 0, len(env))
		for _, v := range f.EnvForce {
			parts = append(parts, "`"+v+"` (forces the value)")
		}
		for _, v := range f.EnvDefault {
			parts = append(parts, "`"+v+"` (sets the default, read once when torch is imported)")
		}
		fmt.Fprintf(&b, "Environment: %s  \n", strings.Join(parts, ", "))
	}
	if f.Alias != "" {
		fmt.Fprintf(&b, "Alias of `%s`  \n", f.Alias)
	}
	if f.Justknob != "" {
		fmt.Fprintf(&b, "JustKnob `%s`  \n", f.Justknob)
	}
	sites := ft.cat.Sites(f.FullKey())
	if len(sites) > 0 {
		fmt.Fprintf(&b, "\nRead at %d place%s in torch:\n", len(sites), plural(len(sites)))
		const maxSites = 12
		for i, st := range sites {
			if i == maxSites {
				fmt.Fprintf(&b, "- … and %d more (Find References lists them all)\n", len(sites)-maxSites)
				break
			}
			local := filepath.Join(m.SiteDir, filepath.FromSlash(st.File))
			u := url.URL{Scheme: "file", Path: local, Fragment: fmt.Sprintf("L%d", st.Line+1)}
			fmt.Fprintf(&b, "- [`%s:%d`](%s) `%s`\n", st.File, st.Line+1, u.String(), oneLineShort(st.Text, 100))
		}
	}
	def := m.TargetPath(filepath.Join(m.SiteDir, filepath.FromSlash(f.File)))
	fmt.Fprintf(&b, "\n---\nDefined at `%s:%d` on target **%s**\n", def, f.Line+1, ft.target)
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func oneLineShort(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Gates runs torchlsp.gates: a config flag's definition and every place
// the target's torch reads it, as text and as Markdown.
func (n *Navigator) Gates(ctx context.Context, args api.GatesArgs) (*api.CommandResult, error) {
	var b strings.Builder
	if err := n.writeGates(ctx, args.Target, args.Flag, &b); err != nil {
		return &api.CommandResult{Text: b.String()}, err // what was written before the error, as the command line printed it
	}
	return &api.CommandResult{Markdown: "```\n" + b.String() + "```\n", Text: b.String()}, nil
}

// writeGates prints a config flag's definition and every place the
// target's torch reads it.
func (n *Navigator) writeGates(ctx context.Context, target, key string, w io.Writer) error {
	s, err := n.deps.Session(target)
	if err != nil {
		return err
	}
	cat, ps, err := s.Catalog(ctx)
	if err != nil {
		return err
	}
	info := ps.Info()
	if !cat.HasCompile && len(cat.Modules) == 0 {
		return fmt.Errorf("torch %s on target %s has no config modules (it predates torch.compile)", info.Version, s.Spec().Name)
	}
	fmt.Fprintf(w, "# torch %s on target %s; paths are relative to %s\n", info.Version, s.Spec().Name, info.Site)
	return gates.FormatGates(w, cat, key)
}
