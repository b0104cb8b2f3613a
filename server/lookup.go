package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// target is what a lookup found: a definition in a mirrored package, with
// what is known about it.
type target struct {
	qualname   string // what the cursor named, alias-resolved
	ref        pybuf.Ref
	spec       remote.Spec
	pkg        *pkgState
	kind       string
	signature  string
	docSummary string
	decorators []string
	chain      []string // modules that re-export it
	via        string   // "index", "helper" or "stub"
	missing    bool     // the package is on the target, but has no such name

	localPath  string // file in the mirror; "" when the object has no source
	targetPath string // same file on the target
	line, col  int    // 0-based; col in UTF-8 bytes
	nameLen    int
	name       string // the definition's own name, at line and col

	hover string // rendered Markdown, set on targets from the lookup cache

	paramText string // a keyword's parameter as written in the def ("dim: int = -1")
}

// refZero is the reference of a cached target: cached answers serve any
// place in any document that names the same object.
var refZero pybuf.Ref

// lookup resolves the name at pos in a document. It returns (nil, nil) when
// torchlsp has nothing to say: the user's own names, the standard library,
// packages the target does not have. In a file of a mirrored package every
// name is answered from the package's index (navigate.go).
func (e *Engine) lookup(ctx context.Context, doc *Snapshot, pos Position) (*target, error) {
	ms, done, err := e.mirrorFile(ctx, doc)
	defer done()
	if err != nil || ms != nil {
		if err != nil {
			return nil, err
		}
		return e.navigate(ms, doc, pos)
	}
	var t *target
	if ref, ok := refAt(doc, pos); ok {
		t, err = e.resolve(ctx, ref.Qualname, ref)
	} else if ref, ok := keywordAt(doc, pos); ok {
		t, err = e.resolveKeyword(ctx, ref)
	}
	if err != nil || t != nil {
		return t, err
	}
	return e.navigateWorkspace(ctx, doc, pos)
}

// keywordAt returns the keyword argument named at pos, with its callee
// alias-resolved (dim in F.softmax(x, dim=-1)).
func keywordAt(doc *Snapshot, pos Position) (pybuf.Ref, bool) {
	if doc == nil {
		return pybuf.Ref{}, false
	}
	ref, ok := doc.Buffer().RefAt(pybuf.Pos{Line: pos.Line, Col: pos.Column})
	if !ok || ref.Kind != pybuf.KindKeyword || ref.Qualname == "" || ref.Keyword == "" {
		return pybuf.Ref{}, false
	}
	return ref, true
}

// resolveKeyword finds the parameter a keyword argument binds: in the
// callee's def, or in __init__ when the callee is a class. It returns
// (nil, nil) when the callee is not torchlsp's to answer or takes the
// keyword only through **kwargs. The answer is not cached: it is read from
// the callee's file, whose own lookup is.
func (e *Engine) resolveKeyword(ctx context.Context, ref pybuf.Ref) (*target, error) {
	fn, err := e.resolve(ctx, ref.Qualname, ref)
	if err != nil || fn == nil || fn.missing {
		return nil, err
	}
	if fn.kind == "class" {
		// Calling a class runs its __init__: the keywords are its parameters.
		if fn, err = e.resolve(ctx, ref.Qualname+".__init__", ref); err != nil || fn == nil || fn.missing {
			return nil, err
		}
	}
	if fn.localPath == "" {
		return nil, nil
	}
	p, ok, err := fn.pkg.index.Parameter(fn.localPath, fn.line, ref.Keyword)
	if err != nil || !ok {
		return nil, err
	}
	t := *fn
	t.qualname = fn.qualname + "(" + ref.Keyword + "=)"
	t.kind = "parameter"
	t.signature, t.docSummary, t.decorators, t.chain = "", "", nil, nil
	t.paramText = p.Text
	t.line, t.col, t.nameLen, t.name = p.Line, p.Col, len(p.Name), p.Name
	t.hover = ""
	return &t, nil
}

// refAt returns the alias-resolved name at pos in a document.
func refAt(doc *Snapshot, pos Position) (pybuf.Ref, bool) {
	if doc == nil {
		return pybuf.Ref{}, false
	}
	ref, ok := doc.Buffer().RefAt(pybuf.Pos{Line: pos.Line, Col: pos.Column})
	if !ok || ref.Qualname == "" || ref.Kind == pybuf.KindKeyword {
		return pybuf.Ref{}, false
	}
	return ref, true
}

// Resolve looks a dotted name up on the default target, as hover and
// definition do for a name in a buffer.
func (e *Engine) resolve(ctx context.Context, qualname string, ref pybuf.Ref) (*target, error) {
	s, err := e.session("")
	if err != nil {
		return nil, err
	}
	// Before the mirror is complete, the on-demand tree answers.
	ps, answered, err := s.answering(ctx, topPackage(qualname), qualname)
	defer answered()
	if errors.Is(err, ErrNotOnTarget) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ref.Module {
		// "import torch.nn.utils.spectral_norm" imports the module, though
		// torch.nn.utils.spectral_norm evaluates to the function.
		if sym, ok := ps.index.Module(qualname); ok {
			t := &target{qualname: qualname, ref: ref, spec: s.spec, pkg: ps}
			t.fromSymbol(sym, "index")
			return t, nil
		}
	}
	if cached, ok := ps.lookups.get(qualname); ok {
		t := *cached
		t.ref = ref
		return &t, nil
	}
	t, err := e.resolveUncached(ctx, s, ps, qualname, ref)
	if err != nil || t == nil {
		return t, err
	}
	ps.lookups.put(qualname, t)
	return t, nil
}

// resolveUncached looks qualname up in the package's index, then asks the
// target's helper what the index cannot settle.
func (e *Engine) resolveUncached(ctx context.Context, s *session, ps *pkgState, qualname string, ref pybuf.Ref) (*target, error) {
	t := &target{qualname: qualname, ref: ref, spec: s.spec, pkg: ps}
	res, err := ps.index.Resolve(qualname)
	if err == nil && res.Symbol.Kind != pyindex.KindImport {
		t.fromSymbol(res.Symbol, "index")
		t.chain = res.ReexportedFrom()
		return t, nil
	}
	if err != nil && !errors.Is(err, pyindex.ErrNotFound) {
		return nil, fmt.Errorf("resolve %s: %w", qualname, err)
	}
	// Static resolution could not settle it (names bound at run time,
	// compiled objects): ask the target's interpreter.
	return e.inspect(ctx, s, t)
}

// inspect asks the helper about an object, then maps its answer back into
// the mirror: its source line if it has one, else a .pyi stub that declares
// it.
func (e *Engine) inspect(ctx context.Context, s *session, t *target) (*target, error) {
	ctx, cancel := context.WithTimeout(ctx, e.opts.InspectTimeout)
	defer cancel()
	var insp remote.Inspection
	err := s.importing(ctx, topPackage(t.qualname), func() (err error) {
		insp, err = s.client.Inspect(ctx, t.qualname)
		return err
	})
	if remote.IsRemoteError(err, "AttributeError") || remote.IsRemoteError(err, "ModuleNotFoundError") {
		// The package is there but this name is not: say so, since code
		// written for another torch version often uses it.
		t.missing = true
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ask target %s about %s: %w", s.spec.Name, t.qualname, err)
	}
	t.via = "helper"
	t.kind = insp.Kind
	t.signature = insp.Signature
	t.docSummary = insp.DocSummary
	if insp.File != "" && insp.Line > 0 {
		if local, ok := t.pkg.mirror.LocalPath(insp.File); ok {
			t.localPath, t.targetPath = local, insp.File
			t.line = insp.Line - 1
			t.nameLen = len(lastComponent(t.qualname))
			t.name = lastComponent(insp.ObjectQualname)
			t.col = nameColumn(local, t.line, t.name)
			return t, nil
		}
	}
	for _, cand := range append(insp.StubCandidates, stubGuesses(t.qualname)...) {
		res, err := t.pkg.index.Resolve(cand)
		if err != nil || res.Symbol.Kind == pyindex.KindImport {
			continue
		}
		sig, doc := t.signature, t.docSummary
		t.fromSymbol(res.Symbol, "stub")
		if t.signature == "" {
			t.signature = sig
		}
		if t.docSummary == "" {
			t.docSummary = doc
		}
		return t, nil
	}
	return t, nil // known to the target, but no source or stub: hover only
}

func (t *target) fromSymbol(sym pyindex.Symbol, via string) {
	t.via = via
	t.kind = sym.Kind.String()
	t.signature = sym.Signature
	t.docSummary = sym.DocSummary
	t.decorators = sym.Decorators
	t.localPath = sym.Path
	t.targetPath = t.pkg.mirror.TargetPath(sym.Path)
	t.line, t.col = sym.Line, sym.Col
	t.nameLen, t.name = len(sym.Name), sym.Name
	if sym.Kind == pyindex.KindModule {
		t.signature = ""
	}
}

// relPath is the file's path inside the site dir ("torch/__init__.py").
func (t *target) relPath() string {
	if t.localPath == "" {
		return ""
	}
	rel, err := filepath.Rel(t.pkg.mirror.SiteDir, t.localPath)
	if err != nil {
		return filepath.Base(t.localPath)
	}
	return filepath.ToSlash(rel)
}

func lastComponent(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// stubGuesses are where torch declares, in .pyi stubs, the compiled
// functions it binds into its namespaces at import time (torch.add comes
// from torch._C._VariableFunctions through a globals() loop). They are
// tried after the helper's own candidates.
func stubGuesses(qualname string) []string {
	if topPackage(qualname) != "torch" {
		return nil
	}
	name := lastComponent(qualname)
	return []string{
		"torch._C._VariableFunctions." + name,
		"torch._C._nn." + name,
		"torch._C." + name,
	}
}
