package session

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// Definition is what a name resolved to: where a package of the target
// defines it, and what is known about it. Definitions may be shared with
// the lookup cache: copy one before changing it.
type Definition struct {
	Qualname   string // the name resolved, alias-resolved
	Target     string // the target's name
	Package    *Package
	Kind       string // "function", "class", "module", "parameter", … or the helper's word
	Signature  string
	DocSummary string
	Decorators []string
	Chain      []string // modules that re-export it
	Via        string   // "index", "helper" or "stub"
	Missing    bool     // the package is on the target, but has no such name

	LocalPath  string // file in the mirror; "" when the object has no source
	TargetPath string // same file on the target
	Line, Col  int    // 0-based; Col in UTF-8 bytes
	NameLen    int
	DefName    string // the definition's own name, at Line and Col (Name is the qualified name's last part)

	ParamText string // a keyword's parameter as written in the def ("dim: int = -1")
	// InSource marks an answer of DefinitionAt that lies in the file
	// asked about.
	InSource bool
	// Hover is the rendered hover of a definition from the lookup cache
	// (Options.HoverText); "" otherwise.
	Hover string
	// Also are the other definitions of a name with several (an
	// attribute of a value whose declared type is a union), as
	// DefinitionAt answers them; each has no Also of its own.
	Also []*Definition
}

// RelPath is the definition's file inside the site dir
// ("torch/__init__.py").
func (d *Definition) RelPath() string {
	if d.LocalPath == "" {
		return ""
	}
	rel, err := filepath.Rel(d.Package.mirror.SiteDir, d.LocalPath)
	if err != nil {
		return filepath.Base(d.LocalPath)
	}
	return filepath.ToSlash(rel)
}

// Resolve looks a dotted name up on the target: in the index of its
// package (the complete mirror, or the on-demand tree before it), then,
// for names bound at run time, through the helper. module says the name
// was imported as a module ("import torch.nn.utils.spectral_norm"). It
// returns (nil, nil) for names whose package torchlsp does not answer for.
func (s *Session) Resolve(ctx context.Context, qualname string, module bool) (*Definition, error) {
	ps, answered, err := s.Answering(ctx, TopPackage(qualname), qualname)
	defer answered()
	if errors.Is(err, ErrNotOnTarget) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if module {
		// "import torch.nn.utils.spectral_norm" imports the module, though
		// torch.nn.utils.spectral_norm evaluates to the function.
		if sym, ok := ps.index.Module(qualname); ok {
			d := s.newDefinition(ps, qualname)
			d.fromSymbol(sym, "index")
			return d, nil
		}
	}
	if cached, ok := ps.lookups.get(qualname); ok {
		return cached, nil
	}
	d, err := s.resolveUncached(ctx, ps, qualname)
	if err != nil || d == nil {
		return d, err
	}
	ps.lookups.put(qualname, d, s.opts.HoverText)
	return d, nil
}

func (s *Session) newDefinition(ps *Package, qualname string) *Definition {
	return &Definition{Qualname: qualname, Target: s.spec.Name, Package: ps}
}

// ResolveKeyword finds the parameter a keyword argument binds (dim in
// F.softmax(x, dim=-1)): in the callee's def, or in __init__ when the
// callee is a class. It returns (nil, nil) when the callee is not
// torchlsp's to answer or takes the keyword only through **kwargs. The
// answer is not cached: it is read from the callee's file, whose own
// lookup is.
func (s *Session) ResolveKeyword(ctx context.Context, callee, keyword string) (*Definition, error) {
	fn, err := s.Resolve(ctx, callee, false)
	if err != nil || fn == nil || fn.Missing {
		return nil, err
	}
	if fn.Kind == "class" {
		// Calling a class runs its __init__: the keywords are its parameters.
		if fn, err = s.Resolve(ctx, callee+".__init__", false); err != nil || fn == nil || fn.Missing {
			return nil, err
		}
	}
	if fn.LocalPath == "" {
		return nil, nil
	}
	p, ok, err := fn.Package.index.Parameter(fn.LocalPath, fn.Line, keyword)
	if err != nil || !ok {
		return nil, err
	}
	d := *fn
	d.Qualname = fn.Qualname + "(" + keyword + "=)"
	d.Kind = "parameter"
	d.Signature, d.DocSummary, d.Decorators, d.Chain = "", "", nil, nil
	d.ParamText = p.Text
	d.Line, d.Col, d.NameLen, d.DefName = p.Line, p.Col, len(p.Name), p.Name
	d.Hover = ""
	return &d, nil
}

// resolveUncached looks qualname up in the package's index, then asks the
// target's helper what the index cannot settle.
func (s *Session) resolveUncached(ctx context.Context, ps *Package, qualname string) (*Definition, error) {
	d := s.newDefinition(ps, qualname)
	res, err := ps.index.Resolve(qualname)
	if err == nil && res.Symbol.Kind != pyindex.KindImport {
		d.fromSymbol(res.Symbol, "index")
		d.Chain = res.ReexportedFrom()
		return d, nil
	}
	if err != nil && !errors.Is(err, pyindex.ErrNotFound) {
		return nil, fmt.Errorf("resolve %s: %w", qualname, err)
	}
	if s.ReadOnly() {
		return nil, nil // only the target's interpreter could say
	}
	// Static resolution could not settle it (names bound at run time,
	// compiled objects): ask the target's interpreter.
	return s.inspect(ctx, d)
}

// inspect asks the helper about an object, then maps its answer back into
// the mirror: its source line if it has one, else a .pyi stub that declares
// it.
func (s *Session) inspect(ctx context.Context, d *Definition) (*Definition, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.InspectTimeout)
	defer cancel()
	var insp remote.Inspection
	err := s.importing(ctx, TopPackage(d.Qualname), func() (err error) {
		insp, err = s.client.Inspect(ctx, d.Qualname)
		return err
	})
	if remote.IsRemoteError(err, "AttributeError") || remote.IsRemoteError(err, "ModuleNotFoundError") {
		// The package is there but this name is not: say so, since code
		// written for another torch version often uses it.
		d.Missing = true
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ask target %s about %s: %w", s.spec.Name, d.Qualname, err)
	}
	d.Via = "helper"
	d.Kind = insp.Kind
	d.Signature = insp.Signature
	d.DocSummary = insp.DocSummary
	if insp.File != "" && insp.Line > 0 {
		if local, ok := d.Package.mirror.LocalPath(insp.File); ok {
			d.LocalPath, d.TargetPath = local, insp.File
			d.Line = insp.Line - 1
			d.NameLen = len(lastComponent(d.Qualname))
			d.DefName = lastComponent(insp.ObjectQualname)
			d.Col = nameColumn(local, d.Line, d.DefName)
			return d, nil
		}
	}
	for _, cand := range append(insp.StubCandidates, stubGuesses(d.Qualname)...) {
		res, err := d.Package.index.Resolve(cand)
		if err != nil || res.Symbol.Kind == pyindex.KindImport {
			continue
		}
		sig, doc := d.Signature, d.DocSummary
		d.fromSymbol(res.Symbol, "stub")
		if d.Signature == "" {
			d.Signature = sig
		}
		if d.DocSummary == "" {
			d.DocSummary = doc
		}
		return d, nil
	}
	return d, nil // known to the target, but no source or stub: hover only
}

func (d *Definition) fromSymbol(sym pyindex.Symbol, via string) {
	d.Via = via
	d.Kind = sym.Kind.String()
	d.Signature = sym.Signature
	d.DocSummary = sym.DocSummary
	d.Decorators = sym.Decorators
	d.LocalPath = sym.Path
	d.TargetPath = d.Package.mirror.TargetPath(sym.Path)
	d.Line, d.Col = sym.Line, sym.Col
	d.NameLen, d.DefName = len(sym.Name), sym.Name
	if sym.Kind == pyindex.KindModule {
		d.Signature = ""
	}
}

// DefinitionAt answers for the name at byte offset off of a file from the
// package's index alone (pyindex.DefinitionAt: the file's scopes, then
// imports, attributes, instances and keywords through the index), with no
// round trip to the target. mirrored is the file's path under the site
// dir when it is a file of the package (a definition in it then has its
// place on the target), "" for the user's own files. It returns (nil, nil)
// when the name is a builtin or its definition cannot be known without
// running the code.
func (s *Session) DefinitionAt(ps *Package, src pyindex.Source, mirrored string, off int) (*Definition, error) {
	pd, err := ps.index.DefinitionAt(src, off)
	if errors.Is(err, pyindex.ErrNotFound) || errors.Is(err, pyindex.ErrNoName) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := s.indexDefinition(ps, src, mirrored, pd)
	for _, a := range pd.Also {
		d.Also = append(d.Also, s.indexDefinition(ps, src, mirrored, a))
	}
	return d, nil
}

// indexDefinition is one answer of the index's DefinitionAt.
func (s *Session) indexDefinition(ps *Package, src pyindex.Source, mirrored string, pd pyindex.Definition) *Definition {
	d := s.newDefinition(ps, pd.Symbol.Qualname)
	d.fromSymbol(pd.Symbol, "index")
	d.Chain = pyindex.Resolution{Chain: pd.Chain}.ReexportedFrom()
	d.InSource = pd.InSource
	if pd.InSource && src.Rel == "" && mirrored != "" {
		// The document's own copy (the site view, an on-demand tree): its
		// place on the target is the file the document mirrors.
		d.TargetPath = path.Join(ps.mirror.TargetDir, mirrored)
	}
	if pd.Symbol.Kind == pyindex.KindParameter {
		d.ParamText, d.Signature = pd.Symbol.Signature, ""
	}
	return d
}

func lastComponent(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// Name is the last part of the qualified name ("Linear").
func (d *Definition) Name() string { return lastComponent(d.Qualname) }

// stubGuesses are where torch declares, in .pyi stubs, the compiled
// functions it binds into its namespaces at import time (torch.add comes
// from torch._C._VariableFunctions through a globals() loop). They are
// tried after the helper's own candidates.
func stubGuesses(qualname string) []string {
	if TopPackage(qualname) != "torch" {
		return nil
	}
	name := lastComponent(qualname)
	return []string{
		"torch._C._VariableFunctions." + name,
		"torch._C._nn." + name,
		"torch._C." + name,
	}
}

// nameColumn finds the byte column of name on a line of a file, preferring
// the name after "def " or "class "; 0 when it cannot tell. The file is a
// mirror's, read as the cache's files are: opened without following a
// link at its name and without blocking, a regular file, of at most the
// mirror's per-file limit.
func nameColumn(path string, line int, name string) int {
	data, err := localfile.ReadNoFollow(path, remote.DefaultMirrorLimits().MaxFileBytes)
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
