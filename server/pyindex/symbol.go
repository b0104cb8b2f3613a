// Package pyindex indexes the Python sources of mirrored packages (a site
// directory such as the local copy of a target's site-packages) with
// tree-sitter, and resolves dotted names such as "torch.nn.Linear" to the
// place they are defined, following re-exports the way Python's import
// system binds names.
//
// The index never imports or runs the code it indexes. Names bound at run
// time only (globals() updates, setattr loops, compiled extensions without
// stubs) are invisible to it; stubs (.pyi) fill in for compiled modules.
// What Python binds predictably it follows: a rebinding assignment
// ("f = _registry.f") is the object it names, a config module's methods
// (install_config_module makes it a ConfigModule) are ConfigModule's, and a
// name a module's __getattr__ serves is a submodule or, wrapped in
// ErrDynamic, left to the interpreter.
package pyindex

import (
	"errors"
	"strings"
)

// ErrNotFound is wrapped by errors for names the index cannot resolve.
var ErrNotFound = errors.New("not found")

// ErrTextSearch is wrapped by the errors of a query whose TextSearch
// failed: the same query over the complete tree can still answer.
var ErrTextSearch = errors.New("the text search failed")

// Kind says what a Symbol is.
type Kind uint8

const (
	// KindModule is a module or package.
	KindModule Kind = iota + 1
	// KindClass is a class statement.
	KindClass
	// KindFunction is a def (or async def).
	KindFunction
	// KindVariable is a name bound by assignment or annotation.
	KindVariable
	// KindImport is an import statement whose target the index cannot
	// see: a module outside it ("import os") or a name its source module
	// binds only at run time. The symbol points at the import.
	KindImport
	// KindParameter is a parameter of a def or lambda (what a keyword
	// argument binds); Signature is the parameter as written. Navigation
	// (DefinitionAt) answers with it; the index keeps no parameters.
	KindParameter
)

// String names the kind in lower case.
func (k Kind) String() string {
	switch k {
	case KindModule:
		return "module"
	case KindClass:
		return "class"
	case KindFunction:
		return "function"
	case KindVariable:
		return "variable"
	case KindImport:
		return "import"
	case KindParameter:
		return "parameter"
	}
	return "unknown"
}

// Symbol is a definition found in the indexed sources.
type Symbol struct {
	Kind     Kind
	Name     string // the last component of Qualname
	Qualname string // canonical dotted name: Module + "." + the path inside it
	Module   string // dotted name of the module holding the definition
	File     string // file relative to the site dir, slash-separated
	Path     string // absolute path of File on this machine
	IsStub   bool   // File is a .pyi stub

	// Line and Col locate the name token (0-based line, UTF-8 byte column);
	// for a decorated def that is the name after "def", not the decorator.
	Line, Col int
	EndLine   int // last line of the statement, 0-based

	// Signature is, for functions, the parameter list and return annotation
	// on one line: "(self, x: int = 1) -> int". For classes it is the
	// parenthesised base list, and for annotated variables ": type".
	Signature  string
	Value      string   // right-hand side of an assignment, one line, shortened
	Decorators []string // decorator expressions, without "@"
	Bases      []string // base class expressions, keywords excluded
	DocSummary string   // first paragraph of the docstring, on one line
	Doc        string   // full docstring, dedented as inspect.cleandoc does
}

// HopKind says how a resolution step moved from one binding to the next.
type HopKind uint8

const (
	// HopImport followed an import statement.
	HopImport HopKind = iota + 1
	// HopStar followed a "from m import *".
	HopStar
	// HopStub fell back from a module's .py to its .pyi stub.
	HopStub
	// HopAlias followed an assignment "a = b.c".
	HopAlias
	// HopBase looked a member up in a base class.
	HopBase
)

// String names the hop kind.
func (k HopKind) String() string {
	switch k {
	case HopImport:
		return "import"
	case HopStar:
		return "star-import"
	case HopStub:
		return "stub"
	case HopAlias:
		return "alias"
	case HopBase:
		return "base-class"
	}
	return "unknown"
}

// Hop is one step taken while resolving: where a name was found bound
// before the search moved on. Hover uses it for "re-exported from".
type Hop struct {
	Kind   HopKind
	Module string // module in which the binding was found
	Name   string // the name looked up there
	File   string // file relative to the site dir
	Line   int    // 0-based line of the binding
	Target string // where the hop leads: a module or module.name
}

// Resolution is the answer to Resolve: the final definition and the hops
// taken to reach it.
type Resolution struct {
	Symbol Symbol
	Chain  []Hop
}

// ReexportedFrom lists, outermost first, the modules that re-export the
// symbol on the way to its definition.
func (r Resolution) ReexportedFrom() []string {
	var mods []string
	for _, h := range r.Chain {
		if h.Kind == HopImport || h.Kind == HopStar {
			if len(mods) == 0 || mods[len(mods)-1] != h.Module {
				mods = append(mods, h.Module)
			}
		}
	}
	return mods
}

// splitTopLevel splits s at commas outside brackets and strings.
func splitTopLevel(s string) []string {
	var parts []string
	start := 0
	walkTopLevel(s, 0, func(i int, c byte, depth int) bool {
		if c == ',' && depth == 0 {
			parts = append(parts, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
		return true
	})
	if last := strings.TrimSpace(s[start:]); last != "" {
		parts = append(parts, last)
	}
	return parts
}

// walkTopLevel calls visit for each byte of s from index from on that lies
// outside string literals, with the bracket depth once that byte is
// counted; it stops when visit returns false, and returns the depth then.
func walkTopLevel(s string, from int, visit func(i int, c byte, depth int) bool) int {
	depth := 0
	var quote byte
	for i := from; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '"' || c == '\'':
			quote = c
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		}
		if !visit(i, c, depth) {
			break
		}
	}
	return depth
}
