// Package gates catalogs torch's config flags (the modules that call
// install_config_module on themselves), every place in the torch tree that
// reads or writes one of them, and the torch.compile modes that set them.
//
// Everything is static: sources are parsed with tree-sitter, never imported.
package gates

import (
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/internal/editdist"
)

// SiteKind says how a gate site touches a flag.
type SiteKind string

const (
	// KindRead is an attribute read such as config.triton.cudagraph_trees.
	KindRead SiteKind = "read"
	// KindWrite is an assignment (config.x = v) or setattr(config, "x", v).
	KindWrite SiteKind = "write"
	// KindPatch is a config.patch(...) key or patch.object(config, "x", v).
	KindPatch SiteKind = "patch"
	// KindGetattr is getattr(config, "x") or hasattr(config, "x").
	KindGetattr SiteKind = "getattr"
)

// Flag is one entry of a config module's _config table.
type Flag struct {
	Module     string   // dotted config module, e.g. torch._inductor.config
	Key        string   // dotted key inside the module, e.g. triton.cudagraph_trees
	File       string   // file relative to the site dir, slash separated
	Line       int      // 0-based line of the definition
	Col        int      // 0-based byte column of the definition
	Default    string   // default expression as written
	Type       string   // annotation text, value_type=, or inferred from a literal
	Doc        string   // comment block above, docstring below, or trailing comment
	EnvDefault []string // env vars that change the default (env_name_default, os.environ reads)
	EnvForce   []string // env vars that force the value (env_name_force)
	Alias      string   // Config(alias=...) target, as written
	Justknob   string   // Config(justknob=...)
	IsConfig   bool     // defined with Config(...) rather than a plain value
}

// FullKey is the flag's module-qualified key.
func (f *Flag) FullKey() string { return f.Module + "." + f.Key }

// Env lists every environment variable the flag reads, force ones first.
func (f *Flag) Env() []string {
	out := make([]string, 0, len(f.EnvForce)+len(f.EnvDefault))
	out = append(out, f.EnvForce...)
	return append(out, f.EnvDefault...)
}

// Module is one config module.
type Module struct {
	Name       string   // dotted module name
	File       string   // relative to the site dir
	Flags      []*Flag  // in definition order
	SubConfigs []string // nested class prefixes, e.g. "triton", "aot_inductor"
}

// Site is one place in the torch tree that touches a flag.
type Site struct {
	File        string   // relative to the site dir, slash separated
	Line        int      // 0-based
	Col         int      // 0-based byte column of the expression's start
	Kind        SiteKind //
	InCondition bool     // the read decides an if/elif/while/ternary/assert/comprehension filter
	Condition   string   // that condition's text on one line
	Text        string   // the source line, trimmed
}

// Catalog is everything the scanner learned about one torch tree.
type Catalog struct {
	Version     string // torch.version.__version__, or "" if unknown
	Fingerprint string // identifies the tree the catalog was built from
	Modules     []*Module
	HasCompile  bool // torch.compile exists (torch/_inductor is present)
	// Modes maps a torch.compile mode to the inductor flags it sets
	// (values as written), from list_mode_options in torch/_inductor/__init__.py.
	Modes map[string]map[string]string
	// CompileOptions are the keys torch.compile(options=...) accepts: every
	// torch._inductor.config key except aliases, as list_options() reports.
	CompileOptions []string
	// SiteMap maps a flag's full key to its gate sites, sorted by file and line.
	SiteMap map[string][]Site
	// Skipped lists files the scanner could not read for sites (it recovered
	// from a fault in them); normally empty.
	Skipped []string

	flags     map[string]*Flag   // full key → flag
	byModKey  map[string][]*Flag // module-relative key → flags
	env       map[string][]*Flag
	subconfig map[string]bool // full prefix of nested classes, e.g. torch._inductor.config.triton
}

func (c *Catalog) index() {
	c.flags = make(map[string]*Flag)
	c.byModKey = make(map[string][]*Flag)
	c.env = make(map[string][]*Flag)
	c.subconfig = make(map[string]bool)
	sort.Slice(c.Modules, func(i, j int) bool { return c.Modules[i].Name < c.Modules[j].Name })
	for _, m := range c.Modules {
		for _, s := range m.SubConfigs {
			c.subconfig[m.Name+"."+s] = true
		}
		for _, f := range m.Flags {
			c.flags[f.FullKey()] = f
			c.byModKey[f.Key] = append(c.byModKey[f.Key], f)
			for _, e := range f.Env() {
				c.env[e] = append(c.env[e], f)
			}
		}
	}
	if c.SiteMap == nil {
		c.SiteMap = make(map[string][]Site)
	}
}

// Flag finds a flag by its full key (torch._inductor.config.triton.cudagraph_trees)
// or by its module-relative key (triton.cudagraph_trees). A relative key
// defined in several modules resolves to torch._inductor.config's, then to
// the first module in name order.
func (c *Catalog) Flag(key string) (*Flag, bool) {
	if f, ok := c.flags[key]; ok {
		return f, true
	}
	fs := c.byModKey[key]
	if len(fs) == 0 {
		return nil, false
	}
	for _, f := range fs {
		if f.Module == "torch._inductor.config" {
			return f, true
		}
	}
	return fs[0], true
}

// FlagsNamed returns every flag whose module-relative key is key, or the
// one flag a full key names.
func (c *Catalog) FlagsNamed(key string) []*Flag {
	if f, ok := c.flags[key]; ok {
		return []*Flag{f}
	}
	return append([]*Flag(nil), c.byModKey[key]...)
}

// Module returns the config module with the given dotted name.
func (c *Catalog) Module(name string) (*Module, bool) {
	for _, m := range c.Modules {
		if m.Name == name {
			return m, true
		}
	}
	return nil, false
}

// ModuleNames lists the config modules' dotted names, sorted.
func (c *Catalog) ModuleNames() []string {
	out := make([]string, len(c.Modules))
	for i, m := range c.Modules {
		out[i] = m.Name
	}
	return out
}

// Sites returns the gate sites of the flag key names (full or relative).
func (c *Catalog) Sites(key string) []Site {
	f, ok := c.Flag(key)
	if !ok {
		return nil
	}
	return c.SiteMap[f.FullKey()]
}

// FlagForEnv returns the flags that read the environment variable name.
func (c *Catalog) FlagForEnv(name string) []*Flag {
	return append([]*Flag(nil), c.env[name]...)
}

// Suggest returns up to five flag keys close to key by edit distance,
// best first, for did-you-mean messages.
func (c *Catalog) Suggest(key string) []string {
	type cand struct {
		key  string
		dist int
	}
	rel := key
	for _, m := range c.Modules {
		if strings.HasPrefix(key, m.Name+".") {
			rel = strings.TrimPrefix(key, m.Name+".")
			break
		}
	}
	limit := max(2, len(rel)/3)
	var cands []cand
	seen := make(map[string]bool)
	for _, m := range c.Modules {
		for _, f := range m.Flags {
			if seen[f.Key] {
				continue
			}
			d := editdist.Distance(rel, f.Key, limit)
			// A key that matches the last component exactly is a good hint too.
			if d > limit && lastComponent(f.Key) == lastComponent(rel) {
				d = limit
			}
			if d <= limit {
				seen[f.Key] = true
				cands = append(cands, cand{f.Key, d})
			}
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].key < cands[j].key
	})
	out := make([]string, 0, 5)
	for i := 0; i < len(cands) && i < 5; i++ {
		out = append(out, cands[i].key)
	}
	return out
}

func lastComponent(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[i+1:]
	}
	return k
}
