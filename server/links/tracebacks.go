package links

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/repro"
	"github.com/torchlsp/torchlsp/server/source"
	"github.com/torchlsp/torchlsp/server/traceback"
)

// Bounds of the traceback command.
const (
	// MaxTracebackBytes bounds the text one traceback command reads; the
	// command line keeps the last this many bytes of a larger log.
	MaxTracebackBytes = 64 << 20
	// maxTracebackRefs bounds the references it lists.
	maxTracebackRefs = 100000
	// maxSourceFileBytes bounds a local file read to show a frame's line.
	maxSourceFileBytes = 8 << 20
	// maxLearnedDirs bounds the repro runs' workspace directories kept.
	maxLearnedDirs = 32
	// maxRunFiles and maxRunFileBytes bound what is read of a repro run's
	// folder to learn where it put the workspace.
	maxRunFiles     = 64
	maxRunFileBytes = 1 << 20
	// tracebackWindowLines is how far around the cursor a code action looks
	// for the traceback it stands in.
	tracebackWindowLines = 400
)

// CodeTraceback marks the diagnostic a traceback puts on the user's line.
const CodeTraceback = "TL210 traceback"

// traceState is what the engine keeps of tracebacks: the diagnostic the
// last traceback command put on the user's code, and the directories on
// targets where repro runs put the workspace.
type traceState struct {
	mu    sync.Mutex           // guards notes and dirs
	notes map[string]traceNote // by document URI
	dirs  []workPrefix         // newest last, at most maxLearnedDirs
}

// traceNote is a traceback's diagnostic, kept while the file's text is
// the one it was made against.
type traceNote struct {
	diag   api.Diagnostic
	digest [32]byte
}

// learn records a directory on a target that holds a copy of a workspace.
func (ts *traceState) learn(w workPrefix) {
	w.dir = path.Clean(w.dir)
	if !path.IsAbs(w.dir) || w.dir == "/" || w.local == "" {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for i, d := range ts.dirs {
		if d.dir == w.dir && d.local == w.local {
			ts.dirs = append(ts.dirs[:i], ts.dirs[i+1:]...)
			break
		}
	}
	ts.dirs = append(ts.dirs, w)
	if len(ts.dirs) > maxLearnedDirs {
		ts.dirs = ts.dirs[len(ts.dirs)-maxLearnedDirs:]
	}
}

func (ts *traceState) learned() []workPrefix {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]workPrefix(nil), ts.dirs...)
}

// note puts a traceback's diagnostic on a file, replacing the last one;
// it returns the URIs whose diagnostics changed.
func (ts *traceState) note(uri string, diag api.Diagnostic, text string) []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	changed := make([]string, 0, len(ts.notes)+1)
	for u := range ts.notes {
		changed = append(changed, u)
	}
	ts.notes = map[string]traceNote{uri: {diag: diag, digest: sha256.Sum256([]byte(text))}}
	if !slices.Contains(changed, uri) {
		changed = append(changed, uri)
	}
	return changed
}

// noteOn returns the traceback diagnostic of a document while its text
// is the one the diagnostic was made against; once the file changed, the
// diagnostic is dropped.
func (ts *traceState) noteOn(doc *api.Snapshot) []api.Diagnostic {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n, ok := ts.notes[doc.URI()]
	if !ok {
		return nil
	}
	if sha256.Sum256([]byte(doc.Text())) != n.digest {
		delete(ts.notes, doc.URI())
		return nil
	}
	return []api.Diagnostic{n.diag}
}

// RanIn records where a repro run put the workspace on
// its target (each variant's temporary directory, or the workdir it was
// given), so that the tracebacks it printed map back to the workspace.
func (l *Links) RanIn(r repro.Report, workspace, workdir string) {
	if workspace == "" {
		return
	}
	if workdir != "" {
		l.traces.learn(workPrefix{dir: workdir, local: workspace, why: fmt.Sprintf("the workdir a run on %s used", r.Target)})
	}
	for _, v := range r.Variants {
		if v.WorkspaceDir != "" {
			l.traces.learn(workPrefix{dir: v.WorkspaceDir, local: workspace, why: fmt.Sprintf("the workspace's copy of a repro run on %s", r.Target)})
		}
	}
}

// TracebackFrame is one reference of a traceback or log and where it
// leads.
type TracebackFrame struct {
	Link
	Source string // the line of the local file, trimmed; "" when not linked
}

// TracebackResult is what the traceback command found.
type TracebackResult struct {
	Frames []TracebackFrame // every reference of the text, in order
	Mapped int              // of them, those linked to a local file
	// Exception is the exception of the last stack ("AssertionError",
	// "RuntimeError: …"); "" when the text names none.
	Exception string
	// User indexes, in Frames, the innermost frame in the user's code of
	// the last stack; -1 when none maps to the workspace.
	User int
	// Stack indexes, in Frames, the last stack's frames, innermost first.
	Stack []int
	// Truncated is set when the text held more than the references kept.
	Truncated bool
	// Note is the diagnostic the exception left on the user's frame; nil
	// when none.
	Note *TracebackNote
	// sources holds the text of each file a frame leads to, as it was
	// read when the file was proved.
	sources *fileLines
}

// TracebackNote is where the exception of a traceback was put: the
// user's document and the diagnostic's message.
type TracebackNote struct {
	URI     string `json:"uri"`
	Message string `json:"message"`
}

// mapTraceback reads a traceback or log from a target and maps each
// reference it holds: the mirror at the line for the target's packages,
// the workspace file for the user's code. docPath names the file it was
// read from, if any (a repro run's output says where it put the
// workspace). Each frame's line comes from the file as it was proved
// (pathMap.prove), read from the handle that proved it.
func (l *Links) mapTraceback(ctx context.Context, text, docPath string) (*TracebackResult, error) {
	if len(text) > MaxTracebackBytes {
		return nil, fmt.Errorf("traceback: %d bytes, over the limit of %d: pass the part that holds the traceback", len(text), MaxTracebackBytes)
	}
	parsed := traceback.Parse(text, maxTracebackRefs)
	if len(parsed.Refs) == 0 {
		return &TracebackResult{User: -1, Truncated: parsed.Truncated, sources: newFileLines()}, nil
	}
	m := l.newPathMap(ctx, docPath)
	defer m.close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m.traceback(parsed), nil
}

// traceback maps every reference of a parsed text through m, with the
// line each frame's file holds, and finds the last stack, its exception
// and the innermost frame in the user's code.
func (m *pathMap) traceback(parsed traceback.Result) *TracebackResult {
	lines := newFileLines()
	m.sources = lines
	res := &TracebackResult{User: -1, Truncated: parsed.Truncated, sources: lines}
	index := map[[2]int]int{} // (line, start) of a ref → its frame
	for _, r := range parsed.Refs {
		l, ok := m.link(r, parsed.Versions)
		if !ok {
			l = Link{Ref: r, Line: r.FileLine - 1}
		}
		f := TracebackFrame{Link: l}
		if l.Path != "" {
			res.Mapped++
			f.Source = strings.TrimSpace(lines.line(l.Path, l.Line))
		}
		index[[2]int{r.Line, r.Start}] = len(res.Frames)
		res.Frames = append(res.Frames, f)
	}
	stack, exception := lastStack(parsed)
	res.Exception = exception
	for _, r := range stack {
		i, ok := index[[2]int{r.Line, r.Start}]
		if !ok {
			continue
		}
		res.Stack = append(res.Stack, i)
		if f := res.Frames[i]; res.User < 0 && f.Path != "" && !f.Mirror {
			res.User = i
		}
	}
	return res
}

// lastStack returns the frames of the text's last stack, innermost first,
// and the exception nearest it: a Dynamo "from user code:" stack follows
// the error it explains. A text with frames but no stack header (a
// selection of frame lines) is one stack, innermost last.
func lastStack(p traceback.Result) ([]traceback.Ref, string) {
	if len(p.Stacks) == 0 {
		var frames []traceback.Ref
		for _, r := range p.Refs {
			if r.Format == traceback.FormatFrame || r.Format == traceback.FormatFaulthandler || r.Format == traceback.FormatFrameSummary {
				frames = append(frames, r)
			}
		}
		s := traceback.Stack{Frames: frames}
		return s.Innermost(), ""
	}
	last := p.Stacks[len(p.Stacks)-1]
	exception := ""
	for i := len(p.Stacks) - 1; i >= 0 && exception == ""; i-- {
		exception = p.Stacks[i].Exception
	}
	return last.Innermost(), exception
}

// fileLines holds the text of the local files frames land in, each read
// once from the handle that proved the file (pathMap.prove); nothing here
// opens a path.
type fileLines struct {
	files map[string]fileText
}

// fileText is one file's text and its lines (substrings of it); ok is
// false when it could not be read (over maxSourceFileBytes).
type fileText struct {
	text  string
	lines []string
	ok    bool
}

func newFileLines() *fileLines { return &fileLines{files: map[string]fileText{}} }

func (fl *fileLines) has(path string) bool {
	_, ok := fl.files[path]
	return ok
}

func (fl *fileLines) put(path, text string, ok bool) {
	ft := fileText{ok: ok}
	if ok {
		ft.text, ft.lines = text, strings.Split(text, "\n")
	}
	fl.files[path] = ft
}

// text is the whole text of a file as it was read, ok false when it was
// not.
func (fl *fileLines) text(path string) (string, bool) {
	ft := fl.files[path]
	return ft.text, ft.ok
}

// line is line n (0-based) of a file as it was read, "" when there is
// none.
func (fl *fileLines) line(path string, n int) string {
	lines := fl.files[path].lines
	if n < 0 || n >= len(lines) {
		return ""
	}
	return strings.TrimRight(lines[n], "\r")
}

// tracebackDiagnostic makes the diagnostic a traceback puts on the user's
// innermost frame: the exception, and the frames of the target's
// packages below it as related information. ok is false when no frame is
// the user's.
func tracebackDiagnostic(res *TracebackResult, lines *fileLines) (string, api.Diagnostic, bool) {
	if res.User < 0 {
		return "", api.Diagnostic{}, false
	}
	user := res.Frames[res.User]
	text := lines.line(user.Path, user.Line)
	r := api.Range{Start: api.Position{Line: user.Line}, End: api.Position{Line: user.Line}}
	if text != "" {
		r.Start.Column = len(text) - len(strings.TrimLeft(text, " \t"))
		r.End.Column = len(text)
	}
	exception := res.Exception
	if exception == "" {
		exception = "traceback"
	}
	d := api.Diagnostic{Range: r, Severity: api.SeverityError, Code: CodeTraceback, Source: "torchlsp"}
	// deepest is the innermost frame of a mirrored package inside the
	// user's frame: where the exception came from, when torch raised it.
	var deepest *TracebackFrame
	target := ""
	inner := true
	for _, i := range res.Stack {
		if i == res.User {
			inner = false
		}
		f := res.Frames[i]
		if !f.Mirror || f.Path == "" {
			continue
		}
		if deepest == nil && inner {
			deepest = &res.Frames[i]
		}
		if target == "" {
			target = f.Target
		}
		msg := fmt.Sprintf("%s:%d", mirrorRel(f.Link), f.Ref.FileLine)
		if f.Ref.Func != "" {
			msg += " in " + f.Ref.Func
		}
		if f.Source != "" {
			msg += ": " + f.Source
		}
		loc := api.Location{Path: f.Path, Range: api.Range{Start: api.Position{Line: f.Line}, End: api.Position{Line: f.Line}}}
		if path.IsAbs(f.Ref.Path) {
			loc.TargetPath = f.Ref.Path
		}
		d.Related = append(d.Related, api.RelatedInfo{Location: loc, Message: msg})
	}
	d.Message = oneLineText(exception, 300)
	if deepest != nil {
		d.Message += fmt.Sprintf(", raised in %s:%d", mirrorRel(deepest.Link), deepest.Ref.FileLine)
		if deepest.Ref.Func != "" {
			d.Message += " (" + deepest.Ref.Func + ")"
		}
	}
	if target != "" {
		d.Message += " — traceback from target " + target
	}
	return source.FileURI(user.Path), d, true
}

// mirrorRel names a mirrored file by its path in the site dir
// (torch/_inductor/cudagraph_trees.py), as on the target.
func mirrorRel(l Link) string {
	if i := strings.LastIndex(l.Path, "/site/"); i >= 0 {
		return l.Path[i+len("/site/"):]
	}
	return l.Ref.Path
}

func oneLineText(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		n := max
		for n > 0 && s[n]&0xC0 == 0x80 {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// Traceback runs torchlsp.traceback and `torchlsp traceback`: it maps a
// traceback, the text given or lines of an open document. The exception
// goes on the innermost frame in the user's code (until that file
// changes), and, unless args.Quiet (the command line, which gives the
// text, even an empty one, and prints the answer), that frame opens and
// a message sums the answer up.
func (l *Links) Traceback(ctx context.Context, args api.TracebackArgs) (*TracebackResult, error) {
	text, docPath := args.Text, args.Path
	if text == "" && !args.Quiet {
		doc := l.deps.Document(args.URI)
		if doc == nil {
			return nil, fmt.Errorf("traceback: the document %s is not open, and no text was given", args.URI)
		}
		text, docPath = linesOf(doc.Mapper(), args.Line, args.EndLine), doc.Path()
	}
	if len(text) > MaxTracebackBytes {
		text = text[len(text)-MaxTracebackBytes:]
	}
	res, err := l.mapTraceback(ctx, text, docPath)
	if err != nil {
		return nil, err
	}
	if uri, d, ok := tracebackDiagnostic(res, res.sources); ok {
		userPath := res.Frames[res.User].Path
		current := ""
		if doc := l.deps.DocumentByPath(userPath); doc != nil {
			current = doc.Text()
		} else if text, ok := res.sources.text(userPath); ok {
			current = text
		}
		for _, u := range l.traces.note(uri, d, current) {
			if doc := l.deps.Document(u); doc != nil {
				l.deps.NotesChanged(doc)
			}
		}
		res.Note = &TracebackNote{URI: uri, Message: d.Message}
	}
	if args.Quiet {
		return res, nil
	}
	open := -1
	switch {
	case res.User >= 0:
		open = res.User
	default:
		for _, i := range res.Stack {
			if res.Frames[i].Path != "" {
				open = i
				break
			}
		}
	}
	if open >= 0 && l.deps.Notify.Capabilities().ShowDocument {
		f := res.Frames[open]
		_, _ = l.deps.Notify.ShowDocument(ctx, api.Location{Path: f.Path, Range: api.Range{Start: api.Position{Line: f.Line}, End: api.Position{Line: f.Line}}}, true)
	}
	summary := fmt.Sprintf("torchlsp: traceback: %d of %d references linked", res.Mapped, len(res.Frames))
	if res.Exception != "" {
		summary += "; " + oneLineText(res.Exception, 120)
	}
	l.deps.Notify.ShowMessage(ctx, api.MessageInfo, summary)
	return res, nil
}

// linesOf returns lines first..last (0-based, inclusive) of the text m
// indexes, with their line breaks, clamped to the text; last < first means
// first alone. It costs the lines it returns, not the text before them.
func linesOf(m *source.Mapper, first, last int) string {
	last = max(last, first)
	n := m.LineCount()
	if first >= n {
		return ""
	}
	first = max(first, 0)
	start, err := m.Offset(api.Position{Line: first})
	if err != nil {
		return ""
	}
	end := len(m.Text())
	if last+1 < n {
		if e, err := m.Offset(api.Position{Line: last + 1}); err == nil {
			end = e
		}
	}
	return m.Text()[start:end]
}

// tracebackJSON is the command's answer on the wire: each reference with
// its local file, for an editor's quickfix list.
type tracebackJSON struct {
	Frames     []tracebackFrameJSON `json:"frames"`
	Mapped     int                  `json:"mapped"`
	Exception  string               `json:"exception,omitempty"`
	User       int                  `json:"user"` // index in frames; -1 when none
	Diagnostic *TracebackNote       `json:"diagnostic,omitempty"`
}

type tracebackFrameJSON struct {
	TargetPath string `json:"targetPath"`       // as the text wrote it
	TargetLine int    `json:"targetLine"`       // 1-based
	Func       string `json:"func,omitempty"`   // the function, where the text names it
	Path       string `json:"path,omitempty"`   // the local file; absent when not linked
	Line       int    `json:"line"`             // 1-based line in path
	Source     string `json:"source,omitempty"` // that line
	Tooltip    string `json:"tooltip,omitempty"`
	Mirror     bool   `json:"mirror,omitempty"`
	TextLine   int    `json:"textLine"` // 0-based line of the text that names it
}

// MarshalJSON writes the answer as the wire carries it (tracebackJSON).
func (res *TracebackResult) MarshalJSON() ([]byte, error) {
	out := tracebackJSON{Mapped: res.Mapped, Exception: res.Exception, User: res.User, Diagnostic: res.Note, Frames: make([]tracebackFrameJSON, 0, len(res.Frames))}
	for _, f := range res.Frames {
		out.Frames = append(out.Frames, tracebackFrameJSON{
			TargetPath: f.Ref.Path, TargetLine: f.Ref.FileLine, Func: f.Ref.Func, Path: f.Path, Line: f.Ref.FileLine,
			Source: f.Source, Tooltip: f.Tooltip, Mirror: f.Mirror, TextLine: f.Ref.Line,
		})
	}
	return json.Marshal(out)
}

// CodeActions offers to map the traceback a selection (or the
// cursor's line) is in.
func (l *Links) CodeActions(doc *api.Snapshot, rng api.Range, _ []api.Diagnostic, only []string) []api.CodeAction {
	if !api.KindWanted(only, "quickfix") || doc == nil {
		return nil
	}
	first, last, ok := tracebackSpan(doc.Mapper(), rng)
	if !ok {
		return nil
	}
	args := api.TracebackArgs{URI: doc.URI(), Line: first, EndLine: last}
	title := "Map this traceback to the mirror and the workspace"
	return []api.CodeAction{{
		Title:   title,
		Kind:    "quickfix",
		Command: &api.Command{Title: title, Name: api.CommandTraceback, Arguments: []any{args}},
	}}
}

// tracebackSpan finds the lines a traceback action covers: a selection
// that names frames, or the stack around the cursor's line.
func tracebackSpan(m *source.Mapper, rng api.Range) (first, last int, ok bool) {
	if rng.End.Line > rng.Start.Line || rng.End.Column > rng.Start.Column {
		sel := linesOf(m, rng.Start.Line, rng.End.Line)
		if len(sel) > MaxTracebackBytes {
			return 0, 0, false
		}
		refs, _ := traceback.Refs(sel, 0, 1)
		return rng.Start.Line, rng.End.Line, len(refs) > 0
	}
	from := max(0, rng.Start.Line-tracebackWindowLines)
	window := linesOf(m, from, rng.Start.Line+tracebackWindowLines)
	p := traceback.Parse(window, maxTracebackRefs)
	cursor := rng.Start.Line - from
	for _, s := range p.Stacks {
		end := s.Frames[len(s.Frames)-1].Line
		if s.ExceptionLine > end {
			end = s.ExceptionLine
		}
		if cursor >= s.Header && cursor <= end {
			return from + s.Header, from + end, true
		}
	}
	return 0, 0, false
}

// readRunWorkspaceDirs reads the workspace_dir of each variant result in
// a repro run's folder. Each is opened through an os.Root of the folder
// and checked as a regular file on the handle it is read from, so an
// entry swapped for a link or a pipe after the listing is not followed.
func readRunWorkspaceDirs(run string) []string {
	root, err := os.OpenRoot(run)
	if err != nil {
		return nil
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil
	}
	var dirs []string
	n := 0
	for _, en := range entries {
		if !en.Type().IsRegular() || filepath.Ext(en.Name()) != ".json" {
			continue
		}
		if n++; n > maxRunFiles {
			break
		}
		data, err := localfile.ReadIn(root, en.Name(), maxRunFileBytes)
		if err != nil {
			continue
		}
		var v struct {
			WorkspaceDir string `json:"workspace_dir"`
		}
		if json.Unmarshal(data, &v) == nil && v.WorkspaceDir != "" && !slices.Contains(dirs, v.WorkspaceDir) {
			dirs = append(dirs, v.WorkspaceDir)
		}
	}
	return dirs
}
