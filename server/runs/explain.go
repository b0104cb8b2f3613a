package runs

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/repro"
	"github.com/torchlsp/torchlsp/server/source"
)

// Diagnostic codes of explain's findings when torch names no graph-break
// code of its own.
const (
	CodeGraphBreak = "TL200"
	CodeRecompile  = "TL201"
	codeExplained  = "TL202 explain"
)

// maxExplainFileBytes bounds a file read to place a finding's range.
const maxExplainFileBytes = 4 << 20

// Explain runs torchlsp.explain and `torchlsp explain`, as a job of the
// runner (Run): the compile call's object on the target with Dynamo's
// own reporting (torch._dynamo.explain and the graph_breaks and
// recompiles logs; a profiler stand-in where the target's torch has no
// Dynamo), each graph break and recompile a diagnostic on the user's
// line.
func (rn *Runs) Explain(ctx context.Context, args api.RunArgs) (*RunResult, error) {
	doc := rn.deps.Document(args.URI)
	if doc == nil {
		return nil, fmt.Errorf("explain: %s: %w", args.URI, errNoDocument)
	}
	job := Job{
		name: "explain", kind: "explain compile", report: "compile explained",
		title:  runTitle("explain compile", doc, args, rn.runTargets(api.RunArgs{Target: args.Target})),
		status: func(ev repro.Event) string { return ev.Line },
		work: func(ctx context.Context, sink func(repro.Event)) (*runOutput, error) {
			return rn.explain(ctx, doc, args, sink)
		},
	}
	return rn.Run(ctx, job, args)
}

// explain is an explain run's work; a nil output means nothing ran.
func (rn *Runs) explain(ctx context.Context, doc *api.Snapshot, args api.RunArgs, sink func(repro.Event)) (*runOutput, error) {
	call, place, err := rn.compileCallIn(doc, args.Line)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	workspace := place.dir
	own, err := ownCodeOf(workspace, doc.Path(), doc.Text(), call)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	c := callerOf(args)
	files, err := rn.runFiles(ctx, place, own, c.Workdir, c.AllowHome, sink)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	s, err := rn.deps.Session(args.Target)
	if err != nil {
		return nil, err
	}
	cat, _, err := s.Catalog(ctx)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", s.Spec().Name, err)
	}
	spec := reproSpec(doc.FlagRefs(cat), call, cat, 0)
	own.apply(&spec, call, files, c.Workdir)
	v, err := repro.GenerateExplain(spec)
	if err != nil {
		return nil, err
	}
	local := func(file string, line int) (string, bool) {
		p, ok := workspaceFile(workspace, file)
		if !ok {
			return "", false
		}
		u := url.URL{Scheme: "file", Path: p, Fragment: fmt.Sprintf("L%d", line)}
		return u.String(), true
	}
	rep, runErr := repro.Explain(ctx, s.Target(), s.Spec().Interpreter(), v, rn.runOptions(place), local, sink)
	rn.deps.RanIn(rep, place.dir, c.Workdir)
	out := &runOutput{markdown: rep.ExplainMarkdown(local), reports: []repro.Report{rep}}
	if runErr != nil {
		return out, runErr
	}
	ex := rep.Variants[0].Explain
	out.diagnostics = rn.explainDiagnostics(doc, workspace, ex)
	summary := fmt.Sprintf("Explain compile on %s: %d graph break(s), %d recompile(s), from %s", s.Spec().Name, len(ex.GraphBreaks), len(ex.Recompiles), ex.Method)
	out.diagnostics[doc.URI()] = append(out.diagnostics[doc.URI()], api.Diagnostic{
		Range: api.RangeOf(call.CalleeSpan), Severity: api.SeverityInfo, Code: codeExplained, Source: "torchlsp", Message: summary,
	})
	rn.noteExplain(out.diagnostics)
	return out, nil
}

// workspaceFile maps a path the script reported relative to the user's
// code back to the workspace, never outside it.
func workspaceFile(workspace, rel string) (string, bool) {
	if rel == "" || filepath.IsAbs(rel) || strings.HasPrefix(rel, "<") {
		return "", false
	}
	p := filepath.Join(workspace, filepath.FromSlash(rel))
	if r, err := filepath.Rel(workspace, p); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return p, true
}

func (rn *Runs) explainDiagnostics(doc *api.Snapshot, workspace string, ex *repro.ExplainInfo) map[string][]api.Diagnostic {
	out := map[string][]api.Diagnostic{}
	texts := map[string][]string{doc.Path(): strings.Split(doc.Text(), "\n")}
	// The run names files as it likes (compile(src, "zero.py", "exec")):
	// they are read only inside the workspace, and only as bounded regular
	// files, never through a link to a device or from a pipe.
	root, err := os.OpenRoot(workspace)
	if err == nil {
		defer root.Close()
	}
	lineRange := func(path string, line int) api.Range {
		lines, ok := texts[path]
		if !ok {
			if rel, err := filepath.Rel(workspace, path); err == nil && root != nil {
				if data, err := localfile.ReadIn(root, rel, maxExplainFileBytes); err == nil {
					lines = strings.Split(string(data), "\n")
				}
			}
			texts[path] = lines
		}
		r := api.Range{Start: api.Position{Line: line}, End: api.Position{Line: line}}
		if line < len(lines) {
			text := strings.TrimRight(lines[line], "\r")
			indent := len(text) - len(strings.TrimLeft(text, " \t"))
			r.Start.Column = indent
			r.End.Column = len(text)
		}
		return r
	}
	add := func(evs []repro.CompileEvent, what, fallback string) {
		for _, ev := range evs {
			path, ok := workspaceFile(workspace, ev.File)
			if !ok || ev.Line < 1 {
				continue
			}
			code := ev.Code
			if code == "" {
				code = fallback
			}
			uri := source.FileURI(path)
			out[uri] = append(out[uri], api.Diagnostic{
				Range: lineRange(path, ev.Line-1), Severity: api.SeverityWarning, Code: code, Source: "torchlsp",
				Message: what + ": " + explainReason(ev.Reason),
			})
		}
	}
	add(ex.GraphBreaks, "Graph break", CodeGraphBreak)
	add(ex.Recompiles, "Recompile", CodeRecompile)
	return out
}

// explainReason keeps the lines of torch's reason that say what and why,
// without the developer context.
func explainReason(reason string) string {
	var keep []string
	for _, l := range strings.Split(reason, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "Developer debug context") || strings.HasPrefix(l, "For more details") {
			continue
		}
		keep = append(keep, l)
		if len(keep) == 4 {
			break
		}
	}
	return strings.Join(keep, " ")
}

// noteExplain replaces the last explain's diagnostics with these and
// republishes every document either touches.
func (rn *Runs) noteExplain(diags map[string][]api.Diagnostic) {
	rn.notes.mu.Lock()
	touched := map[string]bool{}
	for uri := range rn.notes.explain {
		touched[uri] = true
	}
	rn.notes.explain = diags
	for uri := range diags {
		touched[uri] = true
	}
	rn.notes.mu.Unlock()
	for uri := range touched {
		if d := rn.deps.Document(uri); d != nil {
			rn.deps.NotesChanged(d)
		}
	}
}
