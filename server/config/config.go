// Package config reads torchlsp's settings: the user's config.toml, a
// workspace's torchlsp.toml (only once the user trusts it), and the same
// settings sent by an editor. It turns them into remote.Spec values.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/torchlsp/torchlsp/remote"
)

// WorkspaceFile is the name of the per-workspace configuration file.
const WorkspaceFile = "torchlsp.toml"

// LocalTarget is the name of the built-in target that runs python3 from PATH.
const LocalTarget = "local"

// File is the shape shared by torchlsp.toml, config.toml and the editor's
// "torchlsp" settings section.
type File struct {
	Default string                  `toml:"default" json:"defaultTarget"`
	Targets map[string]TargetConfig `toml:"targets" json:"targets"`
	Site    SiteConfig              `toml:"site" json:"site"`
	// Workspace is the [workspace] table: how the workspace model names
	// the user's modules.
	Workspace WorkspaceConfig `toml:"workspace" json:"workspace"`
}

// WorkspaceConfig is the [workspace] table.
type WorkspaceConfig struct {
	// Paths are directories the user's code puts on sys.path (absolute,
	// or relative to the workspace folder), besides the folder and its
	// src/: modules under them are named from them. Nothing is run or
	// imported from them; they only name modules.
	Paths []string `toml:"paths" json:"paths"`
}

// SiteConfig is the [site] table: what `torchlsp site` puts in the
// site-packages view of a target, besides torch and the workspace's
// imports.
type SiteConfig struct {
	// Packages adds top-level names ("einops"), or leaves one out with a
	// leading "-" ("-sympy"). Later entries and later layers win.
	Packages []string `toml:"packages" json:"packages"`
	// Hover is how torchlsp's hover behaves beside a Python server that
	// reads the site: by default it leaves signatures and docstrings to
	// that server once the editor asked for the site (torchlsp.site);
	// "compact" does so as soon as the site is announced, "full" never.
	Hover string `toml:"hover" json:"hover"`
}

// TargetConfig is one [targets.NAME] table.
type TargetConfig struct {
	Python   string            `toml:"python" json:"python"`
	Env      map[string]string `toml:"env" json:"env"`
	Packages []string          `toml:"packages" json:"packages"`
	SSH      string            `toml:"ssh" json:"ssh"`
	Jump     []string          `toml:"jump" json:"jump"`
	Exec     []string          `toml:"exec" json:"exec"`
	// UserSite lets the target's interpreter see the user's
	// site-packages (pip install --user); it is left out otherwise.
	UserSite bool `toml:"user_site" json:"userSite"`

	// Workdir is where the workspace's working copy lives on the target
	// (an absolute path there): paths under it in the target's tracebacks
	// and logs map to the workspace's files. Like the rest of a workspace's
	// torchlsp.toml it counts only once the file is trusted.
	Workdir string `toml:"workdir" json:"workdir"`
}

// runsHere reports whether the target's interpreter is started directly
// on this machine, where a relative path names a local file.
func (t TargetConfig) runsHere() bool { return t.SSH == "" && len(t.Exec) == 0 }

var targetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ParseTOML reads a torchlsp.toml or config.toml. Unknown keys are errors,
// so a typo does not silently leave a setting at its default.
func ParseTOML(data []byte, source string) (File, error) {
	var f File
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", source, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		keys := make([]string, len(undecoded))
		for i, k := range undecoded {
			keys[i] = k.String()
		}
		return File{}, fmt.Errorf("%s: unknown keys: %s", source, strings.Join(keys, ", "))
	}
	return f, f.validate(source, true)
}

// ParseJSON reads the editor's "torchlsp" settings section. It also accepts
// "default" as a synonym of "defaultTarget". Unknown keys are ignored: editors
// send their own settings (path, logLevel) in the same section.
func ParseJSON(data []byte, source string) (File, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return File{}, nil
	}
	var raw struct {
		File
		Default string `json:"default"`
	}
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return File{}, fmt.Errorf("%s: %w", source, err)
	}
	f := raw.File
	if f.Default == "" {
		f.Default = raw.Default
	}
	return f, f.validate(source, false)
}

// validate checks f; inFile says whether it came from a file, whose
// directory relative paths are resolved against (resolveRelative).
func (f File) validate(source string, inFile bool) error {
	var errs []error
	if f.Default != "" && !targetName.MatchString(f.Default) {
		errs = append(errs, fmt.Errorf("%s: default %q is not a valid target name", source, f.Default))
	}
	for _, name := range sortedKeys(f.Targets) {
		t := f.Targets[name]
		if !targetName.MatchString(name) {
			errs = append(errs, fmt.Errorf("%s: target name %q: use letters, digits, '.', '_' and '-'", source, name))
		}
		for k := range t.Env {
			if !validEnvName(k) {
				errs = append(errs, fmt.Errorf("%s: targets.%s.env: %q is not a valid environment variable name", source, name, k))
			}
		}
		if err := checkPythonPath(t, inFile); err != nil {
			errs = append(errs, fmt.Errorf("%s: targets.%s.env: %w", source, name, err))
		}
		for _, p := range t.Packages {
			if !validPackageName(p) {
				errs = append(errs, fmt.Errorf("%s: targets.%s.packages: %q is not a valid package name", source, name, p))
			}
		}
		if strings.ContainsAny(t.Python, "\x00\n") {
			errs = append(errs, fmt.Errorf("%s: targets.%s.python holds a control character", source, name))
		}
		for _, a := range t.Exec {
			if strings.ContainsRune(a, 0) {
				errs = append(errs, fmt.Errorf("%s: targets.%s.exec holds a NUL byte", source, name))
			}
		}
		if err := checkWorkdir(t.Workdir); err != nil {
			errs = append(errs, fmt.Errorf("%s: targets.%s.workdir: %w", source, name, err))
		}
	}
	for _, p := range f.Site.Packages {
		if !validEnvName(strings.TrimPrefix(p, "-")) {
			errs = append(errs, fmt.Errorf("%s: site.packages: %q is not a top-level package name (\"name\" adds it, \"-name\" leaves it out)", source, p))
		}
	}
	for _, p := range f.Workspace.Paths {
		if strings.TrimSpace(p) == "" || strings.ContainsRune(p, 0) {
			errs = append(errs, fmt.Errorf("%s: workspace.paths: %q is not a directory name", source, p))
		}
	}
	if h := f.Site.Hover; h != "" && h != "compact" && h != "full" {
		errs = append(errs, fmt.Errorf("%s: site.hover: %q is neither \"compact\" nor \"full\"", source, h))
	}
	return errors.Join(errs...)
}

// checkPythonPath refuses PYTHONPATH entries that would name whatever
// directory the interpreter starts in: an empty entry anywhere, a relative
// one on a target reached through ssh or an exec hop (whose start
// directory torchlsp does not choose), and a relative one in settings
// that have no file to be relative to.
func checkPythonPath(t TargetConfig, inFile bool) error {
	value, ok := t.Env["PYTHONPATH"]
	if !ok {
		return nil
	}
	for _, entry := range strings.Split(value, ":") {
		switch {
		case entry == "":
			return fmt.Errorf("PYTHONPATH %q has an empty entry, which names the directory the interpreter starts in; remove it", value)
		case filepath.IsAbs(entry):
		case !t.runsHere():
			return fmt.Errorf("PYTHONPATH entry %q is relative, so it would name a directory under wherever the interpreter starts on the target; give an absolute path", entry)
		case !inFile:
			return fmt.Errorf("PYTHONPATH entry %q is relative and these settings have no directory to be relative to; give an absolute path", entry)
		}
	}
	return nil
}

// maxWorkdirBytes bounds a workdir, as Linux bounds a path.
const maxWorkdirBytes = 4096

// checkWorkdir accepts an empty workdir or an absolute path on the
// target: it only ever maps paths the target printed onto the workspace,
// never names a local file, but "/" or a relative path would make every
// path of the target look like the user's.
func checkWorkdir(w string) error {
	switch {
	case w == "":
		return nil
	case len(w) > maxWorkdirBytes || strings.ContainsAny(w, "\x00\n\r"):
		return fmt.Errorf("%.80q is too long or holds a control character", w)
	case !path.IsAbs(w):
		return fmt.Errorf("%q is not an absolute path on the target", w)
	case path.Clean(w) == "/":
		return fmt.Errorf("%q is the target's root", w)
	}
	return nil
}

// resolveRelative makes the relative paths of targets that run on this
// machine absolute against dir, the directory of the file that holds
// them: the python program (when it is a path, not a name looked up on
// PATH) and PYTHONPATH entries. Trust pins a file's text, so what that
// text runs must not depend on the directory torchlsp was started in.
func (f File) resolveRelative(dir string) File {
	if len(f.Targets) == 0 {
		return f
	}
	targets := make(map[string]TargetConfig, len(f.Targets))
	for name, t := range f.Targets {
		if t.runsHere() {
			if strings.Contains(t.Python, "/") && !filepath.IsAbs(t.Python) {
				t.Python = filepath.Join(dir, t.Python)
			}
			if pp, ok := t.Env["PYTHONPATH"]; ok {
				entries := strings.Split(pp, ":")
				for i, e := range entries {
					if e != "" && !filepath.IsAbs(e) {
						entries[i] = filepath.Join(dir, e)
					}
				}
				env := make(map[string]string, len(t.Env))
				for k, v := range t.Env {
					env[k] = v
				}
				env["PYTHONPATH"] = strings.Join(entries, ":")
				t.Env = env
			}
		}
		targets[name] = t
	}
	f.Targets = targets
	return f
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func validPackageName(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !validEnvName(part) {
			return false
		}
	}
	return true
}

// Layer is one source of settings, in order of increasing precedence.
type Layer struct {
	Source string // for messages: a file path or "editor settings"
	File   File
}

// Resolved is the merged result of all layers.
type Resolved struct {
	Default string
	Targets map[string]remote.Spec
	Sources []string // where each setting came from, for `doctor`
	// Builtin is set while the local target is the built-in one, which no
	// layer defined.
	Builtin bool
	// SitePackages is every layer's site.packages, in order.
	SitePackages []string
	// SiteHover is the last layer's site.hover; "" means compact.
	SiteHover string
	// ImportPaths are every layer's workspace.paths, in order.
	ImportPaths []string
	// Workdirs are the targets' workdirs (cleaned), by target name; a
	// target without one is absent.
	Workdirs map[string]string
}

// Merge combines layers: later layers override earlier ones target by
// target, and a later default wins. The built-in "local" target is always
// present unless a layer redefines it.
func Merge(layers ...Layer) (Resolved, error) {
	r := Resolved{Default: LocalTarget, Targets: map[string]remote.Spec{}, Builtin: true, Workdirs: map[string]string{}}
	r.Targets[LocalTarget] = Complete(remote.Spec{Name: LocalTarget})
	for _, l := range layers {
		r.SitePackages = append(r.SitePackages, l.File.Site.Packages...)
		r.ImportPaths = append(r.ImportPaths, l.File.Workspace.Paths...)
		if l.File.Site.Hover != "" {
			r.SiteHover = l.File.Site.Hover
		}
		if l.File.Default == "" && len(l.File.Targets) == 0 {
			continue
		}
		r.Sources = append(r.Sources, l.Source)
		for name, t := range l.File.Targets {
			if name == LocalTarget {
				r.Builtin = false
			}
			r.Targets[name] = Complete(remote.Spec{
				Name:     name,
				Python:   t.Python,
				Env:      t.Env,
				Packages: t.Packages,
				SSH:      t.SSH,
				Jump:     t.Jump,
				Exec:     t.Exec,
				UserSite: t.UserSite,
			})
			delete(r.Workdirs, name)
			if t.Workdir != "" {
				r.Workdirs[name] = path.Clean(t.Workdir)
			}
		}
		if l.File.Default != "" {
			r.Default = l.File.Default
		}
	}
	if _, ok := r.Targets[r.Default]; !ok {
		return r, fmt.Errorf("default target %q is not defined (targets: %s)", r.Default, strings.Join(sortedKeys(r.Targets), ", "))
	}
	return r, nil
}

// Complete fills a Spec's defaults.
func Complete(s remote.Spec) remote.Spec {
	if s.Python == "" {
		s.Python = "python3"
	}
	if len(s.Packages) == 0 {
		s.Packages = []string{"torch"}
	}
	return s
}

// Target returns the named target, or the default when name is empty.
func (r Resolved) Target(name string) (remote.Spec, error) {
	if name == "" {
		name = r.Default
	}
	s, ok := r.Targets[name]
	if !ok {
		return remote.Spec{}, fmt.Errorf("no target %q (targets: %s)", name, strings.Join(sortedKeys(r.Targets), ", "))
	}
	return s, nil
}

// Configured lists the targets the user set up, sorted: the built-in local
// target only when it is the default.
func (r Resolved) Configured() []string {
	var out []string
	for _, n := range r.Names() {
		if n == LocalTarget && r.Builtin && r.Default != LocalTarget {
			continue
		}
		out = append(out, n)
	}
	return out
}

// Names lists the targets, sorted.
func (r Resolved) Names() []string { return sortedKeys(r.Targets) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Dirs are the per-user directories torchlsp uses, following the XDG base
// directory specification.
type Dirs struct {
	Config string // $XDG_CONFIG_HOME/torchlsp: config.toml
	Cache  string // $XDG_CACHE_HOME/torchlsp: mirrors and indexes; runs outside a workspace root
	State  string // $XDG_STATE_HOME/torchlsp: trust records
	// Home is the user's home directory: a run asks before it sends the
	// files of it, or of a directory that holds it. Empty asks nothing.
	Home string
}

// DefaultDirs computes Dirs from the environment.
func DefaultDirs() (Dirs, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Dirs{}, fmt.Errorf("find home directory: %w", err)
	}
	xdg := func(env, fallback string) string {
		if v := os.Getenv(env); v != "" && filepath.IsAbs(v) {
			return v
		}
		return filepath.Join(home, fallback)
	}
	return Dirs{
		Config: filepath.Join(xdg("XDG_CONFIG_HOME", ".config"), "torchlsp"),
		Cache:  filepath.Join(xdg("XDG_CACHE_HOME", ".cache"), "torchlsp"),
		State:  filepath.Join(xdg("XDG_STATE_HOME", ".local/state"), "torchlsp"),
		Home:   home,
	}, nil
}

// UserFile is the path of the user-level config.toml.
func (d Dirs) UserFile() string { return filepath.Join(d.Config, "config.toml") }

// LoadUser reads the user's config.toml; a missing file is no error. It
// may be a symbolic link (dotfile managers make them), but what it names
// must be a regular file of at most MaxConfigBytes.
func LoadUser(d Dirs) (Layer, error) {
	path := d.UserFile()
	data, err := readRegular(path, MaxConfigBytes, true)
	if errors.Is(err, os.ErrNotExist) {
		return Layer{Source: path}, nil
	}
	if err != nil {
		return Layer{Source: path}, fmt.Errorf("read %s: %w", path, err)
	}
	f, err := ParseTOML(data, path)
	return Layer{Source: path, File: f.resolveRelative(filepath.Dir(path))}, err
}
