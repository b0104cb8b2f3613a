package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/repro"
	"github.com/torchlsp/torchlsp/server/source"
	"github.com/torchlsp/torchlsp/server/traceback"
)

// The Debian captures ran in this directory on the CI machine; the 2.11
// ones in the second, on the GPU host (server/traceback/testdata).
const (
	debianRunDir = "/tmp/tmp.WOJmxNDkJj"
	h200RunDir   = "/tmp/tmp.Alywi7z6RG"
	debianSite   = "/usr/lib/python3/dist-packages"
)

// traceNotes records what the engine publishes and opens.
type traceNotes struct {
	NopNotifier
	mu     sync.Mutex // guards the fields below
	diags  map[string][]Diagnostic
	shown  []Location
	change chan struct{}
}

func newTraceNotes() *traceNotes {
	return &traceNotes{diags: map[string][]Diagnostic{}, change: make(chan struct{}, 100)}
}

func (n *traceNotes) Capabilities() Capabilities {
	return Capabilities{Diagnostics: true, ShowDocument: true}
}

func (n *traceNotes) PublishDiagnostics(_ context.Context, doc *Snapshot, diags []Diagnostic) error {
	n.mu.Lock()
	n.diags[doc.URI()] = append([]Diagnostic(nil), diags...)
	n.mu.Unlock()
	n.change <- struct{}{}
	return nil
}

func (n *traceNotes) ShowDocument(_ context.Context, loc Location, _ bool) (bool, error) {
	n.mu.Lock()
	n.shown = append(n.shown, loc)
	n.mu.Unlock()
	return true, nil
}

// waitDiags waits until the diagnostics published for uri satisfy ok.
func (n *traceNotes) waitDiags(t *testing.T, uri, what string, ok func([]Diagnostic) bool) []Diagnostic {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		n.mu.Lock()
		got, published := n.diags[uri]
		n.mu.Unlock()
		if published && ok(got) {
			return got
		}
		select {
		case <-n.change:
		case <-deadline:
			t.Fatalf("waited 30 s for %s on %s; last published: %+v", what, uri, got)
		}
	}
}

// traceEngine starts an engine on Debian's interpreter and its torch 1.13,
// mirrored for real, whose workspace holds the scripts the captures ran
// (scripts/logs) and whose target's workdir is the directory they ran in.
func traceEngine(t testing.TB, n Notifier, extra map[string]any) (*Engine, string) {
	t.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	if _, err := os.Stat(filepath.Join(debianSite, "torch", "__init__.py")); err != nil {
		t.Skipf("Debian's python3-torch is missing: %v", err)
	}
	root := t.TempDir()
	t.Cleanup(func() { removeReadOnly(root) })
	ws := filepath.Join(root, "ws")
	if err := os.CopyFS(ws, os.DirFS(filepath.Join("..", "scripts", "logs"))); err != nil {
		t.Fatal(err)
	}
	if n == nil {
		n = NopNotifier{}
	}
	target := map[string]any{"python": benchPython, "workdir": debianRunDir}
	for k, v := range extra {
		target[k] = v
	}
	eng := initEngine(t, n, root, ws, "deb", map[string]any{"deb": target})
	eng.Initialized(context.Background())
	return eng, ws
}

func capture(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("traceback", "testdata", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func linksOf(t *testing.T, eng *Engine, ws, name, text string) ([]Link, *Snapshot) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	doc := eng.DidOpen(ctx, source.FileURI(filepath.Join(ws, name)), "", 1, text)
	links, err := eng.DocumentLinks(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	return links, doc
}

// printedSource is the source line a traceback prints under the frame on
// line n of text, "" when it prints none.
func printedSource(lines []string, n int) string {
	if n+1 >= len(lines) {
		return ""
	}
	next := lines[n+1]
	t := strings.TrimSpace(next)
	if t == "" || strings.HasPrefix(t, `File "`) || len(next)-len(strings.TrimLeft(next, " ")) <= len(lines[n])-len(strings.TrimLeft(lines[n], " ")) {
		return ""
	}
	return t
}

func readLineOf(t *testing.T, path string, line int) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if line < 0 || line >= len(lines) {
		t.Fatalf("%s has no line %d", path, line+1)
	}
	return strings.TrimSpace(lines[line])
}

// TestLinksOnRealTracebacks maps every capture of Debian's torch 1.13 onto
// that torch's real mirror and the workspace: each torch frame and each
// frame of the user's scripts lands on the line whose code the traceback
// prints, pseudo-files and the standard library stay plain text, and the
// tooltip says the log names no version.
func TestLinksOnRealTracebacks(t *testing.T) {
	eng, ws := traceEngine(t, nil, nil)
	files, err := filepath.Glob(filepath.Join("traceback", "testdata", "torch113", "*.txt"))
	if err != nil || len(files) < 10 {
		t.Fatalf("captures: %v %v", files, err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			text := capture(t, "torch113/"+name)
			lines := strings.Split(text, "\n")
			links, _ := linksOf(t, eng, ws, strings.TrimSuffix(name, ".txt")+".log", text)
			linked := map[[2]int]Link{}
			for _, l := range links {
				linked[[2]int{l.Ref.Line, l.Ref.Start}] = l
			}
			refs, _ := traceback.Refs(text, 0, 0)
			for _, r := range refs {
				l, ok := linked[[2]int{r.Line, r.Start}]
				switch {
				case r.Pseudo():
					if ok {
						t.Errorf("pseudo-file %s linked to %s", r.Path, l.Path)
					}
				case strings.HasPrefix(r.Path, debianSite+"/torch/"):
					if !ok || l.Path == "" || !l.Mirror {
						t.Errorf("torch frame %s:%d not linked to the mirror: %+v", r.Path, r.FileLine, l)
						continue
					}
					if !strings.HasSuffix(l.Path, strings.TrimPrefix(r.Path, debianSite)) || strings.HasPrefix(l.Path, debianSite) {
						t.Errorf("torch frame %s linked to %s", r.Path, l.Path)
					}
					if !strings.Contains(l.Tooltip, "does not say which torch") || !strings.Contains(l.Tooltip, "1.13") {
						t.Errorf("tooltip %q", l.Tooltip)
					}
				case strings.HasPrefix(r.Path, debianRunDir+"/"):
					want := filepath.Join(ws, strings.TrimPrefix(r.Path, debianRunDir+"/"))
					if !ok || l.Path != want || l.Mirror {
						t.Errorf("user frame %s:%d not linked to %s: %+v", r.Path, r.FileLine, want, l)
						continue
					}
					if !strings.Contains(l.Tooltip, "workdir") {
						t.Errorf("tooltip %q", l.Tooltip)
					}
				default:
					if ok {
						t.Errorf("%s:%d (no mirrored package, not the user's) linked: %+v", r.Path, r.FileLine, l)
					}
				}
				if ok && l.Path != "" && r.Format == traceback.FormatFrame {
					if want := printedSource(lines, r.Line); want != "" {
						if got := readLineOf(t, l.Path, l.Line); got != want {
							t.Errorf("%s:%d lands on %q, the traceback prints %q", r.Path, r.FileLine, got, want)
						}
					}
				}
			}
		})
	}
}

// TestLinkVersionTruth: a path is linked only when the version the text
// names is the mirrored one; a torch of another install, or a stated
// version that differs, gets a tooltip saying so and no file.
func TestLinkVersionTruth(t *testing.T) {
	eng, ws := traceEngine(t, nil, nil)
	frame := capture(t, "torch113/string.txt")
	tests := []struct {
		name    string
		text    string
		linked  bool
		tooltip string
	}{
		{"no version", frame, true, "does not say which torch wrote it"},
		{"the mirrored version", "torch 1.13.0a0 on deb\n" + frame, true, "the version this text names"},
		{"another version", "PyTorch version: 2.11.0+cu130\n" + frame, false, "from torch 2.11.0+cu130, but target deb's mirror holds torch 1.13.0a0"},
		{"the version nearest before counts", "torch==2.11.0\n" + frame + "torch 1.13.0a0\n" + frame, false, "from torch 2.11.0"},
		{"another install", capture(t, "torch211/threads_assert.txt"), false, "not the one target deb has in /usr/lib/python3/dist-packages"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			links, _ := linksOf(t, eng, ws, strings.ReplaceAll(tc.name, " ", "_")+".log", tc.text)
			var first *Link
			for i := range links {
				if links[i].Mirror || strings.Contains(links[i].Ref.Path, "/torch/") {
					first = &links[i]
					break
				}
			}
			if first == nil {
				t.Fatalf("no torch link among %+v", links)
			}
			if (first.Path != "") != tc.linked || !strings.Contains(first.Tooltip, tc.tooltip) {
				t.Errorf("link %s:%d: path %q, tooltip %q; want linked=%v and a tooltip with %q", first.Ref.Path, first.Ref.FileLine, first.Path, first.Tooltip, tc.linked, tc.tooltip)
			}
		})
	}
}

// TestLinkFormats maps the relative and shortened paths torch's logs
// write: TORCH_LOGS' prefix (relative to site-packages), format_frame's
// paths relative to the torch package and its user paths whose first
// character it cut, and a pytest path relative to the workspace.
func TestLinkFormats(t *testing.T) {
	eng, ws := traceEngine(t, nil, nil)
	tests := []struct {
		line string
		want string // the local file, relative to the mirror's site dir ("torch/…") or the workspace ("ws/…"); "" for none
	}{
		{"W1201 23:05:33.428000 565 torch/nn/modules/module.py:1194] [0/0] Graph break", "torch/nn/modules/module.py"},
		{"  | +- TENSOR_MATCH: check_tensor(L['x'])  # y = x.sin()  # nn/modules/linear.py:114 in forward", "torch/nn/modules/linear.py"},
		{"  - 3/1: ___as_tensor(___stack0).item() > 0.0  # if y > 0:  # mp/tmp.WOJmxNDkJj/threads.py:8 in worker", "ws/threads.py"},
		{"threads.py:8: RuntimeError", "ws/threads.py"},
		{"[torch/nn/modules/linear.py:114](mirror:torch/nn/modules/linear.py#L114)", "torch/nn/modules/linear.py"},
		// Never outside the mirror or the workspace.
		{`  File "/tmp/tmp.WOJmxNDkJj/../../etc/hostname.py", line 1, in x`, ""},
		{`  File "/usr/lib/python3/dist-packages/torch/../../../../etc/passwd.py", line 1, in x`, ""},
		{"../outside.py:3", ""},
		{"torch/../../outside.py:3", ""},
		{`  File "/tmp/tmp.WOJmxNDkJj/escape.py", line 1, in x`, ""},
		{`  File "/tmp/tmp.WOJmxNDkJj/missing.py", line 1, in x`, ""},
		{`  File "/usr/lib/python3.11/threading.py", line 975, in run`, ""},
	}
	// A link in the workspace that leads out of it.
	outside := filepath.Join(t.TempDir(), "outside.py")
	if err := os.WriteFile(outside, []byte("secret = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "escape.py")); err != nil {
		t.Fatal(err)
	}
	for i, tc := range tests {
		links, _ := linksOf(t, eng, ws, fmt.Sprintf("format%d.log", i), tc.line+"\n")
		got := ""
		for _, l := range links {
			if l.Path == "" {
				continue
			}
			if rel, err := filepath.Rel(ws, l.Path); err == nil && !strings.HasPrefix(rel, "..") {
				got = "ws/" + rel
			} else if at := strings.Index(l.Path, "/site/"); at >= 0 {
				got = l.Path[at+len("/site/"):]
			} else {
				got = l.Path
			}
		}
		if got != tc.want {
			t.Errorf("%q: linked to %q, want %q (links %+v)", tc.line, got, tc.want, links)
		}
	}
}

// linkWindowBytes is the window of a large document that links read
// (server/links).
const linkWindowBytes = 4 << 20

// TestLinksOfLargeDocument: links come from the first and last 2 MB of a
// document over 4 MB, and nothing in between is read.
func TestLinksOfLargeDocument(t *testing.T) {
	eng, ws := traceEngine(t, nil, nil)
	frame := capture(t, "torch113/threads.txt")
	filler := strings.Repeat("step 1234 loss 0.5 lr 0.001 throughput 812.5 samples/s\n", (3<<20)/55)
	text := frame + filler + frame + filler + frame
	if len(text) <= linkWindowBytes {
		t.Fatalf("the document is only %d bytes", len(text))
	}
	links, doc := linksOf(t, eng, ws, "big.log", text)
	middle := strings.Count(frame+filler, "\n")
	end := strings.Count(frame+filler+frame+filler, "\n")
	var first, mid, last int
	for _, l := range links {
		switch {
		case l.Ref.Line < middle:
			first++
		case l.Ref.Line < end:
			mid++
		default:
			last++
		}
		// Positions are the document's own.
		lineText := strings.Split(doc.Text(), "\n")[l.Ref.Line]
		if !strings.HasPrefix(lineText[l.Ref.Start:], l.Ref.Path) {
			t.Fatalf("link at %d:%d does not start at its path in %q", l.Ref.Line, l.Ref.Start, lineText)
		}
	}
	// Each copy of the capture links its user frame and four torch frames;
	// threading.py is no mirrored package.
	if first != 5 || mid != 0 || last != 5 {
		t.Errorf("links: %d in the head, %d in the middle, %d in the tail; want 5, 0, 5", first, mid, last)
	}
}

// TestLinksLearnedFromReproRuns: a repro run's output names the temporary
// directory its variant put the workspace in; the run's result file says
// which, and the paths under it link to the workspace.
func TestLinksLearnedFromReproRuns(t *testing.T) {
	eng, ws := traceEngine(t, nil, nil)
	run := filepath.Join(ws, ".torchlsp", "repros", "20261201T230533Z-deb")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "threads.json"), []byte(`{"variant":"threads","workspace_dir":"/tmp/torchlsp-ws-k2j4"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(capture(t, "torch113/threads.txt"), debianRunDir, "/tmp/torchlsp-ws-k2j4")
	ctx := context.Background()
	doc := eng.DidOpen(ctx, source.FileURI(filepath.Join(run, "threads.stderr")), "", 1, text)
	links, err := eng.DocumentLinks(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range links {
		if l.Ref.Path == "/tmp/torchlsp-ws-k2j4/threads.py" {
			found = l.Path == filepath.Join(ws, "threads.py") && strings.Contains(l.Tooltip, "repro run")
		}
	}
	if !found {
		t.Errorf("the run's copy of threads.py did not link to the workspace: %+v", links)
	}
	// Elsewhere the directory means nothing.
	links, _ = linksOf(t, eng, ws, "elsewhere.log", text)
	for _, l := range links {
		if strings.HasPrefix(l.Ref.Path, "/tmp/torchlsp-ws-k2j4/") && l.Path != "" {
			t.Errorf("linked outside the run's folder: %+v", l)
		}
	}
	// A run of this engine teaches it too.
	eng.links.RanIn(reproReport("deb", "/tmp/torchlsp-ws-9zz1"), ws, "")
	links, _ = linksOf(t, eng, ws, "learned.log", strings.ReplaceAll(text, "/tmp/torchlsp-ws-k2j4", "/tmp/torchlsp-ws-9zz1"))
	found = false
	for _, l := range links {
		found = found || l.Path == filepath.Join(ws, "threads.py")
	}
	if !found {
		t.Errorf("a learned run directory did not link: %+v", links)
	}
}

// TestTracebackCommand maps the DataLoader capture: the exception lands on
// the user's innermost frame (the dataset's __getitem__), with torch's
// frames as related information, the frame opens, and the diagnostic goes
// once the file changes.
func TestTracebackCommand(t *testing.T) {
	n := newTraceNotes()
	eng, ws := traceEngine(t, n, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	userPath := filepath.Join(ws, "dataloader.py")
	userText, err := os.ReadFile(userPath)
	if err != nil {
		t.Fatal(err)
	}
	userURI := source.FileURI(userPath)
	eng.DidOpen(ctx, userURI, "", 1, string(userText))
	res, err := eng.Traceback(ctx, TracebackArgs{Text: capture(t, "torch113/dataloader.txt")})
	if err != nil {
		t.Fatal(err)
	}
	if res.User < 0 || res.Frames[res.User].Path != userPath || res.Frames[res.User].Line != 10 {
		t.Fatalf("user frame: %+v", res)
	}
	if res.Mapped != 9 || res.Exception != "ValueError: sample 2 is broken" {
		t.Errorf("mapped %d of %d, exception %q", res.Mapped, len(res.Frames), res.Exception)
	}
	// The wire's form: 1-based lines, the note's document.
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Frames []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		} `json:"frames"`
		User       int `json:"user"`
		Diagnostic *struct {
			URI string `json:"uri"`
		} `json:"diagnostic"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		t.Fatal(err)
	}
	if wire.User != res.User || len(wire.Frames) != len(res.Frames) || wire.Frames[wire.User].Path != userPath || wire.Frames[wire.User].Line != 11 ||
		wire.Diagnostic == nil || wire.Diagnostic.URI != userURI {
		t.Errorf("on the wire: %s", data)
	}
	diags := n.waitDiags(t, userURI, "the traceback's diagnostic", func(ds []Diagnostic) bool {
		for _, d := range ds {
			if d.Code == CodeTraceback {
				return true
			}
		}
		return false
	})
	var d Diagnostic
	for _, x := range diags {
		if x.Code == CodeTraceback {
			d = x
		}
	}
	if d.Range.Start.Line != 10 || d.Message != "ValueError: sample 2 is broken — traceback from target deb" {
		t.Errorf("diagnostic %+v", d)
	}
	if len(d.Related) != 3 || !strings.Contains(d.Related[0].Message, "fetch.py:58 in <listcomp>") ||
		readLineOf(t, d.Related[0].Location.Path, d.Related[0].Location.Range.Start.Line) != "data = [self.dataset[idx] for idx in possibly_batched_index]" {
		t.Errorf("related: %+v", d.Related)
	}
	n.mu.Lock()
	shown := append([]Location(nil), n.shown...)
	n.mu.Unlock()
	if len(shown) != 1 || shown[0].Path != userPath || shown[0].Range.Start.Line != 10 {
		t.Errorf("opened %+v", shown)
	}
	// An edit drops it.
	if _, err := eng.DidChange(ctx, userURI, 2, []source.Change{{Text: "# edited\n" + string(userText)}}); err != nil {
		t.Fatal(err)
	}
	n.waitDiags(t, userURI, "the traceback's diagnostic to go", func(ds []Diagnostic) bool {
		for _, d := range ds {
			if d.Code == CodeTraceback {
				return false
			}
		}
		return true
	})
}

// TestTracebackAction: the cursor in a traceback of a log offers the
// command for that traceback's lines; outside any, nothing.
func TestTracebackAction(t *testing.T) {
	eng, ws := traceEngine(t, nil, nil)
	text := "epoch 1\n" + capture(t, "torch113/threads.txt")
	doc := eng.DidOpen(context.Background(), source.FileURI(filepath.Join(ws, "run.log")), "", 1, text)
	at := func(line int) []CodeAction {
		as, err := eng.CodeActions(context.Background(), doc, Range{Start: Position{Line: line}, End: Position{Line: line}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return as
	}
	as := at(8)
	if len(as) != 1 || as[0].Command == nil || as[0].Command.Name != CommandTraceback {
		t.Fatalf("actions on a frame: %+v", as)
	}
	args := as[0].Command.Arguments[0].(TracebackArgs)
	if args.Line != 2 || args.EndLine != 21 {
		t.Errorf("the action covers lines %d-%d, want the traceback's 2-21", args.Line, args.EndLine)
	}
	if as := at(0); len(as) != 0 {
		t.Errorf("actions outside a traceback: %+v", as)
	}
}

// TestLogsAreNotPython: a log that quotes Python gets no Python
// diagnostics.
func TestLogsAreNotPython(t *testing.T) {
	eng, ws := traceEngine(t, nil, nil)
	src := "import torch\nimport threading\nf = torch.compile(lambda x: x, mode=\"reduce-overhead\")\nthreading.Thread(target=f).start()\n"
	for name, want := range map[string]bool{"train.py": true, "train.log": false} {
		doc := eng.DidOpen(context.Background(), source.FileURI(filepath.Join(ws, name)), "", 1, src)
		if got := doc.IsPython(); got != want {
			t.Errorf("%s: IsPython %v", name, got)
		}
		if want {
			continue
		}
		ds, err := eng.Diagnostics(context.Background(), doc)
		if err != nil || len(ds) != 0 {
			t.Errorf("%s: diagnostics %+v, %v", name, ds, err)
		}
	}
}

// TestLinksTorch211: the 2.11 captures from the GPU host, through a target
// that has that torch's sources (TORCHLSP_TORCH211_SITE) at another
// place: with the site dir named as the target has it, every torch frame
// lands on the line whose code the traceback prints, and TORCH_LOGS'
// relative paths map too.
func TestLinksTorch211(t *testing.T) {
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	if site == "" {
		t.Skip("TORCHLSP_TORCH211_SITE is unset: it names a site dir holding the torch 2.11 sources")
	}
	site, _ = filepath.Abs(site)
	eng, ws := traceEngine(t, nil, map[string]any{"env": map[string]string{"PYTHONPATH": site}, "workdir": h200RunDir})
	for _, s := range []string{"explain.py", "graph_breaks.py", "threads_assert.py", "overwritten.py", "fullgraph_break.py", "eval_with_key.py"} {
		data, err := os.ReadFile(filepath.Join("..", "scripts", "device", "logs", s))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, s), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"threads_assert.txt", "eval_with_key.txt", "graph_breaks.txt", "recompiles_verbose.txt", "fullgraph_break.txt"} {
		t.Run(name, func(t *testing.T) {
			text := strings.ReplaceAll(capture(t, "torch211/"+name), "/opt/torch/.venv/lib/python3.12/site-packages", site)
			lines := strings.Split(text, "\n")
			links, _ := linksOf(t, eng, ws, name+".log", text)
			torch, user := 0, 0
			for _, l := range links {
				if l.Path == "" {
					t.Errorf("%s:%d not linked: %s", l.Ref.Path, l.Ref.FileLine, l.Tooltip)
					continue
				}
				if l.Mirror {
					torch++
				} else {
					user++
				}
				if l.Ref.Format == traceback.FormatFrame {
					if want := printedSource(lines, l.Ref.Line); want != "" {
						if got := readLineOf(t, l.Path, l.Line); got != want {
							t.Errorf("%s:%d lands on %q, the traceback prints %q", l.Ref.Path, l.Ref.FileLine, got, want)
						}
					}
				}
			}
			if torch == 0 || user == 0 {
				t.Errorf("%d torch links, %d user links", torch, user)
			}
		})
	}
}

func reproReport(target, workspaceDir string) repro.Report {
	return repro.Report{Target: target, Variants: []repro.VariantResult{{Variant: "threads", WorkspaceDir: workspaceDir}}}
}
