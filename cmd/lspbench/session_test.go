package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

func TestParseLocations(t *testing.T) {
	tests := []struct {
		name, raw string
		want      []location
		wantErr   bool
	}{
		{"null", `null`, nil, false},
		{"empty", ``, nil, false},
		{"one", `{"uri":"file:///a/torch/x.py","range":{"start":{"line":4,"character":0}}}`, []location{{"/a/torch/x.py", 5}}, false},
		{"list", `[{"uri":"file:///a/b%20c.py","range":{"start":{"line":0,"character":0}}},{"uri":"file:///d.pyi","range":{"start":{"line":9,"character":2}}}]`,
			[]location{{"/a/b c.py", 1}, {"/d.pyi", 10}}, false},
		{"links", `[{"targetUri":"file:///t.py","targetRange":{"start":{"line":1}},"targetSelectionRange":{"start":{"line":3,"character":4}}}]`, []location{{"/t.py", 4}}, false},
		{"empty list", `[]`, []location{}, false},
		{"not a file", `{"uri":"untitled:1","range":{"start":{"line":0}}}`, nil, true},
		{"no range", `{"uri":"file:///x.py"}`, nil, true},
		{"garbage", `{"uri":`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLocations(json.RawMessage(tt.raw))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && (len(got) != len(tt.want) || (len(got) > 0 && !equalLocs(got, tt.want))) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func equalLocs(a, b []location) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestHasText(t *testing.T) {
	tests := []struct {
		raw  string
		want bool
	}{
		{`{"kind":"markdown","value":"Linear(in, out)"}`, true},
		{`{"kind":"markdown","value":"  "}`, false},
		{`"plain"`, true},
		{`[{"language":"python","value":""},"x"]`, true},
		{`[]`, false},
		{`null`, false},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.raw), &v); err != nil {
			t.Fatal(err)
		}
		if got := hasText(v); got != tt.want {
			t.Errorf("hasText(%s) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}

func TestSection(t *testing.T) {
	var tree map[string]any
	json.Unmarshal([]byte(`{"python":{"pythonPath":"/p","analysis":{"extraPaths":["/x"]}},"torchlsp":{"defaultTarget":"deb"}}`), &tree)
	tests := []struct {
		name string
		want string
	}{
		{"python.pythonPath", `"/p"`},
		{"python.analysis", `{"extraPaths":["/x"]}`},
		{"torchlsp", `{"defaultTarget":"deb"}`},
		{"python.pythonPath.deeper", `null`},
		{"absent", `null`},
	}
	for _, tt := range tests {
		got, _ := json.Marshal(section(tree, tt.name))
		if string(got) != tt.want {
			t.Errorf("section(%q) = %s, want %s", tt.name, got, tt.want)
		}
	}
	if section(nil, "") != nil {
		t.Error("section(nil, \"\") is not nil")
	}
}

func TestStats(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := stats(ds)
	want := methodStats{N: 100, P50ms: 50, P99ms: 99, MaxMs: 100}
	if got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	if got := stats([]time.Duration{3 * time.Millisecond}); got.P50ms != 3 || got.P99ms != 3 {
		t.Errorf("one sample: %+v", got)
	}
	if got := stats(nil); got != (methodStats{}) {
		t.Errorf("no samples: %+v", got)
	}
}

// TestSessionWithRealServers drives real language servers (Debian's pylsp
// with jedi, and pyright from npm as scripts/setup.sh --test installs it)
// through the whole script, reading Debian's torch, and checks that their
// answers are scored, timed and measured, whatever form their initialize
// reply takes (pyright's textDocumentSync is a number).
func TestSessionWithRealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real language servers and imports torch")
	}
	python := "/usr/bin/python3"
	if exec.Command(python, "-c", "import torch").Run() != nil {
		t.Skip("/usr/bin/python3 cannot import torch")
	}
	for _, srv := range []struct {
		name      string
		argv      func() ([]string, error)
		settings  string
		refsFirst bool
	}{
		{"pylsp", func() ([]string, error) {
			p, err := exec.LookPath("pylsp")
			return []string{p}, err
		}, "", false},
		{"pyright", func() ([]string, error) { return lsptest.NPMServer("pyright") }, `{"python":{"pythonPath":"` + python + `"}}`, true},
	} {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			argv, err := srv.argv()
			if err != nil {
				t.Skipf("%s is not installed (scripts/setup.sh --test installs it): %v", srv.name, err)
			}
			sessionWith(t, srv.name, argv, srv.settings, python, srv.refsFirst)
		})
	}
}

// sessionWith runs one session of the server; with refsFirst its first
// request is references, polled (-refs-first).
func sessionWith(t *testing.T, name string, argv []string, settings, python string, refsFirst bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	queries := []query{defaultQueries[0], defaultQueries[1], {"torch.compile", "torch.compile(model", "compile"}}
	var stdout, stderr bytes.Buffer
	out := t.TempDir() + "/r.jsonl"
	var raw json.RawMessage
	if settings != "" {
		raw = json.RawMessage(settings)
	}
	err := runOne(ctx, sessionConfig{
		Name: name, Tree: "deb", Command: argv, Workspace: "testdata/workspace", Settings: raw,
		Queries: queries, Probe: "torch.nn.Linear", Rounds: 2, FirstWait: 2 * time.Minute,
		CallTimeout: time.Minute, RSSEvery: 50 * time.Millisecond, RefsFirst: refsFirst,
	}, python, nil, "", "", out, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	rs, err := readResults(out)
	if err != nil || len(rs) != 1 {
		t.Fatalf("results: %v, %d", err, len(rs))
	}
	r := rs[0]
	// torch 1.13 has no torch.compile: two of three symbols are scored,
	// and both servers find nn.Linear's class.
	if r.Scored != 2 || r.Lenient != 2 {
		t.Errorf("scored %d strict %d lenient %d; verdicts %+v", r.Scored, r.Strict, r.Lenient, r.Verdicts)
	}
	if r.FirstCorrect <= 0 || r.FirstCorrect < r.InitializeMs {
		t.Errorf("first correct %v ms, initialize %v ms", r.FirstCorrect, r.InitializeMs)
	}
	if r.Hover.N != 2*len(queries) || r.Definition.N != 2*len(queries) || r.Definition.P50ms <= 0 {
		t.Errorf("hover %+v definition %+v", r.Hover, r.Definition)
	}
	if r.RSS.RootKB < 10<<10 || r.RSS.TreeKB < r.RSS.RootKB {
		t.Errorf("rss %+v", r.RSS)
	}
	if !strings.Contains(stdout.String(), name+" [deb]: correct ") {
		t.Errorf("summary %q", stdout.String())
	}

	if refsFirst && (r.FirstRefs < r.InitializeMs || r.FirstRefsCount == 0 || r.FirstRefsPolls == 0 || r.FirstCorrect < r.FirstRefs) {
		t.Errorf("first references %v ms (%d places, %d requests), initialize %v ms, first correct definition %v ms",
			r.FirstRefs, r.FirstRefsCount, r.FirstRefsPolls, r.InitializeMs, r.FirstCorrect)
	}
	if !refsFirst && r.FirstRefsPolls != 0 {
		t.Errorf("references asked first without -refs-first: %d requests", r.FirstRefsPolls)
	}

	var md bytes.Buffer
	writeReport(&md, "deb", "scripts/bench.sh", true, rs)
	wants := []string{"| " + name + " | deb | ", "scripts/bench.sh", "`torch.nn.Linear` | "}
	if refsFirst {
		wants = append(wants, "| "+name+" | "+fmtMs(r.FirstRefs)+" | ", "first references after initialize")
	}
	for _, want := range wants {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

func TestRunFlags(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "usage"},
		{[]string{"bogus"}, 2, "unknown command"},
		{[]string{"run"}, 2, "no server command"},
		{[]string{"run", "-settings", "{", "--", "x"}, 1, "-settings: not valid JSON"},
		{[]string{"run", "-init-options", "@/no/such/file", "--", "x"}, 1, "-init-options"},
		{[]string{"report"}, 1, "no results"},
		{[]string{"run", "-skip", "torch.nope", "--", "x"}, 2, "unknown symbols torch.nope"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if code := run(ctx, tt.args, &stdout, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("run(%q) = %d, %q; want %d, %q", tt.args, code, stderr.String(), tt.code, tt.msg)
		}
	}
}
