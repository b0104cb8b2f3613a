package gates

import (
	"fmt"
	"io"
	"strings"
)

// FormatGates prints a flag's definition and every gate site, one
// `file:line:col  text` line each (1-based), as the `torchlsp gates FLAG`
// command shows them. An unknown key prints did-you-mean suggestions and
// returns an error.
func FormatGates(w io.Writer, cat *Catalog, key string) error {
	flags := cat.FlagsNamed(key)
	if len(flags) == 0 {
		if f, ok := cat.Flag(key); ok {
			flags = []*Flag{f}
		}
	}
	if len(flags) == 0 {
		msg := fmt.Sprintf("no config flag %q in torch %s", key, cat.Version)
		if sug := cat.Suggest(key); len(sug) > 0 {
			msg += "; did you mean " + strings.Join(sug, ", ") + "?"
		}
		return fmt.Errorf("%s", msg)
	}
	for _, f := range flags {
		fmt.Fprintf(w, "%s\n", f.FullKey())
		fmt.Fprintf(w, "  defined %s:%d:%d", f.File, f.Line+1, f.Col+1)
		if f.Type != "" {
			fmt.Fprintf(w, "  type %s", f.Type)
		}
		if f.Default != "" {
			fmt.Fprintf(w, "  default %s", f.Default)
		}
		fmt.Fprintln(w)
		if env := f.Env(); len(env) > 0 {
			fmt.Fprintf(w, "  env %s\n", strings.Join(env, ", "))
		}
		if f.Alias != "" {
			fmt.Fprintf(w, "  alias of %s\n", f.Alias)
		}
		if f.Justknob != "" {
			fmt.Fprintf(w, "  justknob %s\n", f.Justknob)
		}
		for _, line := range strings.Split(f.Doc, "\n") {
			if line != "" {
				fmt.Fprintf(w, "  # %s\n", line)
			}
		}
		for mode, fl := range cat.Modes {
			if v, ok := fl[f.Key]; ok && f.Module == "torch._inductor.config" {
				fmt.Fprintf(w, "  mode %q sets it to %s\n", mode, v)
			}
		}
		sites := cat.SiteMap[f.FullKey()]
		fmt.Fprintf(w, "  %d gate sites\n", len(sites))
		for _, s := range sites {
			tag := ""
			if s.Kind != KindRead {
				tag = " [" + string(s.Kind) + "]"
			}
			fmt.Fprintf(w, "%s:%d:%d  %s%s\n", s.File, s.Line+1, s.Col+1, s.Text, tag)
		}
	}
	return nil
}

// formatSiteLine is the one-line form of a site used by the tests' expected
// lists: key file:line:col kind [cond: text].
func formatSiteLine(key string, s Site) string {
	out := fmt.Sprintf("%s %s:%d:%d %s", key, s.File, s.Line+1, s.Col+1, s.Kind)
	if s.InCondition {
		out += " cond: " + s.Condition
	}
	return out
}
