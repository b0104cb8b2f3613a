package links

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/traceback"
)

// Target paths in tracebacks and logs are mapped to local files only
// through prefixes torchlsp knows: the site dir a mirror stands for, a
// target's workdir (torchlsp.toml), the directories repro runs put the
// workspace in, and the workspace folders themselves (a local target, or
// one that shares the files). A path is cleaned first, `..` may not
// leave the prefix, and the file must exist inside the mirror (proven by
// remote.MirrorTree.Contain) or inside the workspace folder (through an
// os.Root); anything else stays plain text. Nothing a target printed is
// ever used as a local path itself.

// mirrorPrefix is one mirrored package a target path may land in.
type mirrorPrefix struct {
	pkg       *session.Package
	target    string
	member    string // "torch", or "six.py"
	siteDir   string // the site dir on the target, clean and absolute
	version   string
	confirmed bool // the target confirmed the mirror is its current install
}

// workPrefix maps a directory on a target to a workspace folder.
type workPrefix struct {
	dir   string // on the target: clean, absolute, not "/"
	local string // the workspace folder
	why   string // for the link's tooltip
}

// pathMap maps the paths one text names; a request makes one and closes
// it. Results are memoized per path, so a log that names one file ten
// thousand times checks it once.
type pathMap struct {
	mirrors  []mirrorPrefix
	prefixes []workPrefix // longest dir first
	folders  []string     // workspace folders, for relative paths
	roots    map[string]*os.Root
	memo     map[refKey]mapped
	// sources, when set, keeps the text of each file a path was proved to
	// lead to, read from the very handle the proof opened (prove): the
	// traceback command shows each frame's line. Links need the proof
	// alone, and keep nothing.
	sources *fileLines
	// proved, when set, is called between a file's proof and the read of
	// its text, with the local path: tests swap the file there.
	proved func(local string)
}

type refKey struct {
	path   string
	format traceback.Format
}

// mapped is where a path leads, before the version is judged.
type mapped struct {
	local  string // the local file; "" when the path maps nowhere
	mirror *mirrorPrefix
	why    string // a workspace file's origin, or why a target path is not linked
}

// Link is where one reference of a text leads.
type Link struct {
	Ref     traceback.Ref
	Path    string // the local file; "" when the reference is not linked (Tooltip says why)
	Line    int    // 0-based line in Path
	Tooltip string
	Mirror  bool   // Path is in a mirror (torch's code), not the workspace
	Target  string // the target whose mirror it is
}

// newPathMap gathers what target paths can map to: the default target's
// packages (waiting for torch's mirror, bounded by ctx), the packages other
// open sessions have loaded, the workdirs of the configuration, and those
// repro runs used. docPath, when it is a file in a repro run's folder,
// adds the workspace directories that run recorded.
func (l *Links) newPathMap(ctx context.Context, docPath string) *pathMap {
	m := &pathMap{roots: map[string]*os.Root{}, memo: map[refKey]mapped{}}
	folders := l.deps.Folders()
	m.folders = folders
	seen := map[*session.Package]bool{}
	addPkgs := func(s *session.Session, pkgs []*session.Package) {
		for _, ps := range pkgs {
			if seen[ps] || ps.Mirror() == nil {
				continue
			}
			seen[ps] = true
			m.mirrors = append(m.mirrors, mirrorPrefix{
				pkg: ps, target: s.Spec().Name, member: ps.Mirror().Manifest.Member, siteDir: ps.Mirror().TargetDir,
				version: ps.Mirror().Manifest.Version, confirmed: ps.Confirmed(),
			})
		}
	}
	if s, err := l.deps.Session(""); err == nil {
		if ps, err := s.Package(ctx, "torch"); err == nil {
			addPkgs(s, []*session.Package{ps})
		}
		addPkgs(s, s.LoadedPackages())
	}
	for _, s := range l.deps.Sessions() {
		addPkgs(s, s.LoadedPackages())
	}
	if len(folders) > 0 {
		for target, dir := range l.deps.Workdirs() {
			m.addPrefix(dir, folders[0], fmt.Sprintf("target %s's workdir %s", target, dir))
		}
	}
	for _, w := range l.traces.learned() {
		m.addPrefix(w.dir, w.local, w.why)
	}
	for _, w := range runDirPrefixes(docPath) {
		m.addPrefix(w.dir, w.local, w.why)
	}
	for _, f := range folders {
		m.addPrefix(filepath.ToSlash(f), f, "the workspace")
	}
	sort.SliceStable(m.prefixes, func(i, j int) bool { return len(m.prefixes[i].dir) > len(m.prefixes[j].dir) })
	return m
}

func (m *pathMap) addPrefix(dir, local, why string) {
	dir = path.Clean(dir)
	if !path.IsAbs(dir) || dir == "/" || local == "" || !filepath.IsAbs(local) {
		return
	}
	for _, p := range m.prefixes {
		if p.dir == dir && p.local == local {
			return
		}
	}
	m.prefixes = append(m.prefixes, workPrefix{dir: dir, local: local, why: why})
}

func (m *pathMap) close() {
	for _, r := range m.roots {
		if r != nil {
			r.Close()
		}
	}
}

// links maps every reference; versions are what the text says of the
// torch that wrote it.
func (m *pathMap) links(refs []traceback.Ref, versions []traceback.Version) []Link {
	out := make([]Link, 0, len(refs))
	for _, r := range refs {
		if l, ok := m.link(r, versions); ok {
			out = append(out, l)
		}
	}
	return out
}

// link maps one reference; ok is false when it stays plain text.
func (m *pathMap) link(r traceback.Ref, versions []traceback.Version) (Link, bool) {
	if r.Pseudo() {
		return Link{}, false
	}
	key := refKey{r.Path, r.Format}
	mp, ok := m.memo[key]
	if !ok {
		mp = m.resolve(r)
		m.memo[key] = mp
	}
	l := Link{Ref: r, Line: r.FileLine - 1}
	switch {
	case mp.mirror != nil:
		src := mp.mirror
		l.Mirror, l.Target = true, src.target
		stated, said := statedVersion(versions, r.Line, src.pkg.Name())
		switch {
		case said && !traceback.SameVersion(stated, src.version):
			l.Tooltip = fmt.Sprintf("from %s %s, but target %s's mirror holds %s %s: its lines may differ, so it is not linked",
				src.pkg.Name(), stated, src.target, src.pkg.Name(), src.version)
			return l, true
		case said:
			l.Tooltip = fmt.Sprintf("%s %s on %s (mirror), the version this text names", src.pkg.Name(), src.version, src.target)
		case src.confirmed:
			l.Tooltip = fmt.Sprintf("%s %s on %s (mirror, current): the text does not say which %s wrote it", src.pkg.Name(), src.version, src.target, src.pkg.Name())
		default:
			l.Tooltip = fmt.Sprintf("%s %s on %s (mirror, not yet checked against the target): the text does not say which %s wrote it", src.pkg.Name(), src.version, src.target, src.pkg.Name())
		}
		l.Path = mp.local
		return l, true
	case mp.local != "":
		l.Path, l.Tooltip = mp.local, "workspace file ("+mp.why+")"
		return l, true
	case mp.why != "":
		l.Tooltip = mp.why
		return l, true
	}
	return Link{}, false
}

// statedVersion is the version of pkg that a text states nearest before
// line, else the first it states after it.
func statedVersion(versions []traceback.Version, line int, pkg string) (string, bool) {
	best, found := "", false
	for _, v := range versions {
		if v.Package != pkg {
			continue
		}
		if v.Line <= line || !found {
			best, found = v.Version, true
		}
		if v.Line > line {
			break
		}
	}
	return best, found
}

// resolve finds where a path leads, whatever version wrote it.
func (m *pathMap) resolve(r traceback.Ref) mapped {
	p := r.Path
	if len(p) > 4096 || strings.ContainsRune(p, 0) {
		return mapped{}
	}
	if path.IsAbs(p) {
		return m.resolveAbs(path.Clean(p))
	}
	rel := path.Clean(p)
	if rel == ".." || strings.HasPrefix(rel, "../") || rel == "." {
		return mapped{}
	}
	first, _, _ := strings.Cut(rel, "/")
	// A path relative to a site dir (TORCH_LOGS' prefixes, torchlsp's own
	// output, a markdown report): it starts with a mirrored package.
	for i := range m.mirrors {
		src := &m.mirrors[i]
		if first == src.member {
			if local, ok := m.inMirror(src, src.siteDir+"/"+rel); ok {
				return mapped{local: local, mirror: src}
			}
		}
	}
	if r.Format == traceback.FormatShort {
		// torch's format_frame: relative to the torch package's directory,
		if got, ok := m.shortPath(rel); ok {
			return got
		}
	}
	for _, f := range m.folders {
		if local, ok := m.inWorkspace(f, rel); ok {
			return mapped{local: local, why: "relative to the workspace"}
		}
	}
	return mapped{}
}

// shortPath resolves torch's shortened paths: relative to the torch
// package (`_dynamo/output_graph.py`), or an absolute path whose first
// character shorten_filename cut (`mp/tmp.x/train.py` for
// `/tmp/tmp.x/train.py`), which only a known prefix can complete.
func (m *pathMap) shortPath(rel string) (mapped, bool) {
	for i := range m.mirrors {
		src := &m.mirrors[i]
		if strings.HasSuffix(src.member, ".py") {
			continue
		}
		if local, ok := m.inMirror(src, src.siteDir+"/"+src.member+"/"+rel); ok {
			return mapped{local: local, mirror: src}, true
		}
	}
	for _, w := range m.prefixes {
		if cut := w.dir[2:]; strings.HasPrefix(rel, cut+"/") {
			if local, ok := m.inWorkspace(w.local, rel[len(cut)+1:]); ok {
				return mapped{local: local, why: w.why}, true
			}
		}
	}
	return mapped{}, false
}

func (m *pathMap) resolveAbs(clean string) mapped {
	for i := range m.mirrors {
		src := &m.mirrors[i]
		if strings.HasPrefix(clean, src.siteDir+"/"+src.member) {
			if local, ok := m.inMirror(src, clean); ok {
				return mapped{local: local, mirror: src}
			}
		}
	}
	for _, w := range m.prefixes {
		if strings.HasPrefix(clean, w.dir+"/") {
			if local, ok := m.inWorkspace(w.local, clean[len(w.dir)+1:]); ok {
				return mapped{local: local, why: w.why}
			}
		}
	}
	// The same package from another install (another virtualenv, another
	// Python, another machine): its version is unknown.
	for i := range m.mirrors {
		src := &m.mirrors[i]
		for _, site := range []string{"/site-packages/", "/dist-packages/"} {
			at := strings.Index(clean, site+src.member+"/")
			if at < 0 {
				continue
			}
			other := clean[:at+len(site)-1]
			if other != src.siteDir {
				return mapped{why: fmt.Sprintf("from the %s in %s, not the one target %s has in %s: which version wrote this is unknown, so it is not linked",
					src.pkg.Name(), other, src.target, src.siteDir)}
			}
		}
	}
	return mapped{}
}

// inMirror proves a target path lies in the mirror and names a file there,
// opened through the mirror's site dir (prove).
func (m *pathMap) inMirror(src *mirrorPrefix, targetPath string) (string, bool) {
	tree := src.pkg.Mirror()
	local, err := tree.Contain(targetPath)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(tree.SiteDir, local)
	if err != nil {
		return "", false
	}
	return m.prove(tree.SiteDir, filepath.ToSlash(rel))
}

// inWorkspace maps rel, a slash-separated path relative to a workspace
// folder, to the folder's file (prove).
func (m *pathMap) inWorkspace(folder, rel string) (string, bool) {
	return m.prove(folder, rel)
}

// prove maps rel, a slash-separated path relative to dir, to dir's file:
// it is opened through an os.Root of dir (no `..` and no symbolic link may
// lead out of it; a named pipe does not block), and must be a regular
// file on that open handle. When the map keeps sources, the file's text
// is read from that same handle, within maxSourceFileBytes: the file
// whose line is shown is the file proved, whatever the path names by the
// time anyone reads it again. A file over the bound is linked, without
// its text.
func (m *pathMap) prove(dir, rel string) (string, bool) {
	rel = path.Clean(rel)
	if !fs.ValidPath(rel) || rel == "." {
		return "", false
	}
	root, ok := m.roots[dir]
	if !ok {
		r, err := os.OpenRoot(dir)
		if err != nil {
			r = nil
		}
		m.roots[dir] = r
		root = r
	}
	if root == nil {
		return "", false
	}
	f, _, err := localfile.OpenIn(root, filepath.FromSlash(rel))
	if err != nil {
		return "", false
	}
	defer f.Close()
	local := filepath.Join(dir, filepath.FromSlash(rel))
	if m.sources != nil && !m.sources.has(local) {
		if m.proved != nil {
			m.proved(local)
		}
		data, err := localfile.ReadOpen(f, local, maxSourceFileBytes)
		m.sources.put(local, string(data), err == nil)
	}
	return local, true
}

// runDirPrefixes reads, for a file in a repro run's folder
// (<workspace>/.torchlsp/repros/<run>/), the directories the run's
// variants put the workspace's files in on the target (workspace_dir in
// <variant>.json), each mapping back to that workspace.
func runDirPrefixes(docPath string) []workPrefix {
	if docPath == "" {
		return nil
	}
	run := filepath.Dir(docPath)
	repros := filepath.Dir(run)
	state := filepath.Dir(repros)
	if filepath.Base(repros) != "repros" || filepath.Base(state) != ".torchlsp" {
		return nil
	}
	ws := filepath.Dir(state)
	dirs := readRunWorkspaceDirs(run)
	out := make([]workPrefix, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, workPrefix{dir: d, local: ws, why: "the workspace's copy of repro run " + filepath.Base(run)})
	}
	return out
}
