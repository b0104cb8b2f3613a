package remote

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"
)

// SitePackage is what the target says about one top-level name for a
// site-packages view of its install (the helper's site_packages request).
// Every field that names a file is checked by Validate before use: nothing
// the target sends becomes a local path unchecked.
type SitePackage struct {
	Name       string `json:"name"`
	Found      bool   `json:"found"`       // the target's import system finds it
	Site       string `json:"site"`        // the directory holding it, on the target
	IsPackage  bool   `json:"is_package"`  // a directory, not a single module
	ThirdParty bool   `json:"third_party"` // in site-packages/dist-packages, or installed by a distribution

	Distribution string            `json:"distribution"` // the distribution that installed it, if known
	Version      string            `json:"version"`
	DistDir      string            `json:"dist_dir"` // its metadata directory's name in Site, e.g. "torch-2.11.0.dist-info"
	Files        map[string]string `json:"files"`    // metadata files by name (METADATA, WHEEL, top_level.txt, …)
	Requires     []Requirement     `json:"requires"`
	Typed        []TypedMarker     `json:"typed"` // py.typed files inside the package
}

// Requirement is one Requires-Dist entry of a distribution, resolved on the
// target.
type Requirement struct {
	Spec         string   `json:"spec"` // as written in the metadata
	Distribution string   `json:"distribution"`
	Extra        bool     `json:"extra"`     // needed only with an extra
	Installed    bool     `json:"installed"` // the target has the distribution
	TopLevel     []string `json:"top_level"` // the import names it installs
}

// TypedMarker is a py.typed file (PEP 561) inside a package.
type TypedMarker struct {
	Path string `json:"path"` // relative to the package's parent: "torch/py.typed"
	Text string `json:"text"` // its content: empty, or "partial\n"
}

// siteMetadataFiles are the files of a distribution's metadata directory
// that the site carries; RECORD is left out, since it lists compiled files
// the mirror does not have.
var siteMetadataFiles = []string{"METADATA", "PKG-INFO", "WHEEL", "INSTALLER", "REQUESTED", "top_level.txt", "entry_points.txt", "requires.txt"}

const (
	maxMetadataFile = 1 << 20
	maxTypedMarkers = 64
	maxTypedText    = 4096
	maxSiteNames    = 512
)

// distDirName is a metadata directory's name: a distribution name, a
// version and the suffix; no separators, no leading dot.
var distDirName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+!-]{0,200}\.(dist-info|egg-info)$`)

// SitePackages asks the helper about top-level names, in one round trip.
// Nothing is imported on the target. Answers that fail validation are
// errors: a target that sends a path where a name belongs is not trusted
// for the rest either.
func (c *Client) SitePackages(ctx context.Context, names []string) ([]SitePackage, error) {
	if len(names) > maxSiteNames {
		return nil, fmt.Errorf("site packages: %d names, at most %d per request", len(names), maxSiteNames)
	}
	for _, n := range names {
		if !ValidTopLevelName(n) {
			return nil, fmt.Errorf("site packages: %q is not a top-level module name", n)
		}
	}
	var r struct {
		Packages []SitePackage `json:"packages"`
	}
	if err := c.Call(ctx, "site_packages", map[string]any{"names": names}, &r); err != nil {
		return nil, fmt.Errorf("site packages: %w", err)
	}
	if len(r.Packages) != len(names) {
		return nil, fmt.Errorf("site packages: asked about %d names, the target answered %d", len(names), len(r.Packages))
	}
	for i := range r.Packages {
		if r.Packages[i].Name != names[i] {
			return nil, fmt.Errorf("site packages: answer %d is about %q, not %q", i, r.Packages[i].Name, names[i])
		}
		if err := r.Packages[i].Validate(); err != nil {
			return nil, fmt.Errorf("site packages: %w", err)
		}
	}
	return r.Packages, nil
}

// Validate checks every name in the answer that may become part of a local
// path or file: the metadata directory, the metadata file names, the
// py.typed paths, the import names of requirements.
func (p *SitePackage) Validate() error {
	if !ValidTopLevelName(p.Name) {
		return fmt.Errorf("bad module name %q", p.Name)
	}
	if p.DistDir != "" && !distDirName.MatchString(p.DistDir) {
		return fmt.Errorf("%s: bad metadata directory name %q", p.Name, p.DistDir)
	}
	for name, text := range p.Files {
		if !isMetadataFile(name) {
			return fmt.Errorf("%s: unexpected metadata file %q", p.Name, name)
		}
		if len(text) > maxMetadataFile {
			return fmt.Errorf("%s: metadata file %s of %d bytes", p.Name, name, len(text))
		}
	}
	if len(p.Files) > 0 && p.DistDir == "" {
		return fmt.Errorf("%s: metadata files without a metadata directory", p.Name)
	}
	if len(p.Typed) > maxTypedMarkers {
		return fmt.Errorf("%s: %d py.typed markers", p.Name, len(p.Typed))
	}
	for _, m := range p.Typed {
		if err := checkMarkerPath(m.Path, p.Name); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if len(m.Text) > maxTypedText {
			return fmt.Errorf("%s: %s of %d bytes", p.Name, m.Path, len(m.Text))
		}
	}
	for _, r := range p.Requires {
		for _, n := range r.TopLevel {
			if !ValidTopLevelName(n) {
				return fmt.Errorf("%s: requirement %s names module %q", p.Name, r.Distribution, n)
			}
		}
	}
	return nil
}

func isMetadataFile(name string) bool {
	for _, f := range siteMetadataFiles {
		if f == name {
			return true
		}
	}
	return false
}

// checkMarkerPath accepts "pkg/py.typed" and "pkg/sub/py.typed" under the
// package pkg, with every directory a Python identifier.
func checkMarkerPath(p, pkg string) error {
	if path.Clean(p) != p || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("bad py.typed path %q", p)
	}
	parts := strings.Split(p, "/")
	if len(parts) < 2 || parts[len(parts)-1] != "py.typed" || parts[0] != pkg {
		return fmt.Errorf("py.typed path %q is not inside package %s", p, pkg)
	}
	for _, d := range parts[:len(parts)-1] {
		if !ValidTopLevelName(d) {
			return fmt.Errorf("bad directory %q in py.typed path %q", d, p)
		}
	}
	return nil
}

// ValidTopLevelName reports whether s is a Python identifier that can name
// a top-level module: no dots, no separators, not "." or "..".
func ValidTopLevelName(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', unicode.IsLetter(r):
		case unicode.IsDigit(r) && i > 0:
		default:
			return false
		}
	}
	return true
}
