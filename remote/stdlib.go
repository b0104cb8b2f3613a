package remote

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"sync"
)

// The site must never shadow the standard library. Its readers are Python
// tools that run here, on the user's machine: mypy and a notebook kernel
// with the site on PYTHONPATH import it before the standard library, and
// pyright resolves extraPaths before its stdlib stubs. A target's enum.py
// in the site would run locally on `import re`. So every name that enters
// a site is checked (SiteNames, applied by BuildSite) against three lists:
//
//   - the standard library of every CPython torchlsp supports, embedded
//     here (stdlib_names.txt, made by go generate from the interpreters'
//     own sys.stdlib_module_names, or for 3.8 and 3.9 from their stdlib
//     directories): the local tools may run on any of them, and the list
//     is known without running anything on this machine — no local
//     interpreter to find, trust or keep isolated from the workspace;
//   - the target interpreter's own list (its helper's stdlib_modules), for
//     a Python newer than the embedded list;
//   - the modules Python imports by itself when it starts (StartupModule):
//     site imports sitecustomize and usercustomize from anywhere on
//     sys.path; the .pth files of setuptools and virtualenv, found in
//     nearly every environment, import _distutils_hack and _virtualenv;
//     setuptools' editable installs import a finder module named
//     __editable___<project>_<version>_finder (every name that starts
//     with __editable__ is taken for one); and whatever the .pth files
//     of the target's own site directories import (its helper's
//     stdlib_modules says, as StdlibModules.Startup), since the same
//     packages, installed on this machine, bring the same .pth files.
//
// The site itself holds only packages and metadata directories under
// names checked here, so no .pth file ever enters it (checkLayout).

//go:generate go run ./internal/stdlibgen -o stdlib_names.txt

//go:embed stdlib_names.txt
var stdlibNamesText string

// startupModules are imported when Python starts, from wherever sys.path
// finds them first.
var startupModules = []string{"sitecustomize", "usercustomize", "_distutils_hack", "_virtualenv"}

// editablePrefix begins the name of every module setuptools' editable
// installs import from their .pth files at start-up
// (__editable___myproj_0_1_finder).
const editablePrefix = "__editable__"

// maxStartupNames bounds the target's list of modules its .pth files
// import; torchlsp_helper.py's STARTUP_NAMES_LIMIT.
const maxStartupNames = 256

// StartupModule reports whether Python may import name by itself when it
// starts, wherever it is installed: one of startupModules, or a module of
// setuptools' editable installs.
func StartupModule(name string) bool {
	for _, s := range startupModules {
		if name == s {
			return true
		}
	}
	return strings.HasPrefix(name, editablePrefix)
}

// maxStdlibNames bounds the target's list (CPython 3.13 has 289 names);
// torchlsp_helper.py's STDLIB_NAMES_LIMIT.
const maxStdlibNames = 4096

// embeddedStdlib parses stdlib_names.txt once; the set is never changed.
var embeddedStdlib = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(stdlibNamesText, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			names[line] = true
		}
	}
	return names
})

// StdlibModules is the standard library of a target's interpreter.
type StdlibModules struct {
	Names []string `json:"names"`
	// Source says where the names come from: "stdlib_module_names"
	// (Python 3.10 and later) or "scan" (the standard library's
	// directories and the built-in modules, before 3.10).
	Source string `json:"source"`
	// Startup are the top-level modules the .pth files of the target's
	// site directories import when its interpreter starts (their lines
	// that start with "import"). Give them to NewSiteNames and
	// SiteLayout.TargetStartup.
	Startup []string `json:"startup"`
}

// StdlibModules asks the target's interpreter for the top-level names of
// its standard library.
func (c *Client) StdlibModules(ctx context.Context) (StdlibModules, error) {
	var r StdlibModules
	if err := c.Call(ctx, "stdlib_modules", nil, &r); err != nil {
		return StdlibModules{}, fmt.Errorf("standard library: %w", err)
	}
	if len(r.Names) > maxStdlibNames {
		return StdlibModules{}, fmt.Errorf("standard library: %d names, over the limit of %d", len(r.Names), maxStdlibNames)
	}
	for _, n := range r.Names {
		if !ValidTopLevelName(n) {
			return StdlibModules{}, fmt.Errorf("standard library: %q is not a top-level module name", cut(n, 256))
		}
	}
	if len(r.Startup) > maxStartupNames {
		return StdlibModules{}, fmt.Errorf("standard library: %d start-up modules, over the limit of %d", len(r.Startup), maxStartupNames)
	}
	for _, n := range r.Startup {
		if !ValidTopLevelName(n) {
			return StdlibModules{}, fmt.Errorf("standard library: start-up module %q is not a top-level module name", cut(n, 256))
		}
	}
	if r.Source != "stdlib_module_names" && r.Source != "scan" {
		return StdlibModules{}, fmt.Errorf("standard library: unknown source %q", cut(r.Source, 64))
	}
	return r, nil
}

// SiteNames decides which top-level names a site may hold.
type SiteNames struct {
	target  map[string]bool // the target interpreter's standard library
	startup map[string]bool // the modules the target's .pth files import
}

// NewSiteNames checks names against the target's standard library (its
// StdlibModules Names), the embedded one, the modules Python imports at
// start-up (StartupModule) and those the target's .pth files import (its
// StdlibModules Startup).
func NewSiteNames(targetStdlib []string, targetStartup ...string) *SiteNames {
	n := &SiteNames{target: make(map[string]bool, len(targetStdlib)), startup: make(map[string]bool, len(targetStartup))}
	for _, name := range targetStdlib {
		n.target[name] = true
	}
	for _, name := range targetStartup {
		n.startup[name] = true
	}
	return n
}

// NewTargetSiteNames is NewSiteNames of all a target's StdlibModules
// says.
func NewTargetSiteNames(m StdlibModules) *SiteNames {
	return NewSiteNames(m.Names, m.Startup...)
}

// Refuse says whether name may not enter a site, and why.
func (n *SiteNames) Refuse(name string) (reason string, refused bool) {
	switch {
	case StartupModule(name):
		return "Python imports it at start-up: from the site it would run the target's code on this machine", true
	case n != nil && n.startup[name]:
		return "a .pth file on the target imports it at start-up: from the site it would run the target's code on this machine", true
	}
	switch {
	case embeddedStdlib()[name]:
		return "a module of Python's standard library: the site must not shadow it", true
	case n != nil && n.target[name]:
		return "a module of the standard library of the target's Python: the site must not shadow it", true
	}
	return "", false
}
