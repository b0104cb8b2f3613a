package pyindex

import (
	"fmt"
)

// ErrDynamic is wrapped by errors for attributes a module serves at run
// time through its __getattr__: only the interpreter can say what they are.
// It wraps ErrNotFound.
var ErrDynamic = fmt.Errorf("%w: served by __getattr__ at run time", ErrNotFound)

// configModuleClasses are the classes torch's install_config_module makes a
// config module an instance of (ConfigModule in torch 2.x; the fixture's
// _ConfigModule), looked up in the module install_config_module comes from.
var configModuleClasses = [...]string{"ConfigModule", "_ConfigModule"}

// served handles the names a module's .py does not bind at run time but
// Python still finds on the module object: the methods a config module
// gets from install_config_module (config.patch is ConfigModule.patch, not
// the typing stub's declaration), and names the module's own __getattr__
// serves. ok is false when neither applies and the static bindings decide.
func (r *resolver) served(m *module, name string) (t target, ok bool, err error) {
	if m.py == nil || r.runtimeBound(m, name) {
		return target{}, false, nil
	}
	fd := r.ix.load(m.py)
	if imp := best(fd.bindings, "install_config_module"); imp != nil && !imp.typeChecking && imp.kind == KindImport && imp.attr == "install_config_module" {
		if src := r.ix.modules[imp.value]; src != nil {
			for _, cls := range configModuleClasses {
				saved := len(r.chain)
				ct, err := r.moduleAttr(src, cls)
				if err != nil || ct.b == nil || ct.b.kind != KindClass {
					r.chain = r.chain[:saved]
					continue
				}
				r.chain = append(r.chain, Hop{Kind: HopBase, Module: m.name, Name: name, File: m.py.rel, Line: int(imp.line), Target: ct.mod.name + "." + ct.path})
				if mt, err := r.classAttr(ct, name); err == nil {
					return mt, true, nil
				}
				r.chain = r.chain[:saved]
			}
		}
	}
	if ga := best(fd.bindings, "__getattr__"); ga != nil && !ga.typeChecking && ga.kind == KindFunction {
		if sub := r.ix.modules[m.name+"."+name]; sub != nil {
			return target{mod: sub}, true, nil // what a lazy __getattr__ imports
		}
		return target{}, true, fmt.Errorf("%w: %s.%s", ErrDynamic, m.name, name)
	}
	return target{}, false, nil
}

// runtimeBound says whether module m's .py binds name when it runs: a
// binding outside "if TYPE_CHECKING:", or a star import outside it from a
// module that exports the name.
func (r *resolver) runtimeBound(m *module, name string) bool {
	fd := r.ix.load(m.py)
	if b := best(fd.bindings, name); b != nil && !b.typeChecking {
		return true
	}
	for _, s := range fd.stars {
		if s.typeChecking {
			continue
		}
		if sm := r.ix.modules[s.module]; sm != nil && r.ix.exports(sm, name) {
			return true
		}
	}
	return false
}

// Module describes the module called name, if the index has it, whatever
// its package binds under the same name: what "import name" imports.
func (ix *Index) Module(name string) (Symbol, bool) {
	m := ix.modules[name]
	if m == nil {
		return Symbol{}, false
	}
	return ix.symbol(target{mod: m}), true
}
