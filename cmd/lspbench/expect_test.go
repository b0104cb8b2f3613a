package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSiteRel(t *testing.T) {
	tests := []struct {
		path, top, want string
		ok              bool
	}{
		{"/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", "torch", "torch/nn/modules/linear.py", true},
		{"/opt/torch/.venv/lib/python3.12/site-packages/torch/__init__.py", "torch", "torch/__init__.py", true},
		// The last site directory wins: a venv nested in another's tree.
		{"/a/site-packages/x/lib/dist-packages/torch/a.py", "torch", "torch/a.py", true},
		// A mirror or an unpacked tree has no site directory: the last torch/.
		{"/cache/torchlsp/deb/abc/torch-1.13/site/torch/optim/adamw.py", "torch", "torch/optim/adamw.py", true},
		{"/work/torch211/torch/torch/odd.py", "torch", "torch/odd.py", true},
		{"/usr/lib/python3.11/json/__init__.py", "torch", "", false},
	}
	for _, tt := range tests {
		got, ok := siteRel(tt.path, tt.top)
		if got != tt.want || ok != tt.ok {
			t.Errorf("siteRel(%q, %q) = %q, %v; want %q, %v", tt.path, tt.top, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDefSpan(t *testing.T) {
	lines, err := readLines("testdata/site/torch/layers.py")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		start            int
		wantDef, wantEnd int
		wantErr          string
	}{
		{"decorated function", 9, 11, 16, ""},
		{"class with methods", 19, 19, 26, ""},
		{"method", 22, 22, 23, ""},
		{"assignment, no def", 29, 0, 0, "no def or class line"},
		{"past the end", 400, 0, 0, "past the end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, end, err := defSpan(lines, tt.start)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("defSpan(%d) error = %v, want %q", tt.start, err, tt.wantErr)
				}
				return
			}
			if err != nil || def != tt.wantDef || end != tt.wantEnd {
				t.Fatalf("defSpan(%d) = %d, %d, %v; want %d, %d", tt.start, def, end, err, tt.wantDef, tt.wantEnd)
			}
		})
	}
}

func TestBuildExpectationsFromFacts(t *testing.T) {
	facts, err := whereFromFacts("testdata/facts.json")
	if err != nil {
		t.Fatal(err)
	}
	exp, skipped := buildExpectations(facts, "testdata/site")
	want := map[string]expectation{
		"torch.layers.checkpoint": {Symbol: "torch.layers.checkpoint", Rel: "torch/layers.py", Start: 9, Def: 11, End: 16, Name: "checkpoint"},
		"torch.layers.Linear":     {Symbol: "torch.layers.Linear", Rel: "torch/layers.py", Start: 19, Def: 19, End: 26, Name: "Linear"},
	}
	if len(exp) != len(want) {
		t.Errorf("got %d expectations, want %d: %+v", len(exp), len(want), exp)
	}
	for k, w := range want {
		if exp[k] != w {
			t.Errorf("%s: got %+v, want %+v", k, exp[k], w)
		}
	}
	if len(skipped) != 2 || !strings.Contains(strings.Join(skipped, "\n"), "torch.Tensor (OSError") {
		t.Errorf("skipped = %q, want torch.Tensor and torch.layers.missing", skipped)
	}
}

func TestWhereFromFactsErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"version":"1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{empty, filepath.Join(dir, "absent.json"), "testdata/workspace/train.py"} {
		if _, err := whereFromFacts(path); err == nil {
			t.Errorf("whereFromFacts(%s) succeeded, want an error", path)
		}
	}
}

// TestWhereFromPython asks the real interpreter about standard library
// names, which every python3 has.
func TestWhereFromPython(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := whereFromPython(ctx, python, nil, []string{"json.dumps", "collections.OrderedDict.fromkeys", "json.no_such_name", "no_such_module.x"})
	if err != nil {
		t.Fatal(err)
	}
	w := got["json.dumps"]
	if !strings.HasSuffix(w.File, "/json/__init__.py") || w.Line <= 0 {
		t.Fatalf("json.dumps = %+v", w)
	}
	lines, err := readLines(w.File)
	if err != nil {
		t.Fatal(err)
	}
	def, _, err := defSpan(lines, w.Line)
	if err != nil || !strings.HasPrefix(lines[def-1], "def dumps(") {
		t.Errorf("json.dumps def line %d (%v): %q", def, err, lines[max(def-1, 0)])
	}
	for _, name := range []string{"json.no_such_name", "no_such_module.x"} {
		if got[name].Error == "" {
			t.Errorf("%s: want an error, got %+v", name, got[name])
		}
	}
}

func TestJudge(t *testing.T) {
	site, err := filepath.Abs("testdata/site")
	if err != nil {
		t.Fatal(err)
	}
	py := site + "/torch/layers.py"
	pyi := site + "/torch/layers.pyi"
	ckpt := expectation{Symbol: "torch.layers.checkpoint", Rel: "torch/layers.py", Start: 9, Def: 11, End: 16, Name: "checkpoint"}
	linear := expectation{Symbol: "torch.layers.Linear", Rel: "torch/layers.py", Start: 19, Def: 19, End: 26, Name: "Linear"}
	tests := []struct {
		name                    string
		exp                     expectation
		locs                    []location
		wantStrict, wantLenient bool
	}{
		{"def line", ckpt, []location{{py, 11}}, true, true},
		{"decorator line", ckpt, []location{{py, 9}}, true, true},
		{"inside the body", ckpt, []location{{py, 13}}, false, true},
		{"line before the decorators", ckpt, []location{{py, 8}}, false, false},
		{"stub declaration", ckpt, []location{{pyi, 3}}, false, true},
		{"stub, other line", ckpt, []location{{pyi, 1}}, false, false},
		{"same suffix, other package", ckpt, []location{{"/x/nottorch/layers.py", 11}}, false, false},
		{"mirror path", linear, []location{{"/cache/t/torch-1/site/torch/layers.py", 19}}, true, true},
		{"second location is right", linear, []location{{pyi, 5}, {py, 19}}, false, true},
		{"class stub", linear, []location{{pyi, 5}}, false, true},
		{"no answer", linear, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(tt.exp, tt.locs)
			if v.Strict != tt.wantStrict || v.Lenient != tt.wantLenient {
				t.Fatalf("judge = %+v, want strict %v lenient %v", v, tt.wantStrict, tt.wantLenient)
			}
		})
	}
}

func BenchmarkJudge(b *testing.B) {
	site, _ := filepath.Abs("testdata/site")
	exp := expectation{Rel: "torch/layers.py", Start: 9, Def: 11, End: 16, Name: "checkpoint"}
	locs := []location{{site + "/torch/layers.py", 10}}
	b.ReportAllocs()
	for b.Loop() {
		if !judge(exp, locs).Strict {
			b.Fatal("not strict")
		}
	}
}
