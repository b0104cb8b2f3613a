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

	// Distribution installed it: its file list (RECORD) holds the name,
	// in the directory that holds the package.
	Distribution string            `json:"distribution"`
	Version      string            `json:"version"`
	DistDir      string            `json:"dist_dir"` // its metadata directory's name in Site, e.g. "torch-2.11.0.dist-info"
	Files        map[string]string `json:"files"`    // metadata files by name (METADATA, WHEEL, top_level.txt, …)
	Requires     []Requirement     `json:"requires"`
	Typed        []TypedMarker     `json:"typed"` // py.typed files inside the package

	// OverLimit, when set, says which bound the distribution's metadata
	// passed; the answer then carries none of it, and the package stays
	// out of the site.
	OverLimit *SiteOverLimit `json:"over_limit"`
	// Deferred: the reply had no room left for this name; SitePackages
	// asks again.
	Deferred bool `json:"deferred"`
}

// Requirement is one Requires-Dist entry of a distribution, resolved on the
// target.
type Requirement struct {
	Spec         string   `json:"spec"` // as written in the metadata, cut to a few hundred characters
	Distribution string   `json:"distribution"`
	Extra        bool     `json:"extra"`     // needed only with an extra
	Installed    bool     `json:"installed"` // the target has the distribution
	TopLevel     []string `json:"top_level"` // the import names it installs: top_level.txt's that its RECORD holds
	// OverLimit says why the installed distribution's import names are
	// not known: its metadata passed a bound.
	OverLimit *SiteOverLimit `json:"over_limit"`
}

// SiteQuery is one name asked about for a site.
type SiteQuery struct {
	Name string
	// Owner, when set, is the distribution expected to have installed
	// it (a requirement's), tried first among those that claim the name.
	Owner string
}

// SiteOverLimit says which bound of the helper a distribution's metadata
// passed. Its text is made here from the numbers: nothing the target
// writes reaches the user through it.
type SiteOverLimit struct {
	What  string `json:"what"` // file, record, requires, top_level, package
	File  string `json:"file"` // for file and record: which one
	Count int64  `json:"count"`
	Limit int64  `json:"limit"`
}

func (o *SiteOverLimit) String() string {
	switch o.What {
	case "file":
		return fmt.Sprintf("its metadata file %s is %s, over the limit of %s", o.File, byteSize(o.Count), byteSize(o.Limit))
	case "record":
		return fmt.Sprintf("its file list %s is %s, over the limit of %s", o.File, byteSize(o.Count), byteSize(o.Limit))
	case "requires":
		return fmt.Sprintf("its metadata has %d Requires-Dist lines, over the limit of %d", o.Count, o.Limit)
	case "top_level":
		return fmt.Sprintf("it installs %d or more top-level names, over the limit of %d", o.Count, o.Limit)
	default: // package
		return fmt.Sprintf("its metadata comes to %s, over the limit of %s per package", byteSize(o.Count), byteSize(o.Limit))
	}
}

func (o *SiteOverLimit) validate() error {
	switch o.What {
	case "file", "record":
		if !isMetadataFile(o.File) && o.File != "RECORD" && o.File != "installed-files.txt" {
			return fmt.Errorf("over-limit report about file %q", o.File)
		}
	case "requires", "top_level", "package":
	default:
		return fmt.Errorf("over-limit report of kind %q", o.What)
	}
	if o.Count < 0 || o.Limit <= 0 {
		return fmt.Errorf("over-limit report with count %d, limit %d", o.Count, o.Limit)
	}
	return nil
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

// Bounds on one package's answer; torchlsp_helper.py has the same figures
// (DIST_FILE_LIMIT, DIST_REQUIRES_LIMIT, …) and marks a package that
// passes them as over the limit rather than sending it.
const (
	maxMetadataFile = 1 << 20
	maxTypedMarkers = 64
	maxTypedText    = 4096
	maxSiteNames    = 512
	maxSiteRequires = 1024 // Requires-Dist lines of one distribution
	maxSiteTopLevel = 256  // import names of one distribution
	maxSiteSpec     = 1024 // bytes of one Requires-Dist line (the helper sends 256 characters)
	maxSiteVersion  = 128
)

var (
	// distDirName is a metadata directory's name: a distribution name, a
	// version and the suffix; no separators, no leading dot.
	distDirName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+!-]{0,200}\.(dist-info|egg-info)$`)
	// distName is a distribution's name (PEP 508).
	distName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$`)
	// distVersion is a version as the helper sends it.
	distVersion = regexp.MustCompile(`^[A-Za-z0-9.+!_-]{1,128}$`)
)

// SitePackages asks the helper about top-level names, in as few round
// trips as its reply budget allows: names the helper defers (its reply
// was full) are asked again. Nothing is imported on the target. Answers
// that fail validation are errors: a target that sends a path where a
// name belongs is not trusted for the rest either. A package whose
// metadata passes a bound is no error: its answer says so (OverLimit).
func (c *Client) SitePackages(ctx context.Context, queries []SiteQuery) ([]SitePackage, error) {
	if len(queries) > maxSiteNames {
		return nil, fmt.Errorf("site packages: %d names, at most %d per request", len(queries), maxSiteNames)
	}
	for _, q := range queries {
		if !ValidTopLevelName(q.Name) {
			return nil, fmt.Errorf("site packages: %q is not a top-level module name", q.Name)
		}
		if q.Owner != "" && !distName.MatchString(q.Owner) {
			return nil, fmt.Errorf("site packages: %q is not a distribution name", q.Owner)
		}
	}
	out := make([]SitePackage, 0, len(queries))
	for len(out) < len(queries) {
		got, err := c.sitePackagesOnce(ctx, queries[len(out):])
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// sitePackagesOnce is one site_packages request; it returns the answers
// before the first deferred one, at least one.
func (c *Client) sitePackagesOnce(ctx context.Context, queries []SiteQuery) ([]SitePackage, error) {
	names := make([]string, len(queries))
	owners := make([]*string, len(queries))
	for i, q := range queries {
		names[i] = q.Name
		if q.Owner != "" {
			owners[i] = &queries[i].Owner
		}
	}
	var r struct {
		Packages []SitePackage `json:"packages"`
	}
	if err := c.Call(ctx, "site_packages", map[string]any{"names": names, "owners": owners}, &r); err != nil {
		return nil, fmt.Errorf("site packages: %w", err)
	}
	if len(r.Packages) != len(names) {
		return nil, fmt.Errorf("site packages: asked about %d names, the target answered %d", len(names), len(r.Packages))
	}
	answered := 0
	for i := range r.Packages {
		p := &r.Packages[i]
		if p.Name != names[i] {
			return nil, fmt.Errorf("site packages: answer %d is about %q, not %q", i, p.Name, names[i])
		}
		if p.Deferred {
			continue
		}
		if answered != i {
			return nil, fmt.Errorf("site packages: the target answered %q after deferring %q", p.Name, names[answered])
		}
		answered++
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("site packages: %w", err)
		}
	}
	if answered == 0 {
		return nil, fmt.Errorf("site packages: the target deferred all %d names, answering none", len(names))
	}
	return r.Packages[:answered], nil
}

// Validate checks every name in the answer that may become part of a local
// path or file: the metadata directory, the metadata file names, the
// py.typed paths, the import names of requirements.
func (p *SitePackage) Validate() error {
	if !ValidTopLevelName(p.Name) {
		return fmt.Errorf("bad module name %q", p.Name)
	}
	if p.Distribution != "" && !distName.MatchString(p.Distribution) {
		return fmt.Errorf("%s: bad distribution name %q", p.Name, p.Distribution)
	}
	if p.Version != "" && !distVersion.MatchString(p.Version) {
		return fmt.Errorf("%s: bad version %q", p.Name, cut(p.Version, maxSiteVersion))
	}
	if p.OverLimit != nil {
		if err := p.OverLimit.validate(); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
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
	if len(p.Requires) > maxSiteRequires {
		return fmt.Errorf("%s: %d requirements, over the limit of %d", p.Name, len(p.Requires), maxSiteRequires)
	}
	for _, r := range p.Requires {
		if !distName.MatchString(r.Distribution) {
			return fmt.Errorf("%s: requirement of bad distribution name %q", p.Name, cut(r.Distribution, 256))
		}
		if len(r.Spec) > maxSiteSpec {
			return fmt.Errorf("%s: requirement %s of %d bytes", p.Name, r.Distribution, len(r.Spec))
		}
		if len(r.TopLevel) > maxSiteTopLevel {
			return fmt.Errorf("%s: requirement %s names %d modules, over the limit of %d", p.Name, r.Distribution, len(r.TopLevel), maxSiteTopLevel)
		}
		if r.OverLimit != nil {
			if err := r.OverLimit.validate(); err != nil {
				return fmt.Errorf("%s: requirement %s: %w", p.Name, r.Distribution, err)
			}
		}
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
