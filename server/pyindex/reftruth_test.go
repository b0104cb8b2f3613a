package pyindex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The reference harness: navtruth.py --refs decides, with Python's own
// ast and symtable, every occurrence in a package whose definition is a
// top-level function of one file (searching the names that can name it:
// its own, and those imports with "as" and rebindings give it); the
// index's References must find the same places. TORCHLSP_NAV_REPORT
// appends the table (docs/NAVIGATION.md publishes it).

// refTruthRecord is one line of navtruth.py --refs.
type refTruthRecord struct {
	Def  truthSite   `json:"def"`
	Name string      `json:"name"`
	Refs []truthSite `json:"refs"`
}

type truthSite struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

func (s truthSite) String() string { return fmt.Sprintf("%s:%d:%d", s.File, s.Line+1, s.Col+1) }

func runRefTruth(t *testing.T, python, site, pkg, file string) []refTruthRecord {
	t.Helper()
	return runNavTruth[refTruthRecord](t, 20*time.Minute, 1<<24, python, "--site", site, "--package", pkg, "--refs", file)
}

// checkReferences compares the references of every top-level function
// of file with the truth; every function must match exactly.
func checkReferences(t *testing.T, site, pkg, file string) {
	t.Helper()
	python := debianPython
	if _, err := os.Stat(python); err != nil {
		t.Skip("no " + python)
	}
	ix, err := Open(site, filepath.Join(t.TempDir(), "index.bin"), WithPackages(pkg))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := runRefTruth(t, python, site, pkg, file)
	if len(recs) == 0 {
		t.Fatalf("%s: the truth found no top-level function", file)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "| function | references (Python) | torchlsp | agree | only Python | only torchlsp |\n|---|---:|---:|---:|---:|---:|\n")
	var diffs []string
	total, agreed := 0, 0
	for _, rec := range recs {
		sym := Symbol{Name: rec.Name, File: rec.Def.File, Line: rec.Def.Line, Col: rec.Def.Col, Qualname: rec.Name}
		res, err := ix.References(context.Background(), sym, ReferenceOptions{})
		if err != nil {
			t.Fatalf("references of %s: %v", rec.Name, err)
		}
		var got, want []string
		for _, r := range res.Refs {
			got = append(got, truthSite{r.File, r.Span.Start.Line, r.Span.Start.Col}.String())
		}
		for _, r := range rec.Refs {
			want = append(want, r.String())
		}
		slices.Sort(got)
		slices.Sort(want)
		both, onlyPy, onlyUs := compareSets(want, got)
		total += len(want)
		agreed += both
		fmt.Fprintf(&report, "| `%s` | %d | %d | %d | %d | %d |\n", rec.Name, len(want), len(got), both, len(onlyPy), len(onlyUs))
		for _, s := range onlyPy {
			diffs = append(diffs, fmt.Sprintf("- %s: %s found by Python only", rec.Name, s))
		}
		for _, s := range onlyUs {
			diffs = append(diffs, fmt.Sprintf("- %s: %s found by torchlsp only", rec.Name, s))
		}
	}
	fmt.Fprintf(&report, "\n%d functions, %d references, %d found alike\n", len(recs), total, agreed)
	for _, d := range diffs {
		report.WriteString(d + "\n")
	}
	t.Log("\n" + report.String())
	if path := os.Getenv("TORCHLSP_NAV_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "## %s (%s)\n\n%s\n", t.Name(), file, report.String())
		f.Close()
	}
	if len(diffs) > 0 {
		t.Errorf("%s: %d references differ from Python's", file, len(diffs))
	}
	if total == 0 {
		t.Error("the truth found no reference")
	}
}

// compareSets compares two sorted lists.
func compareSets(want, got []string) (both int, onlyWant, onlyGot []string) {
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || i < len(want) && want[i] < got[j]:
			onlyWant = append(onlyWant, want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			onlyGot = append(onlyGot, got[j])
			j++
		default:
			both++
			i++
			j++
		}
	}
	return both, onlyWant, onlyGot
}

func TestReferencesAgreeWithPythonFixture(t *testing.T) {
	t.Parallel()
	site, err := filepath.Abs(xrefSite)
	if err != nil {
		t.Fatal(err)
	}
	checkReferences(t, site, "xr", "xr/core.py")
}

func TestReferencesAgreeWithPythonDebian(t *testing.T) {
	if testing.Short() {
		t.Skip("decides the references over Debian's torch")
	}
	t.Parallel()
	requireDebianTorch(t)
	checkReferences(t, debianSite, "torch", "torch/_tensor_str.py")
}

func TestReferencesAgreeWithPythonTorch211(t *testing.T) {
	t.Parallel()
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	if site == "" {
		t.Skip("TORCHLSP_TORCH211_SITE is unset: it names a site dir holding the torch 2.11 sources")
	}
	checkReferences(t, site, "torch", "torch/_inductor/cudagraph_trees.py")
}
