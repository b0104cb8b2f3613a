// Package links maps what a target printed back to local files: the
// document links of logs and tracebacks, the links of a terminal's text,
// and the traceback command, which also leaves the exception on the
// user's innermost frame as a note. Target paths lead to a local file only
// through the prefixes a pathMap knows (the mirrors, the workdirs, where
// repro runs put the workspace, the workspace folders). It reads the
// targets' model (server/session) and the documents (server/source), and
// knows of the rest of the engine only the Deps it was given.
package links

import (
	"context"
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/session"
	"github.com/torchlsp/torchlsp/server/source"
	"github.com/torchlsp/torchlsp/server/traceback"
)

// Deps is what links ask of the engine.
type Deps struct {
	Notify api.Notifier
	// Session is the session of a target, the default one for "";
	// Sessions every session open now.
	Session  func(name string) (*session.Session, error)
	Sessions func() []*session.Session
	// Folders are the workspace folders; Workdirs the configured
	// targets' workdirs, by target name.
	Folders  func() []string
	Workdirs func() map[string]string
	// Document and DocumentByPath find an open document's latest
	// snapshot, nil when it is not open.
	Document       func(uri string) *source.Snapshot
	DocumentByPath func(path string) *source.Snapshot
	// NotesChanged is told of a document whose notes changed.
	NotesChanged func(doc *source.Snapshot)
}

// Links keeps what the traceback command learned: its note on the user's
// code and where repro runs put the workspace on targets.
type Links struct {
	deps   Deps
	traces traceState
}

// New makes the links feature over deps.
func New(deps Deps) *Links { return &Links{deps: deps} }

// Notes are the traceback's diagnostic on a document, while its text is
// the one the traceback was mapped against.
func (l *Links) Notes(doc *source.Snapshot) []api.Diagnostic { return l.traces.noteOn(doc) }

// Bounds of the links of one document. documentLink asks for a whole
// document at once, and a training run's log can be 100 MB: links are
// computed for at most linkWindowBytes of it, all of a smaller document,
// else its first and last linkWindowBytes/2 (a run's log ends with the
// traceback that stopped it), and at most maxDocumentLinks of them.
const (
	linkWindowBytes  = 4 << 20
	maxDocumentLinks = 20000
)

// DocumentLinks returns the target paths a document names (tracebacks,
// logs, reports) that lead to a local file: the mirror at the line for a
// mirrored package, the workspace file for the user's code, and, with no
// file but a tooltip saying why, torch paths from another version or
// install. The rest stays plain text.
func (l *Links) DocumentLinks(ctx context.Context, doc *api.Snapshot) ([]Link, error) {
	if doc == nil {
		return nil, nil
	}
	refs, versions := documentRefs(doc.Text(), doc.Mapper())
	if len(refs) == 0 {
		return nil, nil
	}
	m := l.newPathMap(ctx, doc.Path())
	defer m.close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m.links(refs, versions), nil
}

// documentRefs finds the references of a document within the bounds
// above, with its version statements; mapper, when given, is the text's
// (it knows where each line starts).
func documentRefs(text string, mapper *source.Mapper) ([]traceback.Ref, []traceback.Version) {
	if len(text) <= linkWindowBytes {
		refs, _ := traceback.Refs(text, 0, maxDocumentLinks)
		return refs, traceback.Versions(text, 0)
	}
	half := linkWindowBytes / 2
	// Whole lines only: the head ends at its last line break, the tail
	// starts at the first line that begins in it.
	head := text[:strings.LastIndexAny(text[:half], "\r\n")+1]
	tailAt := lineStart(text, len(text)-half)
	tail := text[tailAt:]
	var tailLine int
	if mapper != nil {
		tailLine = mapper.PositionAt(tailAt).Line
	} else {
		tailLine = countLines(text[:tailAt])
	}
	refs, more := traceback.Refs(head, 0, maxDocumentLinks)
	if !more {
		tailRefs, _ := traceback.Refs(tail, tailLine, maxDocumentLinks-len(refs))
		refs = append(refs, tailRefs...)
	}
	versions := append(traceback.Versions(head, 0), traceback.Versions(tail, tailLine)...)
	return refs, versions
}

// lineStart returns the offset of the first line that starts at or after
// offset (len(text) when none does).
func lineStart(text string, offset int) int {
	if offset <= 0 {
		return 0
	}
	if offset >= len(text) {
		return len(text)
	}
	if text[offset-1] == '\n' || (text[offset-1] == '\r' && text[offset] != '\n') {
		return offset
	}
	i := strings.IndexAny(text[offset:], "\r\n")
	if i < 0 {
		return len(text)
	}
	at := offset + i + 1
	if text[at-1] == '\r' && at < len(text) && text[at] == '\n' {
		at++
	}
	return at
}

// countLines counts the line breaks of text as LSP does ("\n", "\r\n", a
// lone "\r").
func countLines(text string) int {
	n := strings.Count(text, "\n") + strings.Count(text, "\r") - strings.Count(text, "\r\n")
	return n
}

// maxLinksTextBytes bounds the text torchlsp.links maps: a terminal's
// line, or a few.
const maxLinksTextBytes = 256 << 10

// textLinkJSON is one link torchlsp.links found, with its columns both in
// bytes (Neovim) and in UTF-16 code units (VS Code's terminal).
type textLinkJSON struct {
	Line       int    `json:"line"` // 0-based line of the text
	Start      int    `json:"start"`
	End        int    `json:"end"`
	StartUTF16 int    `json:"startUTF16"`
	EndUTF16   int    `json:"endUTF16"`
	URI        string `json:"uri,omitempty"`  // file URI with #L<line>; absent when not linked
	Path       string `json:"path,omitempty"` // the local file
	FileLine   int    `json:"fileLine"`       // 1-based line in it
	Tooltip    string `json:"tooltip,omitempty"`
}

type LinksResult struct {
	Links []textLinkJSON `json:"links"`
}

// LinksCommand runs torchlsp.links: it maps the target paths of a short text (a terminal's line)
// as DocumentLinks maps a document's: editors link what their terminals
// print with it.
func (l *Links) LinksCommand(ctx context.Context, args api.LinksArgs) (*LinksResult, error) {
	text := args.Text
	if len(text) > maxLinksTextBytes {
		return nil, fmt.Errorf("links: %d bytes of text, over the limit of %d", len(text), maxLinksTextBytes)
	}
	out := &LinksResult{Links: []textLinkJSON{}}
	refs, versions := documentRefs(text, nil)
	if len(refs) == 0 {
		return out, nil
	}
	m := l.newPathMap(ctx, "")
	defer m.close()
	mapper := source.NewMapper(text)
	for _, l := range m.links(refs, versions) {
		j := textLinkJSON{Line: l.Ref.Line, Start: l.Ref.Start, End: l.Ref.End, FileLine: l.Ref.FileLine, Tooltip: l.Tooltip, Path: l.Path}
		if r, err := mapper.ToUTF16Range(api.Range{Start: api.Position{Line: l.Ref.Line, Column: l.Ref.Start}, End: api.Position{Line: l.Ref.Line, Column: l.Ref.End}}); err == nil {
			j.StartUTF16, j.EndUTF16 = int(r.Start.Character), int(r.End.Character)
		}
		if l.Path != "" {
			j.URI = LinkURI(l.Path, l.Line)
		}
		out.Links = append(out.Links, j)
	}
	return out, nil
}

// LinkURI is the file URI of a local file at a 0-based line, as editors
// open it from a link: file:///path#L<line+1>.
func LinkURI(path string, line int) string {
	return source.FileURI(path) + fmt.Sprintf("#L%d", line+1)
}
