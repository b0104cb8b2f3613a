package repro

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Limits on the workspace files a run sends to the target.
const (
	DefaultMaxFiles     = 2000
	DefaultMaxBytes     = 16 << 20
	DefaultMaxFileBytes = 2 << 20
)

// File is one workspace file sent to the target: Path is relative to the
// workspace root, with slashes.
type File struct {
	Path string `json:"path"`
	Data []byte `json:"data"` // base64 in JSON
}

// BundleLimits bounds CollectWorkspace; zero fields take the defaults.
type BundleLimits struct {
	MaxFiles, MaxBytes, MaxFileBytes int
}

// Bundle is the set of files a run sends, and what was left out and why.
type Bundle struct {
	Files   []File
	LeftOut []string // "path (why)"
}

// skippedDirs are never sent: caches, environments, version control.
var skippedDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, ".torchlsp": true, "__pycache__": true,
	".venv": true, "venv": true, "node_modules": true, ".mypy_cache": true,
	".pytest_cache": true, ".tox": true, "build": true, "dist": true,
}

// bundlePart is what one path component of a sent file may be; the
// script on the target checks the same.
var bundlePart = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// CollectWorkspace gathers the Python files under root: regular files
// only (symbolic links are neither followed nor sent), nothing outside
// root, within the limits. The files come back sorted by path.
func CollectWorkspace(root string, lim BundleLimits) (Bundle, error) {
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = DefaultMaxFiles
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = DefaultMaxFileBytes
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return Bundle{}, fmt.Errorf("workspace %s: %w", root, err)
	}
	defer r.Close()
	var b Bundle
	total := 0
	fsys := r.FS()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			b.LeftOut = append(b.LeftOut, fmt.Sprintf("%s (%v)", p, err))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == "." {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if skippedDirs[name] || strings.HasPrefix(name, ".") || !bundlePart.MatchString(name) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".py") {
			return nil
		}
		switch {
		case !d.Type().IsRegular():
			b.LeftOut = append(b.LeftOut, p+" (not a regular file)")
			return nil
		case !bundlePart.MatchString(name):
			b.LeftOut = append(b.LeftOut, p+" (name)")
			return nil
		case len(b.Files) >= lim.MaxFiles:
			b.LeftOut = append(b.LeftOut, p+" (more than "+strconv.Itoa(lim.MaxFiles)+" files)")
			return nil
		}
		info, err := d.Info()
		if err != nil {
			b.LeftOut = append(b.LeftOut, fmt.Sprintf("%s (%v)", p, err))
			return nil
		}
		if info.Size() > int64(lim.MaxFileBytes) {
			b.LeftOut = append(b.LeftOut, fmt.Sprintf("%s (%d bytes, over %d)", p, info.Size(), lim.MaxFileBytes))
			return nil
		}
		if total+int(info.Size()) > lim.MaxBytes {
			b.LeftOut = append(b.LeftOut, fmt.Sprintf("%s (the files would pass %d bytes)", p, lim.MaxBytes))
			return nil
		}
		// The root refuses paths that leave it, links included.
		data, err := r.ReadFile(p)
		if err != nil {
			b.LeftOut = append(b.LeftOut, fmt.Sprintf("%s (%v)", p, err))
			return nil
		}
		if len(data) > lim.MaxFileBytes || total+len(data) > lim.MaxBytes {
			b.LeftOut = append(b.LeftOut, p+" (grew past the limits)")
			return nil
		}
		total += len(data)
		b.Files = append(b.Files, File{Path: p, Data: data})
		return nil
	})
	if err != nil {
		return b, fmt.Errorf("workspace %s: %w", root, err)
	}
	sort.Slice(b.Files, func(i, j int) bool { return b.Files[i].Path < b.Files[j].Path })
	return b, nil
}

// checkBundlePath says whether p may name a file on the target.
func checkBundlePath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || strings.Contains(p, "\\") {
		return fmt.Errorf("workspace file %q: not a clean relative path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if !bundlePart.MatchString(part) || part == ".." {
			return fmt.Errorf("workspace file %q: component %q", p, part)
		}
	}
	return nil
}

// encodeFiles frames files for the script's stdin: a decimal length, a
// newline, then that many bytes of JSON.
func encodeFiles(files []File) ([]byte, error) {
	var errs []error
	for _, f := range files {
		if err := checkBundlePath(f.Path); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	data, err := json.Marshal(struct {
		Files []File `json:"files"`
	}{files})
	if err != nil {
		return nil, fmt.Errorf("encode workspace files: %w", err)
	}
	return append([]byte(strconv.Itoa(len(data))+"\n"), data...), nil
}
