package site

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestServeHandsSiteToPyright drives `torchlsp serve --stdio` as an editor
// package does: it waits for torchlsp/site, asks torchlsp.site, gives the
// path to pyright, and checks that the two servers then give one answer —
// the same definition, and a torchlsp hover that leaves the signature to
// pyright. A switch of the default target withdraws the old site first.
func TestServeHandsSiteToPyright(t *testing.T) {
	t.Parallel()
	tgt := debianTarget(t)
	pyrightArgv := npmServer("pyright")(t)
	fixture, err := filepath.Abs(filepath.Join("..", "..", "testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace(t)
	h := newHome(t, tgt)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	settings := map[string]any{
		"defaultTarget": "deb",
		"targets": map[string]any{
			"deb": map[string]any{"python": tgt.python},
			"fix": map[string]any{"python": debianPython, "env": map[string]string{"PYTHONPATH": fixture}},
		},
	}
	tl := startServer(t, ctx, serverConfig{
		argv: []string{torchlspBin, "serve", "--stdio"}, env: cleanEnv(h.env...), root: ws,
		settings: map[string]any{"torchlsp": settings}, initOptions: settings,
	})
	train := filepath.Join(ws, "train.py")
	tl.open(train, "python")

	var note struct {
		Target string `json:"target"`
		Path   string `json:"path"`
	}
	raw, idx, err := tl.waitNote(ctx, "torchlsp/site", 0, func(p json.RawMessage) bool {
		return json.Unmarshal(p, &note) == nil && note.Path != ""
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, tl.logTail())
	}
	if note.Target != "deb" {
		t.Errorf("torchlsp/site %s: target %q, want deb", raw, note.Target)
	}

	var res map[string]json.RawMessage
	if err := tl.call(ctx, "workspace/executeCommand", map[string]any{"command": "torchlsp.site", "arguments": []any{map[string]string{"target": "deb"}}}, &res); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range res {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "bytes,packages,path,python,target" {
		t.Errorf("torchlsp.site returned keys %s, want bytes,packages,path,python,target", got)
	}
	var site struct {
		Target   string   `json:"target"`
		Python   string   `json:"python"`
		Path     string   `json:"path"`
		Packages []string `json:"packages"`
		Bytes    int64    `json:"bytes"`
	}
	b, _ := json.Marshal(res)
	if err := json.Unmarshal(b, &site); err != nil {
		t.Fatal(err)
	}
	if site.Target != "deb" || site.Python != debianPython || site.Path != note.Path || len(site.Packages) == 0 || site.Packages[0] != "torch" || site.Bytes < 1<<20 {
		t.Errorf("torchlsp.site = %s; notification said %s", b, raw)
	}

	// torchlsp's hover now says only what pyright cannot.
	line, col := find(t, train, "self.fc = nn.Linear(4, 2)", "Linear")
	hover, err := tl.hover(ctx, train, line, col)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"torch/nn/modules/linear.py:", "on target **deb**", "torch 1.13"} {
		if !strings.Contains(hover, want) {
			t.Errorf("hover %q lacks %q", hover, want)
		}
	}
	t.Logf("torchlsp hover beside pyright: %s", hover)
	if strings.Contains(hover, "```python") || strings.Contains(hover, "def ") || strings.Contains(hover, "class Linear") {
		t.Errorf("hover beside pyright repeats the signature: %q", hover)
	}

	// Both servers name the same place for nn.Module.
	line, col = find(t, train, "class Net(nn.Module):", "Module")
	mine, err := tl.definition(ctx, train, line, col)
	if err != nil {
		t.Fatal(err)
	}
	python := noTorchPython(t)
	pyrightSettings := map[string]any{"python": map[string]any{"pythonPath": python, "analysis": map[string]any{"extraPaths": []string{site.Path}}}}
	pr := startServer(t, ctx, serverConfig{argv: pyrightArgv, env: cleanEnv(h.env...), root: ws, settings: pyrightSettings, initOptions: pyrightSettings})
	pr.open(train, "python")
	theirs, err := pr.definition(ctx, train, line, col)
	if err != nil {
		t.Fatalf("pyright: %v\n%s", err, pr.logTail())
	}
	if len(mine) != 1 || len(theirs) != 1 || mine[0].uri() != theirs[0].uri() || mine[0].Range != theirs[0].Range {
		t.Errorf("nn.Module: torchlsp says %+v, pyright says %+v: the editor would show both", mine, theirs)
	}
	t.Logf("nn.Module: torchlsp %s:%d, pyright %s:%d", mine[0].uri(), mine[0].line()+1, theirs[0].uri(), theirs[0].line()+1)
	if p := uriPath(t, mine[0].uri()); !strings.HasPrefix(p, site.Path+"/") {
		t.Errorf("torchlsp's definition %s is not in the site %s", p, site.Path)
	}

	// Another default target: the old site is withdrawn at once, the new
	// one follows.
	if err := tl.call(ctx, "workspace/executeCommand", map[string]any{"command": "torchlsp.selectTarget", "arguments": []any{map[string]string{"target": "fix"}}}, nil); err != nil {
		t.Fatal(err)
	}
	raw, idx, err = tl.waitNote(ctx, "torchlsp/site", idx+1, func(json.RawMessage) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &note); err != nil || note.Target != "fix" || note.Path != "" {
		t.Errorf("first torchlsp/site after the switch = %s, want target fix and an empty path", raw)
	}
	raw, _, err = tl.waitNote(ctx, "torchlsp/site", idx+1, func(json.RawMessage) bool { return true })
	if err != nil {
		t.Fatalf("%v\n%s", err, tl.logTail())
	}
	if err := json.Unmarshal(raw, &note); err != nil || note.Target != "fix" || note.Path == "" || note.Path == site.Path {
		t.Errorf("torchlsp/site for the new target = %s", raw)
	}
	if _, err := os.Stat(filepath.Join(note.Path, "torch", "nn", "modules", "linear.py")); err != nil {
		t.Errorf("the fixture target's site: %v", err)
	}
}
