// Package pybuf analyses the Python buffers a user has open: it parses the
// text with tree-sitter, collects import bindings and simple aliases per
// scope, and tells which object of an installed package a position names
// (cursor on Linear in nn.Linear(3, 4) names torch.nn.Linear).
//
// Buffers are often half-typed. Where tree-sitter could not make sense of
// the text, a token scan of the line around the cursor recovers dotted
// chains and resolves them through the bindings of the parts that did
// parse.
//
// A Buffer holds no tree-sitter resources: it is built on a syntax.Tree,
// the flattened tree of package syntax (the one Python syntax layer), so a
// Buffer needs no Close and is safe for concurrent readers. Its Tree is
// the one diagnostics read: a version of a buffer is parsed once.
//
// Answering costs steps in proportion to the text: analysis visits each
// node a bounded number of times, and RefAt costs a binary search and a
// bounded walk (chains of at most maxChain names, a fallback read of at
// most maxFallbackLine bytes), whatever the buffer's size.
package pybuf

import (
	"fmt"

	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Pos is a place in a buffer: 0-based line, and 0-based column counted in
// UTF-8 bytes within the line. Lines end at "\n"; a "\r" before it belongs
// to the line ending, not to the line.
type Pos = syntax.Pos

// Span is a half-open stretch of a buffer.
type Span = syntax.Span

// Kind says what sort of reference a Ref is.
type Kind int

const (
	// KindName is a bare name, or the first name of a dotted chain.
	KindName Kind = iota + 1
	// KindAttribute is an attribute of a dotted chain (Linear in nn.Linear).
	KindAttribute
	// KindCall is the last name of a callee (compile in torch.compile(fn)).
	KindCall
	// KindImport is a name inside an import statement.
	KindImport
	// KindKeyword is the name of a keyword argument (mode in
	// torch.compile(fn, mode="max-autotune")); Ref.Qualname is the callee.
	KindKeyword
)

func (k Kind) String() string {
	switch k {
	case KindName:
		return "name"
	case KindAttribute:
		return "attribute"
	case KindCall:
		return "call"
	case KindImport:
		return "import"
	case KindKeyword:
		return "keyword"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Ref is what a position in a buffer names.
type Ref struct {
	// Qualname is the fully qualified dotted name, e.g. "torch.nn.Linear".
	// For KindKeyword it names the callee; Keyword names the argument.
	Qualname string
	// Span is the identifier under the cursor. When AfterDot is set it is
	// the empty span at the cursor.
	Span Span
	Kind Kind
	// Write is set when the name is assigned to (the last name of an
	// assignment target, a for target, a with/except "as" target).
	Write bool
	// Keyword is the keyword argument's name for KindKeyword.
	Keyword string
	// AfterDot is set when the cursor follows "obj." with nothing typed
	// after the dot yet; Qualname then names obj.
	AfterDot bool
	// Module is set for a name an import statement reads as a module path
	// (import a.b, from a.b import c: a and b), which names the module
	// even where its package binds something else under that name.
	Module bool
}

// ScopeKind says what sort of block a scope is: pyscope's kinds, which
// the buffer's name table is built with.
type ScopeKind = pyscope.ScopeKind

// The kinds of scope, as Python's name resolution tells them apart.
const (
	ScopeModule        = pyscope.ScopeModule
	ScopeClass         = pyscope.ScopeClass
	ScopeFunction      = pyscope.ScopeFunction
	ScopeLambda        = pyscope.ScopeLambda
	ScopeComprehension = pyscope.ScopeComprehension
)

// Scope is a block that binds names: the module, a class body, a function,
// a lambda or a comprehension.
type Scope struct {
	Kind ScopeKind
	// Name is the function or class name; empty for the others.
	Name string
	Span Span
}

// Import is one name bound by an import statement.
type Import struct {
	// Name is the local name bound ("F" for "import torch.nn.functional as
	// F", "torch" for "import torch.nn"), or "*" for a wildcard import.
	Name string
	// Qualname is what Name refers to ("torch.nn.functional", "torch").
	// For a wildcard it is the module. Empty for relative imports, which
	// name the user's own code.
	Qualname string
	// Module is the module written in the statement: the dotted name of
	// "import a.b", or the "from" part (with its leading dots when
	// relative).
	Module   string
	Relative bool
	// Imported is, for a from-import, the name imported before any alias
	// ("c" in "from a.b import c as d"); it may name a submodule.
	Imported string
	// NameSpan is the identifier that binds Name (the alias when there is
	// one); Stmt is the whole statement.
	NameSpan Span
	Stmt     Span
	Scope    Scope
	// Alternative is set for an import in an except clause, a fallback
	// for the import of the same name in the try body.
	Alternative bool
}

// ValueKind says what sort of expression a Value is.
type ValueKind int

const (
	// ValueOther is any expression not singled out below.
	ValueOther ValueKind = iota + 1
	// ValueString is a string literal (or implicitly concatenated ones).
	ValueString
	// ValueDict is a dict display {...}.
	ValueDict
	// ValueConstant is True, False, None, or a number.
	ValueConstant
	// ValueName is a name or dotted chain of names (torch.float16).
	ValueName
)

// Value is an argument expression of a call.
type Value struct {
	Kind ValueKind
	// Text is the expression's source text.
	Text string
	Span Span
	// Str is the unquoted value of a ValueString.
	Str string
	// Qualname is what a ValueName resolves to, when it does.
	Qualname string
	// Entries are the entries of a ValueDict whose keys are string
	// literals, in source order.
	Entries []Entry
}

// Entry is one "key": value entry of a dict display.
type Entry struct {
	Key     string // unquoted
	KeySpan Span   // the key literal, quotes included
	Value   Value
}

// Keyword is a keyword argument of a call.
type Keyword struct {
	Name     string
	NameSpan Span
	Value    Value
}

// Call is a call whose callee resolves to a known qualified name.
type Call struct {
	Qualname   string
	Span       Span // the whole call
	CalleeSpan Span
	Args       []Value // positional arguments; *args are left out
	Keywords   []Keyword
}
