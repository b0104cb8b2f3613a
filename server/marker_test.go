package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/torch26"
)

// Marker tests: data-driven tests at the engine boundary, in the manner of
// gopls' marker tests. Each testdata/markers/*.txtar is a workspace:
//
//	-- settings.json --   the editor's torchlsp settings; $PYTHON, $SITE
//	                      (testdata/site) and $TORCH211 are expanded
//	-- train.py --        a document, written to the workspace and opened
//	-- untitled:x --      a buffer that is no file
//	-- closed/lib/m.py -- a workspace file (lib/m.py) no editor opens
//	-- site/pkg/m.py --   a file of the target's site dir ($ARCHIVE_SITE);
//	                      with markers, its mirrored copy is opened and asked
//	-- @hover/name --     a golden, written by go test -run TestMarkers -update
//
// A document's comments hold markers, #@name("needle", args...), that ask
// the engine about the needle on the marker's line (before the comment):
// the cursor is at the needle's start, or at a "|" inside it. Places are
// written 1-based (LINE:COL, columns in bytes) and mirrored files by their
// path under the mirror's site directory. See testdata/markers/README.md
// for the markers.

var update = flag.Bool("update", false, "rewrite the goldens of testdata/markers/*.txtar")

const debianPython = "/usr/bin/python3"

func TestMarkers(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "markers", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no marker files: %v", err)
	}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".txtar"), func(t *testing.T) {
			t.Parallel()
			runArchive(t, p)
		})
	}
}

// archive is a txtar file.
type archive struct {
	comment string
	files   []archiveFile
}

type archiveFile struct{ name, data string }

var fileMarker = regexp.MustCompile(`(?m)^-- (.+) --$`)

func parseArchive(data string) archive {
	var a archive
	locs := fileMarker.FindAllStringSubmatchIndex(data, -1)
	if len(locs) == 0 {
		return archive{comment: data}
	}
	a.comment = data[:locs[0][0]]
	for i, l := range locs {
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := data[min(l[1]+1, end):end]
		a.files = append(a.files, archiveFile{name: data[l[2]:l[3]], data: body})
	}
	return a
}

func (a archive) format() string {
	var b strings.Builder
	b.WriteString(a.comment)
	for _, f := range a.files {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.WriteString(f.data)
		if f.data != "" && !strings.HasSuffix(f.data, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// marker is one #@name(args) in a document.
type marker struct {
	doc  *doc
	line int // 0-based
	name string
	args []string
}

func (m marker) String() string {
	return fmt.Sprintf("%s:%d: %s(%s)", m.doc.name, m.line+1, m.name, strings.Join(quoteAll(m.args), ", "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

type doc struct {
	name, uri, text string
	version         int32
	markers         []marker
}

// run is one archive's test.
type run struct {
	t        *testing.T
	ctx      context.Context
	eng      *testEngine
	docs     []*doc
	byURI    map[string]*doc
	python   string            // the default target's interpreter
	env      map[string]string // and its environment
	exec     []string          // and the prefix that enters its container
	replace  []string          // placeholder expansions, for goldens: old, new
	inspect  map[string]pyDef  // "module attr" → what the interpreter says, for defpy
	site     string            // the archive's own site dir, $ARCHIVE_SITE
	mirrored []*doc            // site files with markers, asked in their mirror
	closed   map[string]string // workspace files never opened: path → section name
	goldens  map[string]string // "@kind/name" → golden, as in the archive
	produced map[string]string // what this run rendered for each
}

func runArchive(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := parseArchive(string(data))
	r := &run{t: t, byURI: map[string]*doc{}, goldens: map[string]string{}, produced: map[string]string{}, closed: map[string]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r.ctx = ctx

	ws := t.TempDir()
	r.site = t.TempDir()
	var settings []byte
	for _, f := range a.files {
		switch {
		case f.name == "settings.json":
			settings = r.expand(f.data)
		case strings.HasPrefix(f.name, "@"):
			r.goldens[f.name] = f.data
		case strings.HasPrefix(f.name, "site/"):
			rel := strings.TrimPrefix(f.name, "site/")
			p := filepath.Join(r.site, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(f.data, "#@") {
				r.mirrored = append(r.mirrored, &doc{name: rel, text: f.data, version: 1})
			}
		case strings.HasPrefix(f.name, "closed/"):
			p := filepath.Join(ws, filepath.FromSlash(strings.TrimPrefix(f.name, "closed/")))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
				t.Fatal(err)
			}
			r.closed[p] = f.name
		default:
			d := &doc{name: f.name, text: f.data, version: 1}
			if strings.HasPrefix(f.name, "untitled:") {
				d.uri = f.name
			} else {
				p := filepath.Join(ws, f.name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
					t.Fatal(err)
				}
				d.uri = (&url.URL{Scheme: "file", Path: p}).String()
			}
			r.docs = append(r.docs, d)
			r.byURI[d.uri] = d
		}
	}
	if settings == nil {
		t.Fatalf("%s has no settings.json", path)
	}
	r.readTarget(settings)
	if _, err := os.Stat(r.python); err != nil && len(r.exec) == 0 {
		t.Skipf("%s is missing: run scripts/setup.sh --test", r.python)
	}
	for _, d := range append(append([]*doc(nil), r.docs...), r.mirrored...) {
		if err := d.parseMarkers(); err != nil {
			t.Fatal(err)
		}
	}

	r.inspectAll()
	r.eng = newEngine(t, settings, ws)
	for _, d := range r.docs {
		openDoc(r.eng, d.uri, d.text)
	}
	for _, d := range r.docs {
		// Fixes edit the document: they run after every other marker.
		for _, m := range d.markers {
			if m.name != "fix" {
				r.runMarker(m)
			}
		}
		for _, m := range d.markers {
			if m.name == "fix" {
				r.runMarker(m)
			}
		}
		r.checkAllDiagnosticsMarked(d)
	}
	r.runMirrored()
	r.finishGoldens(path, a)
}

// runMirrored opens the mirrored copy of each site file with markers, as
// an editor does after a definition led there, and runs its markers.
func (r *run) runMirrored() {
	for _, d := range r.mirrored {
		p, err := mirrorPath(r.ctx, r.eng, d.name)
		if err != nil {
			r.t.Fatalf("%s: no mirrored copy: %v", d.name, err)
		}
		if _, ok := r.mirroredRel(p); !ok {
			r.t.Fatalf("%s: %s is not in the mirror under %s", d.name, p, r.eng.cache)
		}
		d.uri = (&url.URL{Scheme: "file", Path: p}).String()
		r.byURI[d.uri] = d
		openDoc(r.eng, d.uri, d.text)
		for _, m := range d.markers {
			r.runMarker(m)
		}
	}
}

// expand replaces the placeholders of settings.json, skipping the test
// where one cannot be had.
func (r *run) expand(s string) []byte {
	site, err := filepath.Abs(filepath.Join("..", "testdata", "site"))
	if err != nil {
		r.t.Fatal(err)
	}
	r.replace = []string{site, "$SITE", r.site, "$ARCHIVE_SITE"}
	s = strings.ReplaceAll(s, "$PYTHON", debianPython)
	s = strings.ReplaceAll(s, "$ARCHIVE_SITE", r.site)
	s = strings.ReplaceAll(s, "$SITE", site)
	if strings.Contains(s, "$TORCH211") {
		t211 := os.Getenv("TORCHLSP_TORCH211_SITE")
		if t211 == "" {
			r.t.Skip("TORCHLSP_TORCH211_SITE is unset: it names a site dir holding the torch 2.11 sources (/work/torch211)")
		}
		s = strings.ReplaceAll(s, "$TORCH211", t211)
		r.replace = append(r.replace, t211, "$TORCH211")
	}
	if strings.Contains(s, "$PCT") {
		// The real torch 2.6 in an LXC container, entered with pct.
		ct := torch26.Start(r.t)
		s = strings.ReplaceAll(s, "$PCT", ct.Pct)
	}
	return []byte(s)
}

// readTarget finds the default target's interpreter and environment.
func (r *run) readTarget(settings []byte) {
	var s struct {
		DefaultTarget string `json:"defaultTarget"`
		Targets       map[string]struct {
			Python string            `json:"python"`
			Env    map[string]string `json:"env"`
			Exec   []string          `json:"exec"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(settings, &s); err != nil {
		r.t.Fatalf("settings.json: %v", err)
	}
	tg, ok := s.Targets[s.DefaultTarget]
	if !ok || tg.Python == "" {
		r.t.Fatalf("settings.json: no python for the default target %q", s.DefaultTarget)
	}
	r.python, r.env, r.exec = tg.Python, tg.Env, tg.Exec
}

// parseMarkers reads the #@ comments of a document.
func (d *doc) parseMarkers() error {
	for i, line := range strings.Split(d.text, "\n") {
		at := strings.Index(line, "#@")
		if at < 0 {
			continue
		}
		rest := line[at+2:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if rest == "" {
				break
			}
			j := strings.IndexByte(rest, '(')
			if j <= 0 {
				return fmt.Errorf("%s:%d: bad marker %q", d.name, i+1, rest)
			}
			m := marker{doc: d, line: i, name: rest[:j]}
			rest = rest[j+1:]
			for {
				rest = strings.TrimLeft(rest, " ")
				if strings.HasPrefix(rest, ")") {
					rest = rest[1:]
					break
				}
				q, err := strconv.QuotedPrefix(rest)
				if err != nil {
					return fmt.Errorf("%s:%d: marker %s: arguments are quoted strings: %q", d.name, i+1, m.name, rest)
				}
				arg, _ := strconv.Unquote(q)
				m.args = append(m.args, arg)
				rest = strings.TrimLeft(rest[len(q):], " ")
				rest = strings.TrimPrefix(rest, ",")
			}
			d.markers = append(d.markers, m)
		}
	}
	return nil
}

// pos is where the marker's needle (its first argument) points, on the
// marker's line before the comment.
func (r *run) pos(m marker) (pos, bool) {
	if len(m.args) == 0 {
		r.t.Errorf("%v: no needle", m)
		return pos{}, false
	}
	line := strings.Split(m.doc.text, "\n")[m.line]
	code := line[:strings.Index(line, "#@")]
	needle, cursor := m.args[0], 0
	if i := strings.IndexByte(needle, '|'); i >= 0 {
		needle, cursor = needle[:i]+needle[i+1:], i
	}
	if n := strings.Count(code, needle); n != 1 {
		r.t.Errorf("%v: the needle %q occurs %d times on the line, want once", m, needle, n)
		return pos{}, false
	}
	return pos{Line: m.line, Col: strings.Index(code, needle) + cursor}, true
}

func (r *run) runMarker(m marker) {
	var p pos
	if m.name != "diagnostics" && m.name != "symbols" && m.name != "outline" { // markers of a whole document, or none
		var ok bool
		if p, ok = r.pos(m); !ok {
			return
		}
	}
	uri := m.doc.uri
	wantArgs := func(min, max int) bool {
		if len(m.args) < min || len(m.args) > max {
			r.t.Errorf("%v: takes %d to %d arguments", m, min, max)
			return false
		}
		return true
	}
	switch m.name {
	case "hover":
		if !wantArgs(2, 10) {
			return
		}
		h, err := hoverAt(r.ctx, r.eng, uri, p)
		if err != nil || h == nil {
			r.t.Errorf("%v: hover = %+v, %v", m, h, err)
			return
		}
		if g, ok := goldenName(m, "hover", m.args[1]); ok {
			rng := "none"
			if h.Range != nil {
				rng = spanString(*h.Range)
			}
			r.produce(m, g, "range "+rng+"\n"+r.normalize(h.Markdown))
			return
		}
		text := r.normalize(h.Markdown)
		for _, want := range m.args[1:] {
			if !strings.Contains(text, want) {
				r.t.Errorf("%v: hover lacks %q:\n%s", m, want, text)
			}
		}
	case "nohover":
		if !wantArgs(1, 1) {
			return
		}
		if h, err := hoverAt(r.ctx, r.eng, uri, p); err != nil || h != nil {
			r.t.Errorf("%v: hover = %+v, %v; want nothing", m, h, err)
		}
	case "def":
		if !wantArgs(2, 3) {
			return
		}
		locs, err := definitionAt(r.ctx, r.eng, uri, p)
		if err != nil || len(locs) != 1 {
			r.t.Errorf("%v: definition = %+v, %v; want one", m, locs, err)
			return
		}
		got := r.location(m, locs[0])
		if strings.Count(m.args[1], ":") == 1 { // path:LINE
			got = got[:strings.LastIndexByte(got, ':')]
		}
		if got != m.args[1] {
			r.t.Errorf("%v: definition at %s", m, got)
		}
		if len(m.args) == 3 {
			if text := fileLine(locs[0].Path, locs[0].Range.Start.Line); !strings.Contains(text, m.args[2]) {
				r.t.Errorf("%v: the definition's line %q lacks %q", m, text, m.args[2])
			}
		}
	case "nodef":
		if !wantArgs(1, 1) {
			return
		}
		if locs, err := definitionAt(r.ctx, r.eng, uri, p); err != nil || len(locs) != 0 {
			r.t.Errorf("%v: definition = %+v, %v; want none", m, locs, err)
		}
	case "defpy":
		if !wantArgs(3, 3) {
			return
		}
		r.definitionLikePython(m, p)
	case "refs":
		if !wantArgs(2, 2) {
			return
		}
		g, ok := goldenName(m, "refs", m.args[1])
		if !ok {
			r.t.Errorf("%v: the second argument names a golden: \"@name\"", m)
			return
		}
		locs, err := referencesAt(r.ctx, r.eng, uri, p)
		if err != nil {
			r.t.Errorf("%v: %v", m, err)
			return
		}
		lines := make([]string, 0, len(locs))
		for _, l := range locs {
			lines = append(lines, r.location(m, l))
		}
		sort.Strings(lines)
		r.produce(m, g, strings.Join(lines, "\n")+"\n")
	case "highlights":
		if !wantArgs(2, 2) {
			return
		}
		g, ok := goldenName(m, "highlights", m.args[1])
		if !ok {
			r.t.Errorf("%v: the second argument names a golden: \"@name\"", m)
			return
		}
		hs, err := highlightsAt(r.ctx, r.eng, uri, p)
		if err != nil {
			r.t.Errorf("%v: %v", m, err)
			return
		}
		var b strings.Builder
		for _, h := range hs {
			fmt.Fprintf(&b, "%s %s\n", spanString(h.Range), h.Kind)
		}
		r.produce(m, g, b.String())
	case "callers", "callees":
		if !wantArgs(2, 2) {
			return
		}
		g, ok := goldenName(m, m.name, m.args[1])
		if !ok {
			r.t.Errorf("%v: the second argument names a golden: \"@name\"", m)
			return
		}
		r.produce(m, g, r.renderCalls(m, p, m.name == "callers"))
	case "symbols":
		if !wantArgs(2, 2) {
			return
		}
		g, ok := goldenName(m, "symbols", m.args[1])
		if !ok {
			r.t.Errorf("%v: the second argument names a golden: \"@name\"", m)
			return
		}
		syms, err := workspaceSymbols(r.ctx, r.eng, m.args[0])
		if err != nil {
			r.t.Errorf("%v: %v", m, err)
			return
		}
		// The archive's own packages and documents: the rest of what the
		// target has (Debian's torch) depends on the machine.
		var b strings.Builder
		for _, s := range syms {
			at := r.location(m, s.Location)
			top, _, _ := strings.Cut(at, "/")
			if _, err := os.Stat(filepath.Join(r.site, top)); err != nil && r.byURI[s.Location.URI] == nil && r.closed[s.Location.Path] == "" {
				continue
			}
			fmt.Fprintf(&b, "%s %s in %s at %s\n", s.Kind, s.Name, s.Container, at)
		}
		r.produce(m, g, b.String())
	case "outline":
		if !wantArgs(1, 1) {
			return
		}
		g, ok := goldenName(m, "outline", m.args[0])
		if !ok {
			r.t.Errorf("%v: the argument names a golden: \"@name\"", m)
			return
		}
		items, err := documentSymbols(r.ctx, r.eng, uri)
		if err != nil {
			r.t.Errorf("%v: %v", m, err)
			return
		}
		var b strings.Builder
		renderOutline(&b, items, 0)
		r.produce(m, g, b.String())
	case "diag":
		if !wantArgs(2, 3) {
			return
		}
		d, ok := r.diagnosticAt(m, p, m.args[1])
		if ok && len(m.args) == 3 && !strings.Contains(d.Message, m.args[2]) {
			r.t.Errorf("%v: message %q lacks %q", m, d.Message, m.args[2])
		}
	case "diagnostics":
		if !wantArgs(1, 1) {
			return
		}
		g, ok := goldenName(m, "diagnostics", m.args[0])
		if !ok {
			r.t.Errorf("%v: the argument names a golden: \"@name\"", m)
			return
		}
		ds, err := diagnosticsFor(r.ctx, r.eng, uri)
		if err != nil {
			r.t.Errorf("%v: %v", m, err)
			return
		}
		r.produce(m, g, r.renderDiagnostics(m, ds))
	case "action":
		if !wantArgs(2, 2) {
			return
		}
		actions, err := codeActionsAt(r.ctx, r.eng, uri, span{p, p})
		if err != nil {
			r.t.Errorf("%v: %v", m, err)
			return
		}
		var names []string
		for _, a := range actions {
			if a.Command == m.args[1] {
				return
			}
			names = append(names, a.Title+" → "+a.Command)
		}
		r.t.Errorf("%v: no action runs %s among %q", m, m.args[1], names)
	case "fix":
		if !wantArgs(3, 3) {
			return
		}
		r.fix(m, p)
	default:
		r.t.Errorf("%v: unknown marker", m)
	}
}

// renderCalls prepares the call hierarchy at p (one item) and renders
// its incoming or outgoing calls, one a line: the other item's kind,
// qualified name and name's place, then the calls' places.
func (r *run) renderCalls(m marker, p pos, incoming bool) string {
	items, err := prepareCallsAt(r.ctx, r.eng, m.doc.uri, p)
	if err != nil || len(items) != 1 {
		r.t.Errorf("%v: prepare = %+v, %v; want one item", m, items, err)
		return ""
	}
	links, err := callsOf(r.ctx, r.eng, items[0], incoming)
	if err != nil {
		r.t.Errorf("%v: %v", m, err)
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", items[0].Kind, items[0].Detail)
	for _, l := range links {
		at := l.Item.Location
		at.Range = l.Item.Sel
		var ranges []string
		for _, rg := range l.Ranges {
			ranges = append(ranges, fmt.Sprintf("%d:%d", rg.Start.Line+1, rg.Start.Col+1))
		}
		fmt.Fprintf(&b, "%s %s at %s: %s\n", l.Item.Kind, l.Item.Detail, r.location(m, at), strings.Join(ranges, " "))
	}
	return b.String()
}

func renderOutline(b *strings.Builder, items []outlineItem, depth int) {
	for _, it := range items {
		fmt.Fprintf(b, "%s%s %s %s name %s\n", strings.Repeat("  ", depth), it.Kind, it.Name, spanString(it.Range), spanString(it.Sel))
		renderOutline(b, it.Children, depth+1)
	}
}

// goldenName reads a "@name" argument as the golden "@kind/name".
func goldenName(m marker, kind, arg string) (string, bool) {
	if !strings.HasPrefix(arg, "@") || len(arg) < 2 {
		return "", false
	}
	return "@" + kind + "/" + arg[1:], true
}

// produce records what a marker rendered for its golden, and compares.
func (r *run) produce(m marker, golden, got string) {
	if _, dup := r.produced[golden]; dup {
		r.t.Errorf("%v: golden %s is written by two markers", m, golden)
	}
	r.produced[golden] = got
	if *update {
		return
	}
	want, ok := r.goldens[golden]
	switch {
	case !ok:
		r.t.Errorf("%v: no golden %s (go test ./server -run TestMarkers -update writes it); got:\n%s", m, golden, got)
	case want != got:
		r.t.Errorf("%v: %s differs\n--- got\n%s--- want\n%s", m, golden, got, want)
	}
}

// finishGoldens rewrites the archive under -update, and otherwise fails
// on goldens no marker wrote.
func (r *run) finishGoldens(path string, a archive) {
	if !*update {
		for name := range r.goldens {
			if _, ok := r.produced[name]; !ok && !r.t.Skipped() {
				r.t.Errorf("golden %s is not written by any marker (-update removes it)", name)
			}
		}
		return
	}
	if r.t.Failed() {
		r.t.Log("not updating goldens: the test failed")
		return
	}
	var out archive
	out.comment = a.comment
	for _, f := range a.files {
		if !strings.HasPrefix(f.name, "@") {
			out.files = append(out.files, f)
		}
	}
	names := make([]string, 0, len(r.produced))
	for name := range r.produced {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out.files = append(out.files, archiveFile{name: name, data: r.produced[name]})
	}
	if text := out.format(); text != a.format() {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			r.t.Fatal(err)
		}
		r.t.Logf("updated %s", path)
	}
}

// location renders a place: a document or a workspace file no editor
// opened by its archive name, a mirrored file by its path under the
// mirror's site directory. Any other place is an error: answers point
// into the mirror or at the workspace's files.
func (r *run) location(m marker, l location) string {
	if d, ok := r.byURI[l.URI]; ok && l.URI != "" {
		return d.name + ":" + spanString(l.Range)
	}
	if name := r.closed[l.Path]; l.URI == "" && name != "" {
		return name + ":" + spanString(l.Range)
	}
	rel, ok := r.mirroredRel(l.Path)
	if !ok {
		r.t.Errorf("%v: %+v is neither an open document nor in the mirror under %s", m, l, r.eng.cache)
		return l.Path + ":" + spanString(l.Range)
	}
	if l.TargetPath != "" && !strings.HasSuffix(l.TargetPath, "/"+rel) {
		r.t.Errorf("%v: the mirror's %s is %s on the target", m, rel, l.TargetPath)
	}
	return fmt.Sprintf("%s:%d:%d", rel, l.Range.Start.Line+1, l.Range.Start.Col+1)
}

// mirroredRel returns a local path's name under the mirror's site directory.
func (r *run) mirroredRel(path string) (string, bool) {
	inCache, ok := strings.CutPrefix(path, r.eng.cache+string(filepath.Separator))
	if !ok {
		return "", false
	}
	_, rel, ok := strings.Cut(inCache, "/site/")
	return rel, ok
}

func spanString(s span) string {
	return fmt.Sprintf("%d:%d-%d:%d", s.Start.Line+1, s.Start.Col+1, s.End.Line+1, s.End.Col+1)
}

// normalize makes rendered text independent of where the test runs, and
// ends it with a line break.
func (r *run) normalize(s string) string {
	s = r.normalizeText(s)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// normalizeText replaces the mirror's and the fixtures' paths by
// $MIRROR, $SITE and $TORCH211.
func (r *run) normalizeText(s string) string {
	mirrorURL := regexp.MustCompile(`file://[^)\s]*?/site/`)
	s = mirrorURL.ReplaceAllString(s, "file://$$MIRROR/")
	mirrorPath := regexp.MustCompile(regexp.QuoteMeta(r.eng.cache) + `/[^\s)]*?/site/`)
	s = mirrorPath.ReplaceAllString(s, "$$MIRROR/")
	for i := 0; i+1 < len(r.replace); i += 2 {
		s = strings.ReplaceAll(s, r.replace[i], r.replace[i+1])
	}
	return s
}

var severities = map[int]string{1: "error", 2: "warning", 3: "info", 4: "hint"}

func (r *run) renderDiagnostics(m marker, ds []diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s %s %s: %s\n", spanString(d.Range), d.Code, severities[d.Severity], r.normalizeText(d.Message))
		for _, rel := range d.Related {
			fmt.Fprintf(&b, "  related %s: %s\n", r.location(m, rel.Location), r.normalizeText(rel.Message))
		}
	}
	if b.Len() == 0 {
		return "none\n"
	}
	return b.String()
}

// diagnosticAt finds the diagnostic of code (a prefix of its code) that
// starts at p.
func (r *run) diagnosticAt(m marker, p pos, code string) (diagnostic, bool) {
	ds, err := diagnosticsFor(r.ctx, r.eng, m.doc.uri)
	if err != nil {
		r.t.Errorf("%v: %v", m, err)
		return diagnostic{}, false
	}
	var here []string
	for _, d := range ds {
		if d.Range.Start == p && strings.HasPrefix(d.Code, code) {
			return d, true
		}
		here = append(here, d.Code+" at "+spanString(d.Range))
	}
	r.t.Errorf("%v: no %s starting at %d:%d; the document has %q", m, code, p.Line+1, p.Col+1, here)
	return diagnostic{}, false
}

// checkAllDiagnosticsMarked: in a document with diag markers and no
// diagnostics golden, every diagnostic must be marked.
func (r *run) checkAllDiagnosticsMarked(d *doc) {
	marked := map[string]bool{}
	for _, m := range d.markers {
		switch m.name {
		case "diagnostics":
			return
		case "diag":
			if p, ok := r.pos(m); ok && len(m.args) > 1 {
				marked[fmt.Sprintf("%d:%d %s", p.Line, p.Col, m.args[1])] = true
			}
		}
	}
	if len(marked) == 0 {
		return
	}
	ds, err := diagnosticsFor(r.ctx, r.eng, d.uri)
	if err != nil {
		r.t.Errorf("%s: %v", d.name, err)
		return
	}
	for _, x := range ds {
		found := false
		for key := range marked {
			at, code, _ := strings.Cut(key, " ")
			found = found || (at == fmt.Sprintf("%d:%d", x.Range.Start.Line, x.Range.Start.Col) && strings.HasPrefix(x.Code, code))
		}
		if !found {
			r.t.Errorf("%s: unexpected diagnostic %s at %s: %s", d.name, x.Code, spanString(x.Range), x.Message)
		}
	}
}

// fix applies the preferred quick fix of the diagnostic at the marker and
// checks that the fixed document no longer has it; the golden holds the
// edits and the lines they made. The document is restored afterwards.
func (r *run) fix(m marker, p pos) {
	code := m.args[1]
	g, ok := goldenName(m, "fix", m.args[2])
	if !ok {
		r.t.Errorf("%v: the third argument names a golden: \"@name\"", m)
		return
	}
	d, ok := r.diagnosticAt(m, p, code)
	if !ok {
		return
	}
	actions, err := codeActionsAt(r.ctx, r.eng, m.doc.uri, d.Range)
	if err != nil {
		r.t.Errorf("%v: %v", m, err)
		return
	}
	var fix *codeAction
	for i, a := range actions {
		if a.Kind == "quickfix" && a.Preferred && hasPrefix(a.Codes, code) && fix == nil {
			fix = &actions[i]
		}
	}
	if fix == nil {
		r.t.Errorf("%v: no preferred quick fix for %s among %+v", m, code, actions)
		return
	}
	edits := fix.Edits[m.doc.uri]
	fixed, err := applyEdits(m.doc.text, edits)
	if err != nil {
		r.t.Errorf("%v: %v", m, err)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "quickfix %q\n", fix.Title)
	for _, e := range edits {
		fmt.Fprintf(&b, "edit %s %q\n", spanString(e.Range), e.NewText)
	}
	b.WriteString(changedLines(m.doc.text, fixed))
	r.produce(m, g, b.String())

	m.doc.version++
	changeDoc(r.eng, m.doc.uri, m.doc.version, fixed)
	ds, err := diagnosticsFor(r.ctx, r.eng, m.doc.uri)
	if err != nil {
		r.t.Errorf("%v: diagnostics of the fixed document: %v", m, err)
	}
	for _, x := range ds {
		if strings.HasPrefix(x.Code, code) {
			r.t.Errorf("%v: the fixed document still has %s at %s: %s", m, x.Code, spanString(x.Range), x.Message)
		}
	}
	m.doc.version++
	changeDoc(r.eng, m.doc.uri, m.doc.version, m.doc.text)
}

func hasPrefix(codes []string, prefix string) bool {
	for _, c := range codes {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

// applyEdits applies non-overlapping edits with byte columns.
func applyEdits(text string, edits []textEdit) (string, error) {
	lines := strings.SplitAfter(text, "\n")
	offset := func(p pos) (int, error) {
		if p.Line >= len(lines) || p.Col > len(strings.TrimSuffix(lines[p.Line], "\n")) {
			return 0, fmt.Errorf("edit position %d:%d is outside the text", p.Line+1, p.Col+1)
		}
		n := 0
		for _, l := range lines[:p.Line] {
			n += len(l)
		}
		return n + p.Col, nil
	}
	sorted := append([]textEdit(nil), edits...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i].Range.Start, sorted[j].Range.Start
		return a.Line > b.Line || a.Line == b.Line && a.Col > b.Col
	})
	for _, e := range sorted { // from the end, so offsets stay valid
		start, err := offset(e.Range.Start)
		if err != nil {
			return "", err
		}
		end, err := offset(e.Range.End)
		if err != nil {
			return "", err
		}
		text = text[:start] + e.NewText + text[end:]
	}
	return text, nil
}

// changedLines lists the lines of after that differ from before, without
// their markers.
func changedLines(before, after string) string {
	a, b := strings.Split(before, "\n"), strings.Split(after, "\n")
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	post := 0
	for post < len(a)-pre && post < len(b)-pre && a[len(a)-1-post] == b[len(b)-1-post] {
		post++
	}
	var out strings.Builder
	for i := pre; i < len(b)-post; i++ {
		line := b[i]
		if j := strings.Index(line, "  #@"); j >= 0 {
			line = line[:j] // the markers are not the fix's
		}
		fmt.Fprintf(&out, "line %d: %s\n", i+1, line)
	}
	return out.String()
}

// definitionLikePython: the definition is where the target's own
// interpreter says the object is defined (inspect, decorators skipped).
func (r *run) definitionLikePython(m marker, p pos) {
	want, ok := r.inspect[m.args[1]+" "+m.args[2]]
	if !ok {
		r.t.Errorf("%v: the interpreter was not asked", m)
		return
	}
	if want.Error != "" {
		r.t.Errorf("%v: python: %s", m, want.Error)
		return
	}
	wantFile, wantLine := want.File, want.Line
	locs, err := definitionAt(r.ctx, r.eng, m.doc.uri, p)
	if err != nil || len(locs) != 1 {
		r.t.Errorf("%v: definition = %+v, %v; want one", m, locs, err)
		return
	}
	rel, ok := r.mirroredRel(locs[0].Path)
	_, wantRel, _ := strings.Cut(wantFile, "-packages/")
	switch {
	case !ok:
		r.t.Errorf("%v: definition %s is not in the mirror", m, locs[0].Path)
	case rel != wantRel:
		r.t.Errorf("%v: definition in %s, want %s (from inspect: %s)", m, rel, wantRel, wantFile)
	case locs[0].TargetPath != wantFile:
		r.t.Errorf("%v: definition on the target in %s, want %s", m, locs[0].TargetPath, wantFile)
	}
	if got := locs[0].Range.Start.Line + 1; got != wantLine {
		r.t.Errorf("%v: definition on line %d, want %d (from inspect)", m, got, wantLine)
	}
}

// pyDef is where the interpreter says an object is defined.
type pyDef struct {
	File  string `json:"file"`
	Line  int    `json:"line"` // 1-based, the def or class line
	Error string `json:"error"`
}

// inspectAll asks the target's interpreter, once for all defpy markers
// (each import of a real torch takes seconds), for the file and the
// def/class line (decorators skipped) of each module.attr.
func (r *run) inspectAll() {
	var asks [][2]string
	for _, d := range r.docs {
		for _, m := range d.markers {
			if m.name == "defpy" && len(m.args) == 3 {
				asks = append(asks, [2]string{m.args[1], m.args[2]})
			}
		}
	}
	if len(asks) == 0 {
		return
	}
	const script = `
import importlib, inspect, json, sys
out = {}
for module, attr in json.load(sys.stdin):
    try:
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        obj = inspect.unwrap(obj)
        lines, start = inspect.getsourcelines(obj)
        off = next(i for i, l in enumerate(lines) if l.lstrip().startswith(("def ", "class ", "async def ")))
        out[module + " " + attr] = {"file": inspect.getsourcefile(obj), "line": start + off}
    except Exception as e:
        out[module + " " + attr] = {"error": repr(e)}
json.dump(out, sys.stdout)
`
	in, _ := json.Marshal(asks)
	argv := append(append([]string(nil), r.exec...), r.python, "-c", script)
	cmd := exec.CommandContext(r.ctx, argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	for k, v := range r.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("asking %s where %d objects are defined: %v\n%s", r.python, len(asks), err, stderr.Bytes())
	}
	if err := json.Unmarshal(out, &r.inspect); err != nil {
		r.t.Fatalf("%s printed %q: %v", r.python, out, err)
	}
}

// fileLine returns a file's 0-based line.
func fileLine(path string, line int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(data), "\n")
	if line < 0 || line >= len(lines) {
		return ""
	}
	return lines[line]
}
