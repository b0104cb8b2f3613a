package remote

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// CachePlace is where a path lies in torchlsp's cache of mirrors: the
// directory of one target (<cache>/<target>/<identity>) and, when the
// path is inside one, the directory of one package's mirror there.
type CachePlace struct {
	TargetDir string // <cache>/<target>/<identity>
	Target    string // the target's directory name: its name, sanitized
	Identity  string // TargetIdentity of the target's spec
	// Root is the package's directory (<TargetDir>/<package>-<version>-
	// <hash>): a complete mirror when it holds a manifest, an on-demand
	// tree otherwise; "" for a path that is TargetDir itself.
	Root string
}

// PlaceInCache tells whether p lies in a target's part of the cache under
// cacheRoot, following symbolic links, and where. The on-demand trees of
// their own (<cache>/ondemand) and the directories being written or
// removed (".tmp-", ".old-") are no target's.
func PlaceInCache(cacheRoot, p string) (CachePlace, bool) {
	if cacheRoot == "" || p == "" {
		return CachePlace{}, false
	}
	if c, err := filepath.EvalSymlinks(cacheRoot); err == nil {
		cacheRoot = c
	}
	if f, err := filepath.EvalSymlinks(p); err == nil {
		p = f
	}
	rel, err := filepath.Rel(cacheRoot, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return CachePlace{}, false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) < 2 || parts[0] == onDemandDirName || strings.HasPrefix(parts[0], ".") || !isIdentity(parts[1]) {
		return CachePlace{}, false
	}
	pl := CachePlace{TargetDir: filepath.Join(cacheRoot, parts[0], parts[1]), Target: parts[0], Identity: parts[1]}
	if len(parts) > 2 {
		if strings.HasPrefix(parts[2], ".") {
			return CachePlace{}, false
		}
		pl.Root = filepath.Join(pl.TargetDir, parts[2])
	}
	return pl, true
}

// isIdentity reports whether s has the form of a TargetIdentity.
func isIdentity(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Of reports whether the place holds the mirrors of the target spec
// describes: the same directory name and identity (its connection and
// interpreter), so the same cache directory.
func (pl CachePlace) Of(spec Spec) bool {
	return targetCacheDir(filepath.Dir(filepath.Dir(pl.TargetDir)), spec) == pl.TargetDir
}

// Unconfigured is a target that is not configured here: it runs nothing,
// and every Start says why. A session over it answers from the cache
// alone.
type Unconfigured struct {
	Label  string // the target's name, as the cache records it
	Reason string
}

// Name is the target's name.
func (u Unconfigured) Name() string { return u.Label }

// Start refuses: nothing runs on a target that is not configured.
func (u Unconfigured) Start(context.Context, Command) (Process, error) {
	return nil, fmt.Errorf("target %q: %s", u.Label, u.Reason)
}

// Close has nothing to release.
func (Unconfigured) Close() error { return nil }
