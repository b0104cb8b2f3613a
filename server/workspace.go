package server

import (
	"path/filepath"
	"strings"
	"sync"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/config"
)

// workspaceConfig is what the engine knows of the workspace and its
// configuration: the folders, the editor's settings, the merged
// configuration, and the target the user picked.
type workspaceConfig struct {
	python string        // the command line's --python; fixed
	opener remote.Opener // reads target names that are addresses

	mu       sync.Mutex // guards the fields below
	folders  []string
	editor   config.Layer // settings sent by the editor
	resolved config.Resolved
	confErr  error
	selected string // --target or Select Target; "" is the configured default
	picked   bool   // selected came from Select Target, not the command line
	// home is the configured target whose mirror the server was started
	// in (mirrorhome.go): the default, unless one is selected.
	home string
}

func newWorkspaceConfig(selected, python string, opener remote.Opener) *workspaceConfig {
	c := &workspaceConfig{python: python, opener: opener, selected: selected}
	c.resolved, _ = config.Merge()
	return c
}

func (c *workspaceConfig) setFolders(folders []string) {
	c.mu.Lock()
	c.folders = append([]string(nil), folders...)
	c.mu.Unlock()
}

func (c *workspaceConfig) setEditorSettings(raw []byte) error {
	f, err := config.ParseJSON(raw, "editor settings")
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.editor = config.Layer{Source: "editor settings", File: f}
	c.mu.Unlock()
	return nil
}

// workspaceFolders returns the workspace folders.
func (c *workspaceConfig) workspaceFolders() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.folders
}

// importPaths are the directories the configuration adds to the
// workspace's sys.path ([workspace] paths).
func (c *workspaceConfig) importPaths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resolved.ImportPaths
}

// inputs returns what a configuration is resolved from.
func (c *workspaceConfig) inputs() (folders []string, editor config.Layer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.folders, c.editor
}

// setResolved takes a new configuration. A target picked with Select
// Target that the new configuration no longer defines (its torchlsp.toml
// lost trust, say) is dropped, and its name returned, so that the
// configured default answers again instead of "no target".
func (c *workspaceConfig) setResolved(r config.Resolved, err error) (dropped string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resolved, c.confErr = r, err
	if c.picked {
		if _, ok, _ := c.opener.SpecFor(c.selected); !ok {
			if _, terr := r.Target(c.selected); terr != nil {
				dropped, c.selected, c.picked = c.selected, "", false
			}
		}
	}
	return dropped
}

// resolvedSnapshot returns the merged configuration as it is now.
func (c *workspaceConfig) resolvedSnapshot() config.Resolved {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resolved
}

// sources names the files and settings the configuration came from.
func (c *workspaceConfig) sources() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.resolved.Sources...)
}

// defaultLocked is the target chosen over the configured default: the
// command line's or one picked with Select Target, else the target whose
// mirror the server was started in; "" for none. c.mu is held.
func (c *workspaceConfig) defaultLocked() string {
	if c.selected == "" {
		return c.home
	}
	return c.selected
}

// setHome makes the target whose mirror the server was started in the
// default ("" for none).
func (c *workspaceConfig) setHome(name string) {
	c.mu.Lock()
	c.home = name
	c.mu.Unlock()
}

// selectTarget makes a target the default for this engine's lifetime.
func (c *workspaceConfig) selectTarget(name string) {
	c.mu.Lock()
	c.selected, c.picked = name, true
	c.mu.Unlock()
}

// spec returns the spec of the named target (the default if empty), with
// the command line's overrides applied.
func (c *workspaceConfig) spec(name string) (remote.Spec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.specLocked(name)
}

// specLocked is spec with c.mu held.
func (c *workspaceConfig) specLocked(name string) (remote.Spec, error) {
	if name == "" {
		name = c.defaultLocked()
	}
	if spec, ok, err := c.opener.SpecFor(name); ok {
		if err != nil {
			return remote.Spec{}, err
		}
		if c.python != "" {
			spec.Python = c.python
		}
		return config.Complete(spec), nil
	}
	spec, err := c.resolved.Target(name)
	if err != nil {
		return spec, err
	}
	if c.python != "" && (name == "" || name == c.defaultLocked() || name == c.resolved.Default) {
		spec.Python = c.python
	}
	return spec, nil
}

// isDefault reports whether a target name is the current default's.
func (c *workspaceConfig) isDefault(target string) bool {
	def, err := c.spec("")
	return err == nil && def.Name == target
}

// targets lists the configured targets and the default.
func (c *workspaceConfig) targets() (names []string, def string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	def = c.resolved.Default
	if d := c.defaultLocked(); d != "" {
		def = d
	}
	return c.resolved.Names(), def
}

// configured lists the targets for "every target": the configured ones,
// and the built-in local target only when it is the default.
func (c *workspaceConfig) configured() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.resolved
	if d := c.defaultLocked(); d != "" {
		r.Default = d
	}
	return r.Configured()
}

// workdirs returns the configured targets' workdirs, by target name.
func (c *workspaceConfig) workdirs() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resolved.Workdirs
}

// folderOf returns the workspace folder holding path, if any.
func (c *workspaceConfig) folderOf(path string) string {
	folders := c.workspaceFolders()
	best := ""
	for _, f := range folders {
		if (path == f || strings.HasPrefix(path, f+string(filepath.Separator))) && len(f) > len(best) {
			best = f
		}
	}
	return best
}
