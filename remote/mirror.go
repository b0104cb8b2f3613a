package remote

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MirrorFormat is the version of the mirror layout and manifest. Format 2
// records the target's own counts, the per-file limit and the files that
// were skipped; mirrors of format 1 were made without the limits and
// checks of format 2, so they are fetched again.
const MirrorFormat = 2

const (
	manifestName = "manifest.json"
	siteDirName  = "site"
	tmpPrefix    = ".tmp-"
	oldPrefix    = ".old-"
	headerEntry  = ".torchlsp/header.json"
	summaryEntry = ".torchlsp/summary.json"
	staleTmpAge  = 24 * time.Hour
	// maxPath and maxPathPart bound an entry's name (Linux's PATH_MAX and
	// NAME_MAX); maxDepth its directories. torch's deepest file is 8 deep.
	maxPath     = 4096
	maxPathPart = 255
	maxDepth    = 64
	// maxSkipped bounds the skip list kept in a manifest; the rest is
	// counted in SkippedMore.
	maxSkipped = 1000
)

// Compression selects how the mirror stream is packed on the target.
type Compression string

const (
	// CompressNone sends a plain tar: fastest when target and editor share
	// a machine.
	CompressNone Compression = "none"
	// CompressGzip sends tar.gz at level 1: about 4x smaller, for links.
	CompressGzip Compression = "gzip"
)

// Manifest describes a complete mirror; a directory without a valid one is
// not a mirror.
type Manifest struct {
	Format           int       `json:"format"`
	Target           string    `json:"target"`   // the target's name
	Identity         string    `json:"identity"` // hash of how the target is reached
	Package          string    `json:"package"`
	Version          string    `json:"version"`
	Member           string    `json:"member"`             // "torch", or "six.py" for a module
	TargetPackageDir string    `json:"target_package_dir"` // the package's location on the target
	TargetSiteDir    string    `json:"target_site_dir"`    // the directory holding it on the target
	Files            int       `json:"files"`              // files in the mirror: what the target sent, less Skipped
	Bytes            int64     `json:"bytes"`
	TargetFiles      int       `json:"target_files"` // source files on the target, as package_info counted them
	TargetBytes      int64     `json:"target_bytes"`
	MaxFileBytes     int64     `json:"max_file_bytes"` // the per-file limit the mirror was made with
	Compression      string    `json:"compression"`
	Created          time.Time `json:"created"`
	// Skipped lists the package's files that are not in the mirror (too
	// large, unreadable on the target); SkippedMore counts those beyond
	// the first maxSkipped.
	Skipped     []SkippedFile `json:"skipped,omitempty"`
	SkippedMore int           `json:"skipped_more,omitempty"`
}

// SkippedFile is a source file of the package that the mirror does not
// hold. The index does not see it, and a definition in it has no local
// file: say why instead of failing.
type SkippedFile struct {
	Path   string `json:"path"` // relative to the site dir, slash-separated: "torch/big.py"
	Size   int64  `json:"size"` // bytes on the target; -1 when unknown
	Reason string `json:"reason"`
}

// MirrorTree is a complete, read-only local copy of a package's sources.
type MirrorTree struct {
	Root      string // the mirror directory, holding manifest.json and site/
	SiteDir   string // Root/site: works like a site-packages directory
	TargetDir string // the target directory that SiteDir stands for
	Manifest  Manifest
}

// TargetPath maps a file in the mirror to its path on the target; paths
// outside the mirror are returned unchanged.
func (m *MirrorTree) TargetPath(localPath string) string {
	rel, ok := within(m.SiteDir, localPath)
	if !ok {
		return localPath
	}
	if rel == "." {
		return m.TargetDir
	}
	return path.Join(m.TargetDir, filepath.ToSlash(rel))
}

// LocalPath maps a path on the target to its copy in the mirror. It
// reports false for paths outside the mirrored package, and for any path
// Contain refuses.
func (m *MirrorTree) LocalPath(targetPath string) (string, bool) {
	local, err := m.Contain(targetPath)
	return local, err == nil
}

// Contain maps a path a target reported (a helper's answer, which a
// hostile or broken target controls) to its copy in the mirror, and proves
// that the copy is inside it: the path must be absolute, it is cleaned and
// made relative to the target's site dir, it must lie in the mirrored
// package, and every component of the local path is checked with lstat —
// directories all the way down, no symbolic link, and a regular file (or
// the package's own directory) at the end. Anything else is an error that
// says why, and nothing outside the mirror is ever named.
func (m *MirrorTree) Contain(targetPath string) (string, error) {
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("target path %q: %s", truncate(targetPath, 200), why)
	}
	if !cleanAbs(m.TargetDir) {
		return refuse(fmt.Sprintf("the mirror's site dir %q is not an absolute clean path", m.TargetDir))
	}
	if err := validMember(m.Manifest.Member); err != nil {
		return refuse(err.Error())
	}
	if len(targetPath) > maxPath || strings.ContainsRune(targetPath, 0) {
		return refuse("too long or holds a NUL byte")
	}
	if !path.IsAbs(targetPath) {
		return refuse("not an absolute path")
	}
	clean := path.Clean(targetPath)
	var rel string
	switch {
	case m.TargetDir == "/":
		rel = strings.TrimPrefix(clean, "/")
	case strings.HasPrefix(clean, m.TargetDir+"/"):
		rel = clean[len(m.TargetDir)+1:]
	default:
		return refuse("outside the mirrored site dir " + m.TargetDir)
	}
	member := m.Manifest.Member
	if rel != member && !strings.HasPrefix(rel, member+"/") {
		return refuse("outside the mirrored package " + member)
	}
	if !fs.ValidPath(rel) {
		return refuse("not a clean relative path inside the site dir")
	}
	local := filepath.Join(m.SiteDir, filepath.FromSlash(rel))
	if r, ok := within(m.SiteDir, local); !ok || filepath.ToSlash(r) != rel {
		return refuse("escapes the mirror")
	}
	// Lexically inside; now the file system must agree: no component may
	// be a link that leads elsewhere.
	cur := m.SiteDir
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if err != nil {
			return refuse(fmt.Sprintf("not in the mirror: %v", err))
		}
		last := i == len(parts)-1
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			return refuse("a symbolic link in the mirror")
		case !last && !st.IsDir():
			return refuse(cur + " is not a directory")
		case last && !st.Mode().IsRegular() && !(st.IsDir() && rel == member):
			return refuse("not a regular file in the mirror")
		}
	}
	return local, nil
}

// Skipped lists the package's files that the mirror does not hold, and
// why; an index built from SiteDir does not see them.
func (m *MirrorTree) Skipped() []SkippedFile { return m.Manifest.Skipped }

// IsSkipped reports whether rel (relative to SiteDir, slash-separated) is
// a file of the package that the mirror skipped, and why.
func (m *MirrorTree) IsSkipped(rel string) (SkippedFile, bool) {
	for _, s := range m.Manifest.Skipped {
		if s.Path == rel {
			return s, true
		}
	}
	return SkippedFile{}, false
}

// Info is what the target said about the package when it was mirrored:
// its own file count and bytes, skipped files included, so that it
// compares equal with a fresh package_info of the same install.
func (m *MirrorTree) Info() PackageInfo {
	files, bytes := m.Manifest.TargetFiles, m.Manifest.TargetBytes
	if files == 0 && bytes == 0 {
		files, bytes = m.Manifest.Files, m.Manifest.Bytes
	}
	return PackageInfo{
		Name:       m.Manifest.Package,
		Version:    m.Manifest.Version,
		Location:   m.Manifest.TargetPackageDir,
		Site:       m.Manifest.TargetSiteDir,
		Member:     m.Manifest.Member,
		IsPackage:  m.Manifest.Member != "" && !strings.HasSuffix(m.Manifest.Member, ".py"),
		FilesCount: files,
		Bytes:      bytes,
	}
}

func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// cleanAbs reports whether p is an absolute, clean, slash-separated path.
func cleanAbs(p string) bool {
	return p != "" && path.IsAbs(p) && path.Clean(p) == p && !strings.ContainsRune(p, 0) && len(p) <= maxPath
}

// validMember checks a package's name inside its site dir: one path
// component, "torch" or "six.py".
func validMember(m string) error {
	if m == "" || m == "." || m == ".." || len(m) > maxPathPart || strings.ContainsAny(m, "/\\\x00") {
		return fmt.Errorf("bad member name %q", truncate(m, 200))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TargetIdentity is a short hash of how a target is reached: the same
// name pointing elsewhere must not reuse a mirror.
func TargetIdentity(spec Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ssh=%q\n", spec.SSH)
	for _, j := range spec.Jump {
		fmt.Fprintf(&b, "jump=%q\n", j)
	}
	for _, e := range spec.Exec {
		fmt.Fprintf(&b, "exec=%q\n", e)
	}
	fmt.Fprintf(&b, "python=%q\n", pythonOf(spec))
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// targetCacheDir is cacheRoot/<target name>/<identity>.
func targetCacheDir(cacheRoot string, spec Spec) string {
	return filepath.Join(cacheRoot, sanitize(spec.Name), TargetIdentity(spec))
}

// MirrorDir is where the mirror of info lives under cacheRoot:
// <target>/<identity>/<package>-<version>-<location hash>.
func MirrorDir(cacheRoot string, spec Spec, info PackageInfo) string {
	sum := sha256.Sum256([]byte(info.Location))
	version := info.Version
	if version == "" {
		version = "unknown"
	}
	name := sanitize(info.Name) + "-" + sanitize(version) + "-" + hex.EncodeToString(sum[:4])
	return filepath.Join(targetCacheDir(cacheRoot, spec), name)
}

func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '+'
		if !ok {
			b[i] = '_'
		}
	}
	if b[0] == '.' {
		b[0] = '_'
	}
	return string(b)
}

// LookupMirror returns the complete mirror of pkg for the target, without
// touching the target: the most recent one if several versions are cached.
func LookupMirror(cacheRoot string, spec Spec, pkg string) (*MirrorTree, error) {
	m, err := lookupMirrorIn(targetCacheDir(cacheRoot, spec), pkg)
	if err != nil {
		return nil, fmt.Errorf("look up mirror of %s for target %q: %w", pkg, spec.Name, err)
	}
	return m, nil
}

// LookupMirrorIn is LookupMirror in a target's cache directory
// (<cache>/<target>/<identity>, CachePlace.TargetDir).
func LookupMirrorIn(targetDir, pkg string) (*MirrorTree, error) {
	m, err := lookupMirrorIn(targetDir, pkg)
	if err != nil {
		return nil, fmt.Errorf("look up mirror of %s in %s: %w", pkg, targetDir, err)
	}
	return m, nil
}

func lookupMirrorIn(dir, pkg string) (*MirrorTree, error) {
	entries, err := readCacheDir(dir)
	if err != nil {
		return nil, err
	}
	var best *MirrorTree
	prefix := sanitize(pkg) + "-"
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		m, err := OpenMirror(filepath.Join(dir, e.Name()))
		if err != nil || m.Manifest.Package != pkg {
			continue
		}
		if best == nil || m.Manifest.Created.After(best.Manifest.Created) {
			best = m
		}
	}
	if best == nil {
		return nil, fs.ErrNotExist
	}
	return best, nil
}

// OpenMirror opens the mirror at root, checking its manifest: its format,
// that the target paths it records are absolute and clean (a relative
// site such as x/../.. would let target paths escape the mirror), and
// that the tree holds exactly the regular files it lists, none over the
// per-file limit it was made with. The manifest is read as any file of
// the cache is (readCacheFile: no link, no FIFO or device, at most
// maxManifestBytes), and the limits it states only narrow the binary's
// own (DefaultMirrorLimits): a manifest cannot make a larger file, or
// more files or bytes, acceptable.
func OpenMirror(root string) (*MirrorTree, error) {
	data, err := readCacheFile(filepath.Join(root, manifestName), maxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("open mirror %s: manifest: %w", root, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("open mirror %s: manifest: %w", root, err)
	}
	if m.Format != MirrorFormat || m.Package == "" || m.Member == "" || m.TargetSiteDir == "" {
		return nil, fmt.Errorf("open mirror %s: manifest of format %d is not usable", root, m.Format)
	}
	if err := validMember(m.Member); err != nil {
		return nil, fmt.Errorf("open mirror %s: %w", root, err)
	}
	if !cleanAbs(m.TargetSiteDir) {
		return nil, fmt.Errorf("open mirror %s: target site dir %q is not an absolute clean path", root, truncate(m.TargetSiteDir, 200))
	}
	site := filepath.Join(root, siteDirName)
	if st, err := os.Lstat(filepath.Join(site, m.Member)); err != nil {
		return nil, fmt.Errorf("open mirror %s: %w", root, err)
	} else if st.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("open mirror %s: %s is a symbolic link", root, m.Member)
	}
	own := DefaultMirrorLimits()
	maxFile := own.MaxFileBytes
	if m.MaxFileBytes > 0 && m.MaxFileBytes < maxFile {
		maxFile = m.MaxFileBytes
	}
	if m.Files < 0 || m.Files > own.MaxFiles || m.Bytes < 0 || m.Bytes > own.MaxBytes {
		return nil, fmt.Errorf("open mirror %s: the manifest states %d files of %d bytes, outside the limits of %d files and %s per package",
			root, m.Files, m.Bytes, own.MaxFiles, byteSize(own.MaxBytes))
	}
	if err := checkTreeSize(site, m.Files, m.Bytes, maxFile); err != nil {
		return nil, fmt.Errorf("open mirror %s: %w", root, err)
	}
	return &MirrorTree{Root: root, SiteDir: site, TargetDir: m.TargetSiteDir, Manifest: m}, nil
}

// checkTreeSize compares the regular files under site with the count and
// total size the manifest recorded, so that a mirror with a file deleted,
// truncated or added since it was written is not trusted; a file over
// maxFile (left by a version without the limit) fails it too. It costs
// one stat per file, a few milliseconds for torch.
func checkTreeSize(site string, wantFiles int, wantBytes, maxFile int64) error {
	files, bytes := 0, int64(0)
	err := filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		if info.Size() > maxFile {
			return fmt.Errorf("%s is %s, over the per-file limit of %s", p, byteSize(info.Size()), byteSize(maxFile))
		}
		files++
		bytes += info.Size()
		if files > wantFiles {
			return fmt.Errorf("more than the %d files of the manifest", wantFiles)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("damaged: %w", err)
	}
	if files != wantFiles || bytes != wantBytes {
		return fmt.Errorf("damaged: %d files of %d bytes, manifest says %d files of %d bytes", files, bytes, wantFiles, wantBytes)
	}
	return nil
}

// MirrorOptions adjusts MirrorWith.
type MirrorOptions struct {
	// Limits bound the transfer; zero fields take DefaultMirrorLimits.
	Limits MirrorLimits
	// Progress, if not nil, is called as file bytes arrive, with the total
	// the target announced.
	Progress func(doneBytes, totalBytes int64)
	// Compression overrides the choice by target ("" chooses: none for
	// local targets, gzip otherwise).
	Compression Compression
}

// Mirror copies the .py and .pyi files of the package info describes from
// the target into the cache, as one streamed archive read by a separate
// process on the target, within DefaultMirrorLimits. A complete mirror of
// the same files (same count and bytes) is reused without a transfer. The
// mirror appears atomically: an interrupted transfer leaves nothing that
// LookupMirror would use.
//
// progress, if not nil, is called as file bytes arrive, with the total the
// target announced. The stream is a plain tar for local targets (fastest
// there) and tar.gz at level 1 otherwise (about 4x smaller).
func Mirror(ctx context.Context, t Target, spec Spec, info PackageInfo, cacheRoot string, progress func(doneBytes, totalBytes int64)) (*MirrorTree, error) {
	return MirrorWith(ctx, t, spec, info, cacheRoot, MirrorOptions{Progress: progress})
}

// MirrorWith is Mirror with explicit limits. Every limit that is hit fails
// the mirror with a message naming it (a file over MaxFileBytes is only
// skipped and listed), and a stall in any phase — no header after the
// start, no bytes during the stream, no exit after it — stops the
// transfer; nothing of a failed mirror is kept, so the next call tries
// again.
func MirrorWith(ctx context.Context, t Target, spec Spec, info PackageInfo, cacheRoot string, opts MirrorOptions) (*MirrorTree, error) {
	comp := opts.Compression
	if comp == "" {
		comp = CompressGzip
		if spec.IsLocal() {
			comp = CompressNone
		}
	}
	return mirrorLimited(ctx, t, spec, info, cacheRoot, comp, opts.Limits.withDefaults(), opts.Progress)
}

func mirror(ctx context.Context, t Target, spec Spec, info PackageInfo, cacheRoot string, comp Compression, progress func(int64, int64)) (*MirrorTree, error) {
	return mirrorLimited(ctx, t, spec, info, cacheRoot, comp, DefaultMirrorLimits(), progress)
}

// checkInfo refuses a package description whose paths could make a mirror
// or its lookups leave the cache: the site must be absolute and clean, and
// the location must be the member inside it.
func checkInfo(info PackageInfo) error {
	if info.Name == "" || info.Site == "" || info.Member == "" {
		return errors.New("package info lacks its location")
	}
	if err := validMember(info.Member); err != nil {
		return err
	}
	if !cleanAbs(info.Site) {
		return fmt.Errorf("the target reported site dir %q, which is not an absolute clean path: refused", truncate(info.Site, 200))
	}
	if info.Location != "" && info.Location != path.Join(info.Site, info.Member) {
		return fmt.Errorf("the target reported location %q, which is not %s inside site dir %s: refused",
			truncate(info.Location, 200), info.Member, info.Site)
	}
	return nil
}

func mirrorLimited(ctx context.Context, t Target, spec Spec, info PackageInfo, cacheRoot string, comp Compression, lim MirrorLimits, progress func(int64, int64)) (*MirrorTree, error) {
	if err := checkInfo(info); err != nil {
		return nil, fmt.Errorf("mirror %s: %w", info.Name, err)
	}
	if info.FilesCount > lim.MaxFiles {
		return nil, fmt.Errorf("mirror %s: the target has %d source files, over the limit of %d files per package: not mirrored", info.Name, info.FilesCount, lim.MaxFiles)
	}
	final := MirrorDir(cacheRoot, spec, info)
	if m, err := OpenMirror(final); err == nil && sameInstall(m, info) {
		return m, nil
	}
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("mirror %s: %w", info.Name, err)
	}
	cleanLeftovers(parent)

	tmp, err := os.MkdirTemp(parent, fmt.Sprintf("%s%s-%d-", tmpPrefix, sanitize(info.Name), os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("mirror %s: %w", info.Name, err)
	}
	done := false
	defer func() {
		if !done {
			removeTree(tmp)
		}
	}()

	res, err := fetchTree(ctx, t, spec, info, comp, filepath.Join(tmp, siteDirName), lim, progress)
	if err != nil {
		return nil, fmt.Errorf("mirror %s from target %q: %w", info.Name, t.Name(), err)
	}
	skipped, more := res.skipped, res.skippedMore
	if len(skipped) > maxSkipped {
		skipped, more = skipped[:maxSkipped], more+len(skipped)-maxSkipped
	}
	man := Manifest{
		Format: MirrorFormat, Target: spec.Name, Identity: TargetIdentity(spec),
		Package: info.Name, Version: info.Version, Member: info.Member,
		TargetPackageDir: info.Location, TargetSiteDir: info.Site,
		Files: res.Files, Bytes: res.Bytes, TargetFiles: info.FilesCount, TargetBytes: info.Bytes,
		MaxFileBytes: lim.MaxFileBytes, Compression: string(comp), Created: time.Now().UTC(),
		Skipped: skipped, SkippedMore: more,
	}
	if err := finishTree(tmp, man); err != nil {
		return nil, fmt.Errorf("mirror %s: %w", info.Name, err)
	}
	if m, err := OpenMirror(final); err == nil && sameInstall(m, info) {
		// A concurrent Mirror of the same files finished first.
		return m, nil
	}
	if err := replaceDir(tmp, final); err != nil {
		// Someone else may have finished the same mirror first.
		if m, err2 := OpenMirror(final); err2 == nil && sameInstall(m, info) {
			return m, nil
		}
		return nil, fmt.Errorf("mirror %s: %w", info.Name, err)
	}
	done = true
	return OpenMirror(final)
}

// sameInstall reports whether a mirror was made from the install info
// describes: its version and paths on the target as well as its counts
// (skipped files included). The version a mirror's manifest states is
// what decides which tracebacks link into it, so a manifest that states
// another version than the target's (left by a damaged or edited cache)
// is mirrored again, not reused.
func sameInstall(m *MirrorTree, info PackageInfo) bool {
	got := m.Info()
	return got.Name == info.Name && got.Version == info.Version && got.Location == info.Location &&
		got.Site == info.Site && got.Member == info.Member &&
		got.FilesCount == info.FilesCount && got.Bytes == info.Bytes
}

// finishTree writes the manifest last and makes the tree read-only.
func finishTree(tmp string, man Manifest) error {
	data, err := manifestJSON(man)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(tmp, manifestName), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	// The mirror's own directory stays writable by its owner: the index
	// cache (index.bin) is written there later. Only the sources under
	// site/ are read-only.
	if err := readOnlyDirs(tmp); err != nil {
		return err
	}
	return os.Chmod(tmp, 0o755)
}

// manifestJSON encodes a manifest within maxManifestBytes, which
// OpenMirror reads at most: skipped files past the bound are counted in
// SkippedMore instead of listed.
func manifestJSON(man Manifest) ([]byte, error) {
	for {
		data, err := json.MarshalIndent(man, "", "  ")
		if err != nil || len(data) <= maxManifestBytes {
			return data, err
		}
		if len(man.Skipped) == 0 {
			return nil, fmt.Errorf("manifest of %s, over the limit of %s", byteSize(int64(len(data))), byteSize(maxManifestBytes))
		}
		keep := len(man.Skipped) / 2
		man.SkippedMore += len(man.Skipped) - keep
		man.Skipped = man.Skipped[:keep:keep]
	}
}

// replaceDir renames tmp to final, moving an outdated final aside first.
func replaceDir(tmp, final string) error {
	err := os.Rename(tmp, final)
	if err == nil {
		return nil
	}
	if _, statErr := os.Lstat(final); statErr != nil {
		return err
	}
	old := filepath.Join(filepath.Dir(final), oldPrefix+filepath.Base(final)+"-"+randomSuffix())
	// A read-only directory cannot be renamed into a new parent on some
	// systems; both stay in the same parent here.
	if err := os.Rename(final, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	removeTree(old)
	return nil
}

func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cleanLeftovers removes temporary directories of attempts that can no
// longer finish: their process is gone, or they are very old.
func cleanLeftovers(dir string) {
	entries, err := readCacheDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, oldPrefix):
			removeTree(filepath.Join(dir, name))
		case strings.HasPrefix(name, tmpPrefix):
			if tmpAbandoned(filepath.Join(dir, name), name) {
				removeTree(filepath.Join(dir, name))
			}
		}
	}
}

func tmpAbandoned(p, name string) bool {
	if st, err := os.Stat(p); err == nil && time.Since(st.ModTime()) > staleTmpAge {
		return true
	}
	// .tmp-<pkg>-<pid>-<random>
	parts := strings.Split(name, "-")
	if len(parts) < 3 {
		return true
	}
	pid, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || pid <= 0 {
		return true
	}
	if pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// removeTree removes a tree that may have been made read-only.
func removeTree(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(root)
}

// treeStats counts what was received.
type treeStats struct {
	Files int
	Bytes int64
}

// untarResult is what a stream brought: the files kept, and the package's
// files that were not (too large here, or unreadable on the target).
type untarResult struct {
	treeStats
	skipped     []SkippedFile
	skippedMore int // skipped files the target did not list
}

// streamMeta is the header or summary entry of a mirror stream.
type streamMeta struct {
	Files       int               `json:"files"`
	Bytes       int64             `json:"bytes"`
	Skipped     []json.RawMessage `json:"skipped"`
	SkippedMore int               `json:"skipped_more"`
}

// fetchTree runs the mirror script on the target and unpacks its stream
// into dest, every phase under a deadline (see mirrorWatch).
func fetchTree(ctx context.Context, t Target, spec Spec, info PackageInfo, comp Compression, dest string, lim MirrorLimits, progress func(int64, int64)) (untarResult, error) {
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	w := newMirrorWatch(lim, cancel, info.FilesCount, info.Bytes)
	defer w.stop()
	proc, err := t.Start(ctx, bootstrapCommand(spec, "torchlsp_mirror"))
	if err != nil {
		return untarResult{}, w.explain(ctx, err)
	}
	defer proc.Kill()
	w.closeOnFire(proc.Stdout())
	stderr := newRingBuffer(20)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		stderr.readFrom(proc.Stderr())
	}()
	params, err := json.Marshal(map[string]any{
		"site": info.Site, "member": info.Member, "is_package": info.IsPackage, "compress": string(comp),
		"max_file_bytes": lim.MaxFileBytes,
	})
	if err != nil {
		return untarResult{}, err
	}
	sendErr := make(chan error, 1)
	go func() {
		in := proc.Stdin()
		err := SendProgram(in, mirrorSource)
		if err == nil {
			_, err = in.Write(append(params, '\n'))
		}
		in.Close()
		sendErr <- err
	}()
	fail := func(err error) (untarResult, error) {
		return untarResult{}, withStderr(w.explain(ctx, err), proc, stderr, stderrDone)
	}

	var r io.Reader = bufio.NewReaderSize(w.reader(proc.Stdout()), 256<<10)
	if comp == CompressGzip {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fail(fmt.Errorf("read stream: %w", err))
		}
		zr.Multistream(false)
		r = zr
	}
	r = &capReader{r: r, left: lim.MaxStreamBytes, limit: lim.MaxStreamBytes}
	res, err := untarTree(r, dest, info.Member, info.IsPackage, lim, untarObserver{
		progress: progress, announced: info.Bytes, header: w.headerCame, file: w.fileCame,
	})
	if err == nil {
		// Reach the gzip trailer so that its checksum is verified, and let
		// the script finish writing its tar padding.
		_, err = io.CopyN(io.Discard, r, 1<<20)
		if errors.Is(err, io.EOF) {
			err = nil
		} else if err == nil {
			err = errors.New("unexpected data after the archive")
		}
	}
	if err != nil {
		return fail(err)
	}
	w.streamEnded()
	if err := <-sendErr; err != nil {
		return fail(err)
	}
	if err := proc.Wait(); err != nil {
		return fail(fmt.Errorf("mirror script: %w", err))
	}
	if err := w.fired(); err != nil {
		return fail(err)
	}
	return res, nil
}

// streamTooLarge is the error of a capReader past its limit.
type streamTooLarge struct{ limit int64 }

func (e *streamTooLarge) Error() string {
	return fmt.Sprintf("the unpacked stream passed the limit of %s: refused", byteSize(e.limit))
}

// capReader fails once more than limit bytes have been read through it.
type capReader struct {
	r     io.Reader
	left  int64
	limit int64
}

func (c *capReader) Read(b []byte) (int, error) {
	if c.left <= 0 {
		return 0, &streamTooLarge{c.limit}
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}

func withStderr(err error, proc Process, stderr *ringBuffer, done <-chan struct{}) error {
	proc.Kill()
	t := time.NewTimer(500 * time.Millisecond)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	lines := stderr.lines()
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	if len(lines) == 0 {
		return err
	}
	return fmt.Errorf("%w: %s", err, strings.Join(lines, "\n"))
}

// untarObserver is told what untarTree receives.
type untarObserver struct {
	progress  func(done, total int64) // file bytes kept, of the announced total
	announced int64                   // the expected total until the header says
	header    func(files int, bytes int64)
	file      func(kept treeStats)
}

// untarTree unpacks a mirror stream into dest, accepting only regular .py
// and .pyi files under member (or member itself for a single module), and
// checks the result against the stream's summary. An entry of any other
// type (a symbolic or hard link, a directory, a FIFO, a device) is
// refused whatever it names: a link on the target can reach the mirror
// only as the bytes of a regular file, and the mirror script sends those
// only for files its walk reached through no link (the rule on links that
// torchlsp_mirror.py shares with the helper). Files over
// lim.MaxFileBytes are read past, not written, and listed as skipped; more
// files than lim.MaxFiles, or more bytes than lim.MaxBytes, fail it.
func untarTree(r io.Reader, dest, member string, isPackage bool, lim MirrorLimits, obs untarObserver) (untarResult, error) {
	lim = lim.withDefaults()
	var res untarResult
	var sent treeStats // every file entry, skipped ones included
	var header, summary *streamMeta
	announced := obs.announced
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return res, err
	}
	made := map[string]bool{dest: true}
	if isPackage {
		// An empty package is still a package.
		if err := os.MkdirAll(filepath.Join(dest, member), 0o755); err != nil {
			return res, err
		}
	}
	tr := tar.NewReader(r)
	buf := make([]byte, 256<<10)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("read stream: %w", err)
		}
		if summary != nil {
			return res, fmt.Errorf("entry %q after the summary", truncate(hdr.Name, 200))
		}
		if hdr.Name == headerEntry || hdr.Name == summaryEntry {
			meta, err := readMeta(tr, hdr)
			if err != nil {
				return res, err
			}
			if hdr.Name == headerEntry {
				if header != nil || sent.Files > 0 {
					return res, errors.New("misplaced stream header")
				}
				// Bytes are checked as files arrive: announced bytes may
				// belong to files that are only skipped.
				if meta.Files > lim.MaxFiles || meta.Files < 0 {
					return res, fmt.Errorf("the target announced %d files, over the limit of %d files per package: not mirrored", meta.Files, lim.MaxFiles)
				}
				header = meta
				announced = meta.Bytes
				if obs.header != nil {
					obs.header(meta.Files, meta.Bytes)
				}
			} else {
				summary = meta
			}
			continue
		}
		rel, err := checkEntry(hdr, member, isPackage)
		if err != nil {
			return res, err
		}
		if sent.Files >= lim.MaxFiles {
			return res, fmt.Errorf("the target sent more than %d files, the limit per package: not mirrored", lim.MaxFiles)
		}
		sent.Files++
		sent.Bytes += hdr.Size
		if hdr.Size > lim.MaxFileBytes {
			// Too large to index: read past it (the stream limit bounds
			// that) and say so, rather than fail the package.
			if _, err := io.CopyBuffer(io.Discard, tr, buf); err != nil {
				return res, fmt.Errorf("entry %q: %w", rel, err)
			}
			res.skipped = append(res.skipped, SkippedFile{Path: rel, Size: hdr.Size,
				Reason: fmt.Sprintf("%s, over the per-file limit of %s", byteSize(hdr.Size), byteSize(lim.MaxFileBytes))})
			continue
		}
		if res.Bytes+hdr.Size > lim.MaxBytes {
			return res, fmt.Errorf("the target sent more than %s of files, the limit per package: not mirrored", byteSize(lim.MaxBytes))
		}
		target := filepath.Join(dest, filepath.FromSlash(rel))
		if dir := filepath.Dir(target); !made[dir] {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return res, err
			}
			made[dir] = true
		}
		// Created read-only: the descriptor stays writable.
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
		if err != nil {
			return res, fmt.Errorf("entry %q: %w", rel, err)
		}
		n, err := io.CopyBuffer(f, io.LimitReader(tr, hdr.Size), buf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && n != hdr.Size {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return res, fmt.Errorf("entry %q: %w", rel, err)
		}
		res.Files++
		res.Bytes += n
		if obs.file != nil {
			obs.file(res.treeStats)
		}
		if obs.progress != nil {
			obs.progress(res.Bytes, announced)
		}
	}
	if summary == nil {
		return res, errors.New("stream ended without its summary: incomplete transfer")
	}
	if summary.Files != sent.Files || summary.Bytes != sent.Bytes {
		return res, fmt.Errorf("received %d files (%d bytes), the target sent %d (%d bytes)",
			sent.Files, sent.Bytes, summary.Files, summary.Bytes)
	}
	if header != nil && len(summary.Skipped) == 0 && (header.Files != sent.Files || header.Bytes != sent.Bytes) {
		// Files changed on the target while they were read.
		return res, fmt.Errorf("package changed during the transfer: announced %d files (%d bytes), sent %d (%d bytes)",
			header.Files, header.Bytes, sent.Files, sent.Bytes)
	}
	res.skipped = append(res.skipped, targetSkips(summary.Skipped, member, isPackage)...)
	if summary.SkippedMore > 0 && summary.SkippedMore <= lim.MaxFiles {
		res.skippedMore = summary.SkippedMore
	}
	return res, nil
}

// targetSkips reads the files the target's script did not send (too
// large, unreadable) from its summary. Entries that do not name a file of
// the package are dropped: the list is shown to the user, and a target
// decides what is in it.
func targetSkips(raw []json.RawMessage, member string, isPackage bool) []SkippedFile {
	var out []SkippedFile
	for _, r := range raw {
		if len(out) >= maxSkipped {
			break
		}
		var e struct {
			Name  string `json:"name"`
			Size  *int64 `json:"size"`
			Error string `json:"error"`
		}
		if json.Unmarshal(r, &e) != nil {
			continue
		}
		rel, err := checkName(e.Name, member, isPackage)
		if err != nil {
			continue
		}
		size := int64(-1)
		if e.Size != nil && *e.Size >= 0 {
			size = *e.Size
		}
		reason := strings.ToValidUTF8(truncate(e.Error, 200), "?")
		if reason == "" {
			reason = "not sent by the target"
		}
		out = append(out, SkippedFile{Path: rel, Size: size, Reason: "on the target: " + reason})
	}
	return out
}

func readMeta(tr *tar.Reader, hdr *tar.Header) (*streamMeta, error) {
	if hdr.Typeflag != tar.TypeReg || hdr.Size > 1<<20 {
		return nil, fmt.Errorf("bad stream entry %q", hdr.Name)
	}
	data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
	if err != nil {
		return nil, fmt.Errorf("entry %q: %w", hdr.Name, err)
	}
	var m streamMeta
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		return nil, fmt.Errorf("entry %q: %w", hdr.Name, err)
	}
	return &m, nil
}

// checkEntry returns the entry's clean relative path, or why it is refused.
func checkEntry(hdr *tar.Header, member string, isPackage bool) (string, error) {
	if hdr.Typeflag != tar.TypeReg {
		return "", fmt.Errorf("refused stream entry %q: not a regular file", truncate(hdr.Name, 200))
	}
	if hdr.Size < 0 {
		return "", fmt.Errorf("refused stream entry %q: size %d", truncate(hdr.Name, 200), hdr.Size)
	}
	return checkName(hdr.Name, member, isPackage)
}

// checkName returns name if it is a clean relative path of a Python
// source file of the package, or why it is refused.
func checkName(name, member string, isPackage bool) (string, error) {
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("refused stream entry %q: %s", truncate(name, 200), why)
	}
	if len(name) > maxPath {
		return refuse("path too long")
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsRune(name, 0) {
		return refuse("not a relative path")
	}
	if path.Clean(name) != name {
		return refuse("not a clean path")
	}
	parts := strings.Split(name, "/")
	if len(parts) > maxDepth {
		return refuse("too deep")
	}
	for _, part := range parts {
		if part == ".." || part == "." || part == "" {
			return refuse("path escapes")
		}
		if len(part) > maxPathPart {
			return refuse("a name in it is too long")
		}
	}
	if !strings.HasSuffix(name, ".py") && !strings.HasSuffix(name, ".pyi") {
		return refuse("not a Python source file")
	}
	if isPackage && !strings.HasPrefix(name, member+"/") || !isPackage && name != member {
		return refuse("outside " + member)
	}
	return name, nil
}
