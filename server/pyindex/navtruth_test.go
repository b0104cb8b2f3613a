package pyindex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// The navigation harness: testdata/navtruth.py decides, with Python's own
// ast and symtable and an import resolution over the site dir, where every
// name of a file is defined; DefinitionAt must agree on (nearly) every
// name the truth decides. Set TORCHLSP_NAV_REPORT to a file to get the
// agreement table and every disagreement in Markdown (docs/NAVIGATION.md
// publishes it).

// navBar is the agreement required of every file.
const navBar = 0.99

// truthRecord is one line of navtruth.py's output.
type truthRecord struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	Def  *struct {
		File string `json:"file"`
		Line int    `json:"line"`
		Col  int    `json:"col"`
	} `json:"def"`
	Why string `json:"why"`
}

// runTruth runs navtruth.py on files of site.
func runTruth(t *testing.T, python, site, pkg string, files []string) []truthRecord {
	t.Helper()
	return runNavTruth[truthRecord](t, 5*time.Minute, 1<<20, python, append([]string{"--site", site, "--package", pkg}, files...)...)
}

// runNavTruth runs testdata/navtruth.py with args and decodes the JSON
// object it prints on each line (at most maxLine bytes).
func runNavTruth[T any](t *testing.T, timeout time.Duration, maxLine int, python string, args ...string) []T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("testdata", "navtruth.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, append([]string{"-B", script}, args...)...)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("navtruth.py %v: %v\n%s", args, err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Logf("navtruth.py: %s", stderr.Bytes())
	}
	var recs []T
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<16), maxLine)
	for sc.Scan() {
		var r T
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("navtruth.py printed %q: %v", sc.Bytes(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// navSource opens a file of the index as a Source.
func navSource(t testing.TB, ix *Index, rel string) (Source, syntax.Lines) {
	t.Helper()
	path := filepath.Join(ix.SiteDir(), filepath.FromSlash(rel))
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := syntax.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	module, pkg := moduleOfRel(rel)
	return Source{Module: module, Package: pkg, Path: path, Rel: rel, Table: pyscope.New(tree)}, syntax.NewLines(src)
}

// moduleOfRel is the module a site-relative path holds.
func moduleOfRel(rel string) (string, bool) {
	stem := strings.TrimSuffix(strings.TrimSuffix(rel, ".pyi"), ".py")
	if m, ok := strings.CutSuffix(stem, "/__init__"); ok {
		return strings.ReplaceAll(m, "/", "."), true
	}
	return strings.ReplaceAll(stem, "/", "."), false
}

// navResult is the comparison for one file.
type navResult struct {
	file                   string
	names, decided, agreed int
	beyond                 int // answered where the truth is undecided
	disagreements          []string
	beyondNames            []string // what those answers were
}

func (r navResult) rate() float64 {
	if r.decided == 0 {
		return 1
	}
	return float64(r.agreed) / float64(r.decided)
}

func compareNavigation(t *testing.T, ix *Index, recs []truthRecord) []navResult {
	t.Helper()
	byFile := map[string]*navResult{}
	var order []string
	sources := map[string]Source{}
	lines := map[string]syntax.Lines{}
	for _, rec := range recs {
		res := byFile[rec.File]
		if res == nil {
			res = &navResult{file: rec.File}
			byFile[rec.File] = res
			order = append(order, rec.File)
			sources[rec.File], lines[rec.File] = navSource(t, ix, rec.File)
		}
		src := sources[rec.File]
		res.names++
		off, ok := lines[rec.File].Offset(src.Table.Tree().Src(), syntax.Pos{Line: rec.Line, Col: rec.Col})
		if !ok {
			t.Fatalf("%s:%d:%d is outside the file", rec.File, rec.Line+1, rec.Col+1)
		}
		d, err := ix.DefinitionAt(src, off)
		got := "none"
		if err == nil {
			got = fmt.Sprintf("%s:%d:%d", d.Symbol.File, d.Symbol.Line+1, d.Symbol.Col+1)
		}
		if rec.Def == nil {
			if err == nil {
				res.beyond++
				res.beyondNames = append(res.beyondNames, fmt.Sprintf("%s:%d:%d %s %s: torchlsp %s, Python undecided (%s)",
					rec.File, rec.Line+1, rec.Col+1, rec.Kind, rec.Name, got, rec.Why))
			}
			continue
		}
		res.decided++
		want := fmt.Sprintf("%s:%d:%d", rec.Def.File, rec.Def.Line+1, rec.Def.Col+1)
		if got == want {
			res.agreed++
			continue
		}
		why := ""
		if err != nil {
			why = " (" + err.Error() + ")"
		}
		res.disagreements = append(res.disagreements, fmt.Sprintf("%s:%d:%d %s %s: torchlsp %s%s, Python %s",
			rec.File, rec.Line+1, rec.Col+1, rec.Kind, rec.Name, got, why, want))
	}
	out := make([]navResult, 0, len(order))
	for _, f := range order {
		out = append(out, *byFile[f])
	}
	return out
}

// checkNavigation runs the harness on files of site and holds every file
// to navBar.
func checkNavigation(t *testing.T, site, pkg string, files []string) {
	t.Helper()
	python := debianPython
	if _, err := os.Stat(python); err != nil {
		t.Skip("no " + python)
	}
	ix, err := Open(site, "", WithPackages(pkg))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	recs := runTruth(t, python, site, pkg, files)
	results := compareNavigation(t, ix, recs)
	var report strings.Builder
	fmt.Fprintf(&report, "| file | names | decided | agree | agreement | answered beyond |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&report, "| `%s` | %d | %d | %d | %.2f%% | %d |\n", r.file, r.names, r.decided, r.agreed, 100*r.rate(), r.beyond)
	}
	for _, r := range results {
		for _, d := range r.disagreements {
			fmt.Fprintf(&report, "- %s\n", d)
		}
	}
	for _, r := range results {
		for _, d := range r.beyondNames {
			fmt.Fprintf(&report, "- beyond: %s\n", d)
		}
	}
	t.Log("\n" + report.String())
	if path := os.Getenv("TORCHLSP_NAV_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "## %s\n\n%s\n", t.Name(), report.String())
		f.Close()
	}
	decided := 0
	for _, r := range results {
		decided += r.decided
		if r.rate() < navBar {
			t.Errorf("%s: %d of %d names agree (%.2f%%), want at least %.0f%%", r.file, r.agreed, r.decided, 100*r.rate(), 100*navBar)
		}
	}
	if decided == 0 {
		t.Error("the truth decided no name")
	}
}

func TestNavigationAgreesWithPythonFixture(t *testing.T) {
	t.Parallel()
	site, err := filepath.Abs(filepath.Join("..", "..", "testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(filepath.Join(site, "torch"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".py") || strings.HasSuffix(p, ".pyi")) {
			rel, _ := filepath.Rel(site, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	checkNavigation(t, site, "torch", files)
}

func TestNavigationAgreesWithPythonDebian(t *testing.T) {
	t.Parallel()
	requireDebianTorch(t)
	checkNavigation(t, debianSite, "torch", []string{
		"torch/nn/modules/module.py",
		"torch/_tensor.py",
		"torch/functional.py",
		"torch/nn/functional.py",
	})
}

func TestNavigationAgreesWithPythonTorch211(t *testing.T) {
	t.Parallel()
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	if site == "" {
		t.Skip("TORCHLSP_TORCH211_SITE is unset: it names a site dir holding the torch 2.11 sources")
	}
	checkNavigation(t, site, "torch", []string{
		"torch/_inductor/compile_fx.py",
		"torch/_inductor/cudagraph_trees.py",
		"torch/_inductor/config.py",
		"torch/nn/modules/module.py",
		"torch/_dynamo/eval_frame.py",
	})
}
