package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// The cross-reference part of a session: references, incoming calls and
// workspace symbols of torch names, asked from the workspace's xref.py
// and, for references, from inside the torch file that defines the name
// (as an editor asks after following a definition there). Each question
// is asked once untimed ("first": what the first use costs, the wait for
// the mirror included) and then Rounds times.

// xrefQuery is one cross-reference question.
type xrefQuery struct {
	Label  string // the table's column
	Method string // references, incomingCalls, workspaceSymbol, referencesInDefinition
	Marker string // where the name is in xref.py
	Word   string // the name, inside Marker
	Query  string // for workspaceSymbol
}

const xrefScript = "xref.py"

var defaultXref = []xrefQuery{
	{Label: "references: torch.set_printoptions", Method: "references", Marker: "torch.set_printoptions(", Word: "set_printoptions"},
	{Label: "references: cudagraph_trees.get_obj", Method: "references", Marker: "cudagraph_trees.get_obj(", Word: "get_obj"},
	{Label: "references inside torch: get_obj", Method: "referencesInDefinition", Marker: "cudagraph_trees.get_obj(", Word: "get_obj"},
	{Label: "incoming calls: get_obj", Method: "incomingCalls", Marker: "cudagraph_trees.get_obj(", Word: "get_obj"},
	{Label: "workspace symbol: get_obj", Method: "workspaceSymbol", Query: "get_obj"},
	{Label: "workspace symbol: set_printoptions", Method: "workspaceSymbol", Query: "set_printoptions"},
}

// xrefStats is what one question measured.
type xrefStats struct {
	methodStats
	FirstMs float64 `json:"firstMs"`
	// Count is how many places (references, call sites, symbols) the
	// last answer gave; InTorch how many of them are files of torch.
	Count   int    `json:"count"`
	InTorch int    `json:"inTorch"`
	Err     string `json:"error,omitempty"`
}

// driveXref asks every cross-reference question.
func driveXref(ctx context.Context, cfg sessionConfig, ed *lsptest.Editor, res *result) error {
	text, err := os.ReadFile(filepath.Join(ed.Root, xrefScript))
	if err != nil {
		return nil // a workspace without the script asks nothing
	}
	uri, err := openXref(ed)
	if err != nil {
		return err
	}
	res.Xref = map[string]xrefStats{}
	for _, q := range cfg.Xref {
		st := xrefStats{}
		ask, err := prepareXref(ctx, cfg, ed, uri, string(text), q)
		if err == nil {
			start := time.Now()
			st.Count, st.InTorch, err = ask()
			st.FirstMs = ms(time.Since(start))
			var ds []time.Duration
			for i := 0; err == nil && i < cfg.XrefRounds; i++ {
				start := time.Now()
				st.Count, st.InTorch, err = ask()
				ds = append(ds, time.Since(start))
			}
			st.methodStats = stats(ds)
		}
		if err != nil {
			st.Err = err.Error()
		}
		res.Xref[q.Label] = st
		if err := connErr(ed.Client); err != nil {
			return err
		}
	}
	return nil
}

// openXref opens xref.py unless it is open already.
func openXref(ed *lsptest.Editor) (string, error) {
	uri := ed.URI(xrefScript)
	if _, open := ed.Text(uri); open {
		return uri, nil
	}
	return ed.OpenFile(xrefScript)
}

// firstReferences polls defaultXref's first question (references of a
// torch name from xref.py) from the start of the session until an answer
// names a place, as the first correct definition is polled: what a user
// who asks for references as soon as the editor opens waits.
func firstReferences(ctx context.Context, cfg sessionConfig, ed *lsptest.Editor, res *result, start time.Time) error {
	res.FirstRefs = -1
	text, err := os.ReadFile(filepath.Join(ed.Root, xrefScript))
	if err != nil {
		return fmt.Errorf("-refs-first: %w", err)
	}
	uri, err := openXref(ed)
	if err != nil {
		return err
	}
	ask, err := prepareXref(ctx, cfg, ed, uri, string(text), defaultXref[0])
	if err != nil {
		return fmt.Errorf("-refs-first: %w", err)
	}
	return pollFirst(ctx, ed, func() bool {
		res.FirstRefsPolls++
		n, _, err := ask()
		if err == nil && n > 0 {
			res.FirstRefs, res.FirstRefsCount = ms(time.Since(start)), n
			return true
		}
		return false
	})
}

// prepareXref returns the request a question makes, timed by the caller.
func prepareXref(ctx context.Context, cfg sessionConfig, ed *lsptest.Editor, uri, text string, q xrefQuery) (func() (int, int, error), error) {
	c := ed.Client
	if q.Method == "workspaceSymbol" {
		return func() (int, int, error) {
			raw, _, err := call(ctx, c, "workspace/symbol", map[string]any{"query": q.Query}, cfg.CallTimeout)
			if err != nil {
				return 0, 0, err
			}
			var syms []struct {
				Location struct {
					URI string `json:"uri"`
				} `json:"location"`
			}
			if err := unmarshalList(raw, &syms); err != nil {
				return 0, 0, err
			}
			var uris []string
			for _, s := range syms {
				uris = append(uris, s.Location.URI)
			}
			return len(syms), inTorch(uris), nil
		}, nil
	}
	p, err := locate(text, query{Symbol: q.Label, Marker: q.Marker, Word: q.Word})
	if err != nil {
		return nil, err
	}
	if q.Method == "referencesInDefinition" {
		// Follow the definition into torch, open that file, and ask there.
		locs, _, err := definition(ctx, c, uri, p, cfg.CallTimeout)
		if err != nil {
			return nil, err
		}
		if len(locs) == 0 {
			return nil, fmt.Errorf("no definition of %s to open", q.Word)
		}
		defText, err := os.ReadFile(locs[0].Path)
		if err != nil {
			return nil, err
		}
		if uri, err = ed.OpenFile(locs[0].Path); err != nil {
			return nil, err
		}
		line := strings.Split(string(defText), "\n")[locs[0].Line-1]
		col := strings.Index(line, q.Word)
		if col < 0 {
			return nil, fmt.Errorf("the definition's line %q does not name %s", line, q.Word)
		}
		p = offsetToPosition(line, col+1)
		p.Line = locs[0].Line - 1
		q.Method = "references"
	}
	at := textDocumentPosition(uri, p)
	switch q.Method {
	case "references":
		params := map[string]any{"textDocument": at["textDocument"], "position": at["position"], "context": map[string]bool{"includeDeclaration": true}}
		return func() (int, int, error) {
			raw, _, err := call(ctx, c, "textDocument/references", params, cfg.CallTimeout)
			if err != nil {
				return 0, 0, err
			}
			var locs []struct {
				URI string `json:"uri"`
			}
			if err := unmarshalList(raw, &locs); err != nil {
				return 0, 0, err
			}
			var uris []string
			for _, l := range locs {
				uris = append(uris, l.URI)
			}
			return len(locs), inTorch(uris), nil
		}, nil
	case "incomingCalls":
		return func() (int, int, error) {
			raw, _, err := call(ctx, c, "textDocument/prepareCallHierarchy", at, cfg.CallTimeout)
			if err != nil {
				return 0, 0, err
			}
			var items []json.RawMessage
			if err := unmarshalList(raw, &items); err != nil || len(items) == 0 {
				return 0, 0, err
			}
			raw, _, err = call(ctx, c, "callHierarchy/incomingCalls", map[string]any{"item": items[0]}, cfg.CallTimeout)
			if err != nil {
				return 0, 0, err
			}
			var calls []struct {
				From struct {
					URI string `json:"uri"`
				} `json:"from"`
			}
			if err := unmarshalList(raw, &calls); err != nil {
				return 0, 0, err
			}
			var uris []string
			for _, cl := range calls {
				uris = append(uris, cl.From.URI)
			}
			return len(calls), inTorch(uris), nil
		}, nil
	}
	return nil, fmt.Errorf("unknown method %s", q.Method)
}

// unmarshalList decodes a list result; null is an empty list.
func unmarshalList(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	return nil
}

// inTorch counts the URIs of files of a torch package.
func inTorch(uris []string) int {
	n := 0
	for _, u := range uris {
		if strings.Contains(u, "/torch/") {
			n++
		}
	}
	return n
}

// xrefCell is a question's cell of the table: p50 / p99 (count, first).
func xrefCell(st xrefStats, ok bool) string {
	switch {
	case !ok:
		return "—"
	case st.Err != "":
		return "error"
	case st.Count == 0:
		return fmt.Sprintf("none (first %s)", fmtMs(st.FirstMs))
	}
	return fmt.Sprintf("%s / %s (%d, first %s)", fmtMs(st.P50ms), fmtMs(st.P99ms), st.Count, fmtMs(st.FirstMs))
}
