// Package pyscope computes the names of one Python file: its scopes, every
// place a name is bound, and every identifier with the role it plays (a
// name read, a name bound, an attribute, a keyword argument, a part of an
// import). Lookup answers which binding a name read at a place refers to,
// with Python's own rules: local, enclosing, global, builtin (LEGB); class
// bodies do not enclose the functions defined in them; comprehensions have
// a scope of their own; global and nonlocal move a binding; a function's
// default values, annotations and decorators and a class's bases are
// evaluated in the enclosing scope.
//
// A Table is built once per parse of a file (server/pybuf keeps one per
// version of an open buffer; server/pyindex builds them for the files of
// an index it navigates) and is plain, immutable data over the
// syntax.Tree: safe for concurrent readers. Building it visits every node
// once; a lookup costs a walk up the enclosing scopes and a binary search
// in each.
//
// Which of several bindings of a name a read refers to is the one in
// effect when the read runs, as far as the text shows it: in the read's
// own scope (and the class bodies and comprehensions around it, which run
// at once) the last binding made before the read, else the first one (a
// loop); from a function body, which runs later, the last binding of the
// enclosing scope, preferring one outside "if TYPE_CHECKING:".
// docs/NAVIGATION.md states these rules and measures them against
// Python's own symtable.
package pyscope

import (
	"fmt"
	"sort"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// ScopeKind says what sort of block a scope is.
type ScopeKind uint8

// The kinds of scope, as Python's name resolution tells them apart.
const (
	ScopeModule ScopeKind = iota + 1
	ScopeClass
	ScopeFunction
	ScopeLambda
	ScopeComprehension
)

func (k ScopeKind) String() string {
	switch k {
	case ScopeModule:
		return "module"
	case ScopeClass:
		return "class"
	case ScopeFunction:
		return "function"
	case ScopeLambda:
		return "lambda"
	case ScopeComprehension:
		return "comprehension"
	}
	return fmt.Sprintf("ScopeKind(%d)", int(k))
}

// MethodKind says what the first parameter of a function defined in a
// class body is bound to when it runs.
type MethodKind uint8

const (
	// NotMethod is a function outside a class body, or a lambda.
	NotMethod MethodKind = iota
	// InstanceMethod receives the instance (self).
	InstanceMethod
	// ClassMethod receives the class (cls): @classmethod, and __new__,
	// __init_subclass__ and __class_getitem__, which Python makes so.
	ClassMethod
	// StaticMethod receives nothing special (@staticmethod).
	StaticMethod
)

// Scope is a block that binds names: the module, a class body, a function,
// a lambda or a comprehension.
type Scope struct {
	Kind ScopeKind
	// Node is the def, class, lambda or comprehension node; the module
	// node for the module.
	Node   int32
	Parent int32 // the enclosing scope; -1 for the module
	Name   string
	// Method says, for a function defined directly in a class body, what
	// its first parameter receives; Self is that parameter's binding, -1
	// for none.
	Method MethodKind
	Self   int32

	names    map[string][]int32 // bindings made here, by name, in order of visibility
	local    map[string]bool    // names bound here without a definition (x += 1, del x)
	declared map[string]declaration
	// attrs are, for a class, the attributes its methods assign on the
	// instance (self.x = ...), by name: the first assignment in __init__,
	// else the first in source order.
	attrs map[string]int32
}

type declaration uint8

const (
	declGlobal declaration = iota + 1
	declNonlocal
)

// BindKind says how a binding gives a name its value.
type BindKind uint8

const (
	// BindDef is a def; Stmt is the function_definition.
	BindDef BindKind = iota + 1
	// BindClass is a class statement; Stmt is the class_definition.
	BindClass
	// BindParam is a parameter; Stmt is the def or lambda, Index its place.
	BindParam
	// BindAssign is an assignment, with or without a value ("x: int"
	// declares); Value is the right-hand side when the target is the name
	// alone.
	BindAssign
	// BindFor is a for target, of a statement or a comprehension.
	BindFor
	// BindWith is the target of "with ... as name".
	BindWith
	// BindExcept is the name of "except E as name".
	BindExcept
	// BindImport is "import a.b" (binding a) or "import a.b as c".
	BindImport
	// BindImportFrom is "from m import x" or "from m import x as y".
	BindImportFrom
	// BindStar is "from m import *": it binds what m exports.
	BindStar
	// BindWalrus is "name := value".
	BindWalrus
	// BindPattern is a capture of a match statement's pattern.
	BindPattern
)

var bindKindNames = [...]string{
	BindDef: "def", BindClass: "class", BindParam: "parameter", BindAssign: "assignment",
	BindFor: "for", BindWith: "with", BindExcept: "except", BindImport: "import",
	BindImportFrom: "from-import", BindStar: "star-import", BindWalrus: "walrus", BindPattern: "pattern",
}

func (k BindKind) String() string {
	if int(k) < len(bindKindNames) && bindKindNames[k] != "" {
		return bindKindNames[k]
	}
	return fmt.Sprintf("BindKind(%d)", int(k))
}

// Binding is one place a name gets a value.
type Binding struct {
	Name  string
	Kind  BindKind
	Scope int32 // the scope the name lives in, after global and nonlocal
	// Node is the identifier that binds (for BindImport without an
	// alias, the first name of the dotted module; for BindStar, the
	// wildcard).
	Node int32
	Stmt int32
	// Value is, for BindAssign and BindWalrus, the right-hand side when
	// the target is this name alone; -1 otherwise.
	Value int32
	// At is the byte offset from which the binding is in effect.
	At uint32
	// TypeChecking is set under "if TYPE_CHECKING:".
	TypeChecking bool
	// Declared is set for a binding made under a global or nonlocal
	// declaration, in a scope other than the one it binds in: it counts
	// only where that scope binds the name nowhere itself.
	Declared bool
	// Module is the module of an import as written, without leading
	// dots: "a.b" for "import a.b" and "from .a.b import c".
	Module string
	// Level is the number of leading dots of a from-import.
	Level int
	// Attr is the name a from-import imports.
	Attr string
	// Alias is set for "import a.b as c", which binds the module a.b
	// itself; "import a.b" binds a.
	Alias bool
	// Index is a parameter's place in its def, counting from 0.
	Index int
}

// Role says what an identifier does where it stands.
type Role uint8

const (
	// RoleRead is a name whose value is read (del x and the target of
	// x += 1 read it too).
	RoleRead Role = iota + 1
	// RoleBind is a name given a value here; Occurrence.Binding says which.
	RoleBind
	// RoleAttribute is the attribute of x.y (y): what it names depends on
	// what x is.
	RoleAttribute
	// RoleKeyword is the name of a keyword argument of a call, f(name=...):
	// it names a parameter of what f is.
	RoleKeyword
	// RoleModule is a part of the module path of an import statement (a
	// or b in "import a.b" and "from a.b import c"); Binding is set where
	// the part is also the name bound ("import a.b" binds a).
	RoleModule
	// RoleImported is the name a from-import takes from its module (c in
	// "from m import c as d"); Binding is the binding the import makes.
	RoleImported
	// RoleDeclared is a name in a global or nonlocal statement.
	RoleDeclared
)

var roleNames = [...]string{
	RoleRead: "read", RoleBind: "bind", RoleAttribute: "attribute", RoleKeyword: "keyword",
	RoleModule: "module", RoleImported: "imported", RoleDeclared: "declared",
}

func (r Role) String() string {
	if int(r) < len(roleNames) && roleNames[r] != "" {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// Occurrence is one identifier of the file.
type Occurrence struct {
	Node    int32
	Scope   int32 // the scope the identifier is evaluated in
	Role    Role
	Binding int32 // see Role; -1 when none
}

// Table is the scopes, bindings and identifiers of one file.
type Table struct {
	tree   *syntax.Tree
	scopes []Scope
	binds  []Binding
	occs   []Occurrence // by start offset
	stars  []int32      // the module's star imports, in order
	work   int          // steps the build took, for the tests that bound it
}

// Tree is the syntax tree the table was built from.
func (t *Table) Tree() *syntax.Tree { return t.tree }

// Scope returns scope i; 0 is the module.
func (t *Table) Scope(i int32) *Scope { return &t.scopes[i] }

// NumScopes is the number of scopes.
func (t *Table) NumScopes() int { return len(t.scopes) }

// Binding returns binding i.
func (t *Table) Binding(i int32) *Binding { return &t.binds[i] }

// NumBindings is the number of bindings.
func (t *Table) NumBindings() int { return len(t.binds) }

// Occurrences are the file's identifiers in source order; read-only.
func (t *Table) Occurrences() []Occurrence { return t.occs }

// Stars are the module's star imports (BindStar bindings), in order.
func (t *Table) Stars() []int32 { return t.stars }

// OccurrenceAt returns the identifier holding off, or ending at off when
// none holds it (a cursor just after a name is on it).
func (t *Table) OccurrenceAt(off int) (Occurrence, bool) {
	if off < 0 {
		return Occurrence{}, false
	}
	o := uint32(off)
	i := sort.Search(len(t.occs), func(i int) bool { return t.tree.Node(t.occs[i].Node).Start > o }) - 1
	if i < 0 {
		return Occurrence{}, false
	}
	n := t.tree.Node(t.occs[i].Node)
	if n.Start < n.End && o <= n.End {
		return t.occs[i], true
	}
	return Occurrence{}, false
}

// OccurrenceOf returns the occurrence of identifier node n.
func (t *Table) OccurrenceOf(n int32) (Occurrence, bool) {
	if n < 0 || int(n) >= t.tree.Len() {
		return Occurrence{}, false
	}
	start := t.tree.Node(n).Start
	i := sort.Search(len(t.occs), func(i int) bool { return t.tree.Node(t.occs[i].Node).Start >= start })
	for ; i < len(t.occs) && t.tree.Node(t.occs[i].Node).Start == start; i++ {
		if t.occs[i].Node == n {
			return t.occs[i], true
		}
	}
	return Occurrence{}, false
}

// Names lists the bindings of name made in scope s, in order of
// visibility.
func (t *Table) Names(s int32, name string) []int32 { return t.scopes[s].names[name] }

// InstanceAttr returns the assignment self.name = ... of class scope s's
// methods that declares the attribute (the identifier after the dot), or
// -1.
func (t *Table) InstanceAttr(s int32, name string) int32 {
	if n, ok := t.scopes[s].attrs[name]; ok {
		return n
	}
	return -1
}

// ClassScope returns the scope of the class whose name identifier starts
// at the 0-based line and byte column, or -1.
func (t *Table) ClassScope(line, col int) int32 {
	for i := range t.scopes {
		sc := &t.scopes[i]
		if sc.Kind != ScopeClass {
			continue
		}
		name := t.tree.Child(sc.Node, syntax.FieldName)
		if name >= 0 && t.tree.StartPos(name) == (syntax.Pos{Line: line, Col: col}) {
			return int32(i)
		}
	}
	return -1
}

// ScopeOf returns the scope whose Node is n, or -1.
func (t *Table) ScopeOf(n int32) int32 {
	for i := range t.scopes {
		if t.scopes[i].Node == n {
			return int32(i)
		}
	}
	return -1
}

// Result is what Lookup found.
type Result struct {
	// Binding is the binding the name refers to, -1 when the file binds
	// it nowhere the read can see (a builtin, or a name bound at run time).
	Binding int32
	// Global is set when the name was looked up among the module's names
	// (found or not): a name it does not bind is a builtin, or comes from
	// somewhere the text does not show.
	Global bool
}

// Exports tells Lookup whether a star import binds name; nil means none
// does.
type Exports func(star *Binding, name string) bool

// Lookup finds the binding that the name read at offset off in scope s
// refers to. exports says which star imports bind the name; it is asked
// only about the module's star imports, and only when they could matter.
func (t *Table) Lookup(name string, s int32, off uint32, exports Exports) Result {
	immediate := true    // no function boundary crossed: the scope runs now
	crossedFunc := false // class bodies are invisible from the functions in them
	for cur := s; cur >= 0; {
		sc := &t.scopes[cur]
		if crossedFunc && sc.Kind == ScopeClass {
			cur = sc.Parent
			continue
		}
		switch sc.declared[name] {
		case declGlobal:
			return t.lookupModule(name, off, false, exports)
		case declNonlocal:
			// The name lives in an enclosing function.
			cur, immediate, crossedFunc = sc.Parent, false, true
			continue
		}
		if cur == 0 {
			return t.lookupModule(name, off, immediate, exports)
		}
		binds := sc.names[name]
		if len(binds) > 0 || sc.local[name] {
			if sc.Kind == ScopeClass {
				// A class body reads its own dict, then the module's:
				// a name it binds only later is the module's.
				if b := t.lastBefore(binds, off); b >= 0 {
					return Result{Binding: b}
				}
				return t.lookupModule(name, off, immediate, exports)
			}
			return Result{Binding: t.choose(binds, off, immediate)}
		}
		switch sc.Kind {
		case ScopeFunction, ScopeLambda:
			immediate, crossedFunc = false, true
		case ScopeComprehension:
			crossedFunc = true
		}
		cur = sc.Parent
	}
	return Result{Binding: -1}
}

// lookupModule chooses among the module's bindings of name, star imports
// that export it included.
func (t *Table) lookupModule(name string, off uint32, immediate bool, exports Exports) Result {
	binds := t.scopes[0].names[name]
	if exports != nil && len(t.stars) > 0 {
		var merged []int32
		for _, st := range t.stars {
			if exports(&t.binds[st], name) {
				merged = append(merged, st)
			}
		}
		if len(merged) > 0 {
			merged = append(merged, binds...)
			sort.SliceStable(merged, func(i, j int) bool { return t.binds[merged[i]].At < t.binds[merged[j]].At })
			binds = merged
		}
	}
	return Result{Binding: t.choose(binds, off, immediate), Global: true}
}

// choose picks among bindings sorted by visibility: immediately, the last
// in effect at off, else the first; later, the last, preferring one
// outside "if TYPE_CHECKING:". Bindings made under a global or nonlocal
// declaration elsewhere count only when there is no other.
func (t *Table) choose(binds []int32, off uint32, immediate bool) int32 {
	if len(binds) == 0 {
		return -1
	}
	own := binds
	for _, bi := range binds {
		if t.binds[bi].Declared {
			own = make([]int32, 0, len(binds))
			for _, bj := range binds {
				if !t.binds[bj].Declared {
					own = append(own, bj)
				}
			}
			if len(own) == 0 {
				own = binds
			}
			break
		}
	}
	binds = own
	if immediate {
		if b := t.lastBefore(binds, off); b >= 0 {
			return b
		}
		return binds[0]
	}
	for i := len(binds) - 1; i >= 0; i-- {
		if !t.binds[binds[i]].TypeChecking {
			return binds[i]
		}
	}
	return binds[len(binds)-1]
}

// lastBefore is the last binding in effect at off, or -1.
func (t *Table) lastBefore(binds []int32, off uint32) int32 {
	i := sort.Search(len(binds), func(i int) bool { return t.binds[binds[i]].At > off }) - 1
	if i < 0 {
		return -1
	}
	return binds[i]
}

// Work is the number of steps building the table took, for the tests
// that bound it.
func (t *Table) Work() int { return t.work }
