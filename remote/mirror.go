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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MirrorFormat is the version of the mirror layout and manifest.
const MirrorFormat = 1

const (
	manifestName  = "manifest.json"
	siteDirName   = "site"
	tmpPrefix     = ".tmp-"
	oldPrefix     = ".old-"
	headerEntry   = ".torchlsp/header.json"
	summaryEntry  = ".torchlsp/summary.json"
	maxMirrorFile = 256 << 20 // one source file; torch's largest is a few MB
	staleTmpAge   = 24 * time.Hour
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
	Files            int       `json:"files"`
	Bytes            int64     `json:"bytes"`
	Compression      string    `json:"compression"`
	Created          time.Time `json:"created"`
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
// reports false for paths outside the mirrored package.
func (m *MirrorTree) LocalPath(targetPath string) (string, bool) {
	clean := path.Clean(targetPath)
	prefix := path.Join(m.TargetDir, m.Manifest.Member)
	if clean != prefix && !strings.HasPrefix(clean, prefix+"/") {
		return "", false
	}
	rel := strings.TrimPrefix(clean, m.TargetDir+"/")
	return filepath.Join(m.SiteDir, filepath.FromSlash(rel)), true
}

func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
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
	dir := targetCacheDir(cacheRoot, spec)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("look up mirror of %s for target %q: %w", pkg, spec.Name, err)
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
		return nil, fmt.Errorf("look up mirror of %s for target %q: %w", pkg, spec.Name, fs.ErrNotExist)
	}
	return best, nil
}

// OpenMirror opens the mirror at root, checking its manifest.
func OpenMirror(root string) (*MirrorTree, error) {
	data, err := os.ReadFile(filepath.Join(root, manifestName))
	if err != nil {
		return nil, fmt.Errorf("open mirror %s: %w", root, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("open mirror %s: manifest: %w", root, err)
	}
	if m.Format != MirrorFormat || m.Package == "" || m.Member == "" || m.TargetSiteDir == "" {
		return nil, fmt.Errorf("open mirror %s: manifest of format %d is not usable", root, m.Format)
	}
	site := filepath.Join(root, siteDirName)
	if _, err := os.Stat(filepath.Join(site, m.Member)); err != nil {
		return nil, fmt.Errorf("open mirror %s: %w", root, err)
	}
	if err := checkTreeSize(site, m.Files, m.Bytes); err != nil {
		return nil, fmt.Errorf("open mirror %s: %w", root, err)
	}
	return &MirrorTree{Root: root, SiteDir: site, TargetDir: m.TargetSiteDir, Manifest: m}, nil
}

// checkTreeSize compares the regular files under site with the count and
// total size the manifest recorded, so that a mirror with a file deleted,
// truncated or added since it was written is not trusted. It costs one
// stat per file, a few milliseconds for torch.
func checkTreeSize(site string, wantFiles int, wantBytes int64) error {
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
		files++
		bytes += info.Size()
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

// Mirror copies the .py and .pyi files of the package info describes from
// the target into the cache, as one streamed archive read by a separate
// process on the target. A complete mirror of the same files (same count
// and bytes) is reused without a transfer. The mirror appears atomically:
// an interrupted transfer leaves nothing that LookupMirror would use.
//
// progress, if not nil, is called as file bytes arrive, with the total the
// target announced. The stream is a plain tar for local targets (fastest
// there) and tar.gz at level 1 otherwise (about 4x smaller).
func Mirror(ctx context.Context, t Target, spec Spec, info PackageInfo, cacheRoot string, progress func(doneBytes, totalBytes int64)) (*MirrorTree, error) {
	comp := CompressGzip
	if spec.IsLocal() {
		comp = CompressNone
	}
	return mirror(ctx, t, spec, info, cacheRoot, comp, progress)
}

func mirror(ctx context.Context, t Target, spec Spec, info PackageInfo, cacheRoot string, comp Compression, progress func(int64, int64)) (*MirrorTree, error) {
	if info.Name == "" || info.Site == "" || info.Member == "" {
		return nil, fmt.Errorf("mirror %s: package info lacks its location", info.Name)
	}
	if m := info.Member; m == "." || m == ".." || strings.ContainsAny(m, "/\\\x00") {
		return nil, fmt.Errorf("mirror %s: bad member name %q", info.Name, m)
	}
	final := MirrorDir(cacheRoot, spec, info)
	if m, err := OpenMirror(final); err == nil && m.Manifest.Files == info.FilesCount && m.Manifest.Bytes == info.Bytes {
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

	stats, err := fetchTree(ctx, t, spec, info, comp, filepath.Join(tmp, siteDirName), progress)
	if err != nil {
		return nil, fmt.Errorf("mirror %s from target %q: %w", info.Name, t.Name(), err)
	}
	man := Manifest{
		Format: MirrorFormat, Target: spec.Name, Identity: TargetIdentity(spec),
		Package: info.Name, Version: info.Version, Member: info.Member,
		TargetPackageDir: info.Location, TargetSiteDir: info.Site,
		Files: stats.Files, Bytes: stats.Bytes, Compression: string(comp), Created: time.Now().UTC(),
	}
	if err := finishTree(tmp, man); err != nil {
		return nil, fmt.Errorf("mirror %s: %w", info.Name, err)
	}
	if m, err := OpenMirror(final); err == nil && m.Manifest.Files == stats.Files && m.Manifest.Bytes == stats.Bytes {
		// A concurrent Mirror of the same files finished first.
		return m, nil
	}
	if err := replaceDir(tmp, final); err != nil {
		// Someone else may have finished the same mirror first.
		if m, err2 := OpenMirror(final); err2 == nil {
			return m, nil
		}
		return nil, fmt.Errorf("mirror %s: %w", info.Name, err)
	}
	done = true
	return OpenMirror(final)
}

// finishTree writes the manifest last and makes the tree read-only.
func finishTree(tmp string, man Manifest) error {
	data, err := json.MarshalIndent(man, "", "  ")
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
	// Directories last, deepest first, so that the walk is not locked out.
	var dirs []string
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if d == tmp {
			// The mirror's own directory stays writable by its owner: the
			// index cache (index.bin) is written there later. Only the
			// sources under site/ are read-only.
			if err := os.Chmod(d, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
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
	entries, err := os.ReadDir(dir)
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

// streamMeta is the header or summary entry of a mirror stream.
type streamMeta struct {
	Files   int               `json:"files"`
	Bytes   int64             `json:"bytes"`
	Skipped []json.RawMessage `json:"skipped"`
}

// fetchTree runs the mirror script on the target and unpacks its stream
// into dest.
func fetchTree(ctx context.Context, t Target, spec Spec, info PackageInfo, comp Compression, dest string, progress func(int64, int64)) (treeStats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	proc, err := t.Start(ctx, bootstrapCommand(spec, "torchlsp_mirror"))
	if err != nil {
		return treeStats{}, err
	}
	defer proc.Kill()
	stderr := newRingBuffer(20)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		stderr.readFrom(proc.Stderr())
	}()
	params, err := json.Marshal(map[string]any{
		"site": info.Site, "member": info.Member, "is_package": info.IsPackage, "compress": string(comp),
	})
	if err != nil {
		return treeStats{}, err
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

	var r io.Reader = bufio.NewReaderSize(proc.Stdout(), 256<<10)
	if comp == CompressGzip {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return treeStats{}, withStderr(fmt.Errorf("read stream: %w", err), proc, stderr, stderrDone)
		}
		zr.Multistream(false)
		r = zr
	}
	stats, err := untarTree(r, dest, info.Member, info.IsPackage, progress, info.Bytes)
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
		return stats, withStderr(err, proc, stderr, stderrDone)
	}
	if err := <-sendErr; err != nil {
		return stats, withStderr(err, proc, stderr, stderrDone)
	}
	if err := proc.Wait(); err != nil {
		return stats, withStderr(fmt.Errorf("mirror script: %w", err), proc, stderr, stderrDone)
	}
	return stats, nil
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

// untarTree unpacks a mirror stream into dest, accepting only regular .py
// and .pyi files under member (or member itself for a single module), and
// checks the result against the stream's summary. announced is the
// expected byte total used for progress until the header arrives.
func untarTree(r io.Reader, dest, member string, isPackage bool, progress func(int64, int64), announced int64) (treeStats, error) {
	var stats treeStats
	var header, summary *streamMeta
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return stats, err
	}
	made := map[string]bool{dest: true}
	if isPackage {
		// An empty package is still a package.
		if err := os.MkdirAll(filepath.Join(dest, member), 0o755); err != nil {
			return stats, err
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
			return stats, fmt.Errorf("read stream: %w", err)
		}
		if summary != nil {
			return stats, fmt.Errorf("entry %q after the summary", hdr.Name)
		}
		if hdr.Name == headerEntry || hdr.Name == summaryEntry {
			meta, err := readMeta(tr, hdr)
			if err != nil {
				return stats, err
			}
			if hdr.Name == headerEntry {
				if header != nil || stats.Files > 0 {
					return stats, errors.New("misplaced stream header")
				}
				header = meta
				announced = meta.Bytes
			} else {
				summary = meta
			}
			continue
		}
		rel, err := checkEntry(hdr, member, isPackage)
		if err != nil {
			return stats, err
		}
		target := filepath.Join(dest, filepath.FromSlash(rel))
		if dir := filepath.Dir(target); !made[dir] {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return stats, err
			}
			made[dir] = true
		}
		// Created read-only: the descriptor stays writable.
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
		if err != nil {
			return stats, fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
		n, err := io.CopyBuffer(f, io.LimitReader(tr, hdr.Size), buf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && n != hdr.Size {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return stats, fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
		stats.Files++
		stats.Bytes += n
		if progress != nil {
			progress(stats.Bytes, announced)
		}
	}
	if summary == nil {
		return stats, errors.New("stream ended without its summary: incomplete transfer")
	}
	if summary.Files != stats.Files || summary.Bytes != stats.Bytes {
		return stats, fmt.Errorf("received %d files (%d bytes), the target sent %d (%d bytes)",
			stats.Files, stats.Bytes, summary.Files, summary.Bytes)
	}
	if header != nil && len(summary.Skipped) == 0 && (header.Files != stats.Files || header.Bytes != stats.Bytes) {
		// Files changed on the target while they were read.
		return stats, fmt.Errorf("package changed during the transfer: announced %d files (%d bytes), sent %d (%d bytes)",
			header.Files, header.Bytes, stats.Files, stats.Bytes)
	}
	return stats, nil
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
	name := hdr.Name
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("refused stream entry %q: %s", name, why)
	}
	if hdr.Typeflag != tar.TypeReg {
		return refuse("not a regular file")
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsRune(name, 0) {
		return refuse("not a relative path")
	}
	if path.Clean(name) != name {
		return refuse("not a clean path")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." || part == "." || part == "" {
			return refuse("path escapes")
		}
	}
	if !strings.HasSuffix(name, ".py") && !strings.HasSuffix(name, ".pyi") {
		return refuse("not a Python source file")
	}
	if isPackage && !strings.HasPrefix(name, member+"/") || !isPackage && name != member {
		return refuse("outside " + member)
	}
	if hdr.Size < 0 || hdr.Size > maxMirrorFile {
		return refuse("size " + strconv.FormatInt(hdr.Size, 10))
	}
	return name, nil
}
