package remote

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The helper's answers are data from the target: each kind is cut to
// HelperLimits before anything keeps it, so a hostile or broken helper
// cannot make a hover, a log line or a cache entry large. Names and paths
// that are too long are dropped, not cut: a cut path names another file.

// cut returns s cut to at most n bytes on a character boundary, marked
// with "…", and made valid UTF-8.
func cut(s string, n int) string {
	if len(s) <= n {
		if !utf8.ValidString(s) {
			return strings.ToValidUTF8(s, "\uFFFD")
		}
		return s
	}
	const mark = "…"
	end := max(n-len(mark), 0)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return strings.ToValidUTF8(s[:end], "\uFFFD") + mark
}

// cutTail keeps the end of s (the useful part of a traceback).
func cutTail(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	const mark = "…"
	start := len(s) - max(n-len(mark), 0)
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return mark + strings.ToValidUTF8(s[start:], "\uFFFD")
}

// name returns s when it is short enough to be a name or path, else "".
func name(s string, l HelperLimits) string {
	if len(s) > l.MaxName || strings.ContainsRune(s, 0) {
		return ""
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func names(list []string, l HelperLimits) []string {
	if len(list) > l.MaxList {
		list = list[:l.MaxList]
	}
	out := list[:0:0]
	for _, s := range list {
		if s = name(s, l); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (h Hello) bounded(l HelperLimits) Hello {
	h.Python, h.Implementation, h.Platform = name(h.Python, l), name(h.Implementation, l), name(h.Platform, l)
	h.Executable, h.Prefix, h.BasePrefix, h.Cwd = name(h.Executable, l), name(h.Prefix, l), name(h.BasePrefix, l), name(h.Cwd, l)
	h.SysPath = names(h.SysPath, l)
	return h
}

func (e *RemoteError) bound(l HelperLimits) {
	e.Type = cut(e.Type, 200)
	e.Message = cut(e.Message, l.MaxDocSummary)
	e.Traceback = cutTail(e.Traceback, l.MaxDoc)
}

func (s ModuleSpec) bounded(l HelperLimits) ModuleSpec {
	s.Name, s.Origin = name(s.Name, l), name(s.Origin, l)
	s.SubmoduleSearchLocations = names(s.SubmoduleSearchLocations, l)
	return s
}

// bounded checks a package description: its paths decide where a mirror
// goes and what it maps, so a path over the limit is an error, not a cut.
func (p PackageInfo) bounded(l HelperLimits) (PackageInfo, error) {
	for _, f := range []struct{ what, v string }{{"name", p.Name}, {"location", p.Location}, {"site", p.Site}, {"member", p.Member}} {
		if name(f.v, l) != f.v {
			return PackageInfo{}, fmt.Errorf("package_info: the helper sent a %s of %d bytes, over the limit of %d: refused", f.what, len(f.v), l.MaxName)
		}
	}
	p.Distribution, p.Version, p.VersionSource, p.Origin = cut(p.Distribution, 200), cut(p.Version, 200), cut(p.VersionSource, 50), name(p.Origin, l)
	if p.FilesCount < 0 || p.Bytes < 0 {
		return PackageInfo{}, fmt.Errorf("package_info: the helper sent negative counts (%d files, %d bytes): refused", p.FilesCount, p.Bytes)
	}
	return p, nil
}

func (r ImportResult) bounded(l HelperLimits) ImportResult {
	r.Module, r.File = name(r.Module, l), name(r.File, l)
	return r
}

func (i Inspection) bounded(l HelperLimits) Inspection {
	i.Qualname, i.Kind, i.Type, i.Module = name(i.Qualname, l), cut(i.Kind, 50), name(i.Type, l), name(i.Module, l)
	i.ObjectQualname, i.File = name(i.ObjectQualname, l), name(i.File, l)
	if i.Line < 0 || i.Line > 1<<24 {
		i.Line = 0
	}
	i.Signature = cut(i.Signature, l.MaxSignature)
	i.Doc = cut(i.Doc, l.MaxDoc)
	i.DocSummary = cut(i.DocSummary, l.MaxDocSummary)
	i.StubCandidates = names(i.StubCandidates, l)
	i.Repr = cut(i.Repr, l.MaxRepr)
	return i
}

func (c Config) bounded(l HelperLimits) Config {
	c.Module, c.File, c.Source = name(c.Module, l), name(c.File, l), cut(c.Source, 50)
	for k, v := range c.Values {
		if name(k, l) != k {
			delete(c.Values, k)
			continue
		}
		v.Repr, v.DefaultRepr = cut(v.Repr, l.MaxRepr), cut(v.DefaultRepr, l.MaxRepr)
		if len(v.JSON) > l.MaxRepr {
			v.JSON = nil // the repr, cut, still says what it is
		}
		v.EnvNames = names(v.EnvNames, l)
		c.Values[k] = v
	}
	c.Missing = names(c.Missing, l)
	return c
}
