// Package torchtree reads what the engine's scans of a torch tree share:
// the list of its Python files, torch's version, and the fingerprint that
// tells a cache built from the tree whether it still describes it.
package torchtree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/server/localfile"
)

// MaxFileBytes bounds one source file of a mirror that the engine reads
// (scans, navigation, citations): the mirror's own per-file limit
// (remote.DefaultMirrorLimits().MaxFileBytes, which a manifest may only
// narrow), so no file of a sound mirror is over it; torch 2.11's largest
// is 1.36 MB. The mirror lives in the cache, which is read as hostile:
// ReadFile opens a file without following a link at its name and without
// blocking, checks it is a regular file and reads it through this bound,
// so a named pipe, a link to /dev/zero or a huge file planted in a mirror
// fails at once instead of hanging or filling memory.
const MaxFileBytes = 4 << 20

// ReadFile reads the mirror's file at path as the cache's files are read
// (see MaxFileBytes): a regular file, not a link, of at most MaxFileBytes.
func ReadFile(path string) ([]byte, error) {
	return localfile.ReadNoFollow(path, MaxFileBytes)
}

// File is one .py file of the tree.
type File struct {
	Rel   string // slash-separated, relative to the site dir
	Size  int64
	Mtime int64 // nanoseconds
}

// List lists the .py files under roots (each a file or a directory,
// slash-separated and relative to siteDir; a root that does not exist, a
// part an older torch lacks, is skipped), sorted by path. siteDir must
// hold a torch package.
func List(siteDir string, roots ...string) ([]File, error) {
	if st, err := os.Stat(filepath.Join(siteDir, "torch")); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s holds no torch package", siteDir)
	}
	var files []File
	for _, root := range roots {
		abs := filepath.Join(siteDir, filepath.FromSlash(root))
		err := filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == abs && os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.IsDir() || !strings.HasSuffix(p, ".py") {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(siteDir, p)
			if err != nil {
				return err
			}
			files = append(files, File{Rel: filepath.ToSlash(rel), Size: info.Size(), Mtime: info.ModTime().UnixNano()})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", abs, err)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Rel < files[j].Rel })
	return files, nil
}

// Version is torch's version as torch/version.py under siteDir states it,
// or "" when it does not. The rule: the first line that binds __version__
// at the module's top level (from column 0; an annotation may come
// between the name and "=") to a quoted string. Indented lines (inside an
// if or a def) and names that only begin with __version__ do not count.
func Version(siteDir string) string {
	b, err := ReadFile(filepath.Join(siteDir, "torch", "version.py"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := versionIn(line); ok {
			return v
		}
	}
	return ""
}

// versionIn reads one line of version.py.
func versionIn(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "__version__")
	if !ok {
		return "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	if strings.HasPrefix(rest, ":") {
		// An annotation: __version__: str = "2.11.0".
		i := strings.IndexByte(rest, '=')
		if i < 0 {
			return "", false
		}
		rest = rest[i:]
	}
	rest, ok = strings.CutPrefix(rest, "=")
	if !ok || strings.HasPrefix(rest, "=") {
		return "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" || (rest[0] != '\'' && rest[0] != '"') {
		return "", false
	}
	q := rest[0]
	end := strings.IndexByte(rest[1:], q)
	if end <= 0 {
		return "", false
	}
	return rest[1 : 1+end], true
}

// Fingerprint identifies what a cache was built from: a header (the
// cache's kind and format), torch's version and each file's path, size
// and modification time. Mirrors are read-only, so a changed file means a
// new mirror and a new fingerprint.
func Fingerprint(header, siteDir string, files []File) string {
	h := sha256.New()
	h.Write([]byte(header + "\n" + Version(siteDir) + "\n"))
	for _, f := range files {
		h.Write([]byte(f.Rel))
		h.Write([]byte{0})
		h.Write([]byte(strconv.FormatInt(f.Size, 10)))
		h.Write([]byte{0})
		h.Write([]byte(strconv.FormatInt(f.Mtime, 10)))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
