package diagnose

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

// Data-driven cases: each testdata/cases/*.txtar holds Python files and
// says, in the files' own comments, which diagnostics each line must
// start. The archive's header names the codes it is about and the torch
// trees it runs on:
//
//	codes: TL001 TL014
//	sites: fixture torch211 fixed-tls
//	-- in_place.py --
//	model.compile(mode="reduce-overhead")  # want: TL001
//	x = f()  # want[torch211 fixed-tls]: TL014
//
// "# want: CODE..." holds on every site of the header; "# want[SITE...]:"
// only on those. Every diagnostic of the header's codes must be wanted on
// its line, and every want met. Each such diagnostic's preferred fix is
// applied: the result must parse and have fewer diagnostics of its code.
// On Debian's torch 1.13 (no torch.compile) every file gets nothing but
// TL005 and TL009.

var wantComment = regexp.MustCompile(`#\s*want(?:\[([^\]]*)\])?:\s*([A-Z0-9 ]+)`)

type caseArchive struct {
	path  string
	codes []string
	sites []string
	files []archiveFile
}

type archiveFile struct{ name, data string }

var fileMarker = regexp.MustCompile(`(?m)^-- (.+) --$`)

func readCases(t *testing.T) []caseArchive {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "cases", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no case archives: %v", err)
	}
	var out []caseArchive
	for _, p := range paths {
		data := string(readFile(t, p))
		a := caseArchive{path: p}
		locs := fileMarker.FindAllStringSubmatchIndex(data, -1)
		if len(locs) == 0 {
			t.Fatalf("%s: no files", p)
		}
		for _, line := range strings.Split(data[:locs[0][0]], "\n") {
			if v, ok := strings.CutPrefix(line, "codes:"); ok {
				a.codes = strings.Fields(v)
			}
			if v, ok := strings.CutPrefix(line, "sites:"); ok {
				a.sites = strings.Fields(v)
			}
		}
		if len(a.codes) == 0 || len(a.sites) == 0 {
			t.Fatalf("%s: the header must name codes: and sites:", p)
		}
		for i, l := range locs {
			end := len(data)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			a.files = append(a.files, archiveFile{name: data[l[2]:l[3]], data: data[min(l[1]+1, end):end]})
		}
		out = append(out, a)
	}
	return out
}

// wants reads the want comments of a file for one site: line → codes.
func wants(src, siteName string) map[int][]string {
	out := map[int][]string{}
	for i, line := range strings.Split(src, "\n") {
		for _, m := range wantComment.FindAllStringSubmatch(line, -1) {
			if m[1] != "" && !slices.Contains(strings.Fields(m[1]), siteName) {
				continue
			}
			out[i] = append(out[i], strings.Fields(m[2])...)
		}
	}
	return out
}

// needs211 reports whether a site is made from the torch 2.11 tree, which
// the tests have only with TORCHLSP_TORCH211_SITE.
func needs211(name string) bool { return strings.HasPrefix(name, "torch211") }

// have211 reports whether the torch 2.11 tree is there to make sites from.
func have211() bool {
	dir := os.Getenv("TORCHLSP_TORCH211_SITE")
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "torch", "_inductor", "config.py"))
	return err == nil
}

// siteMakers are the torch trees a case archive may name.
var siteMakers = map[string]func(t *testing.T) site{
	"fixture":  func(t *testing.T) site { return fixture(t) },
	"torch211": func(t *testing.T) site { return torch211(t) },
	"alias":    func(t *testing.T) site { return scanSite(t, "alias", aliasSite) },
}

func TestCases(t *testing.T) {
	t.Parallel()
	archives := readCases(t)
	// Each tree is made once, in this test's temporary directory, which
	// lives until every subtest has ended.
	sites := map[string]site{}
	for _, a := range archives {
		for _, name := range a.sites {
			if _, ok := sites[name]; ok || needs211(name) && !have211() {
				continue
			}
			s := siteMakers[name](t)
			s.name = name
			sites[name] = s
		}
	}
	for _, a := range archives {
		t.Run(strings.TrimSuffix(filepath.Base(a.path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			for _, siteName := range a.sites {
				t.Run(siteName, func(t *testing.T) {
					s, ok := sites[siteName]
					if !ok {
						t.Skip("TORCHLSP_TORCH211_SITE not set")
					}
					var golden strings.Builder
					for _, f := range a.files {
						golden.WriteString("== " + f.name + "\n")
						golden.WriteString(checkCase(t, s, a.codes, f))
					}
					compareGolden(t, filepath.Join("testdata", "cases", "golden",
						strings.TrimSuffix(filepath.Base(a.path), ".txtar")+"."+siteName+".txt"), golden.String())
				})
			}
		})
	}
}

// checkCase checks one file of an archive on one site and returns its
// diagnostics of the archive's codes, rendered for the golden file.
func checkCase(t *testing.T, s site, codes []string, f archiveFile) string {
	t.Helper()
	src := []byte(f.data)
	if buf := pybuf.Parse(src); buf.HasErrors() {
		t.Errorf("%s: not valid Python", f.name)
		return ""
	}
	ds := check(s, src)
	var mine []Diagnostic
	for _, d := range ds {
		if slices.Contains(codes, codeOf(d.Code)) {
			mine = append(mine, d)
		}
	}
	want := wants(f.data, s.name)
	got := map[int][]string{}
	for _, d := range ds {
		code := codeOf(d.Code)
		if !slices.Contains(codes, code) {
			continue
		}
		got[d.Span.Start.Line] = append(got[d.Span.Start.Line], code)
	}
	lines := map[int]bool{}
	for l := range want {
		lines[l] = true
	}
	for l := range got {
		lines[l] = true
	}
	var ls []int
	for l := range lines {
		ls = append(ls, l)
	}
	sort.Ints(ls)
	for _, l := range ls {
		w, g := append([]string(nil), want[l]...), append([]string(nil), got[l]...)
		sort.Strings(w)
		sort.Strings(g)
		if strings.Join(w, " ") != strings.Join(g, " ") {
			t.Errorf("%s:%d: got %v, want %v\n%s", f.name, l+1, g, w, render(ds))
		}
	}
	for _, d := range ds {
		if !slices.Contains(codes, codeOf(d.Code)) {
			continue
		}
		for _, fix := range d.Fixes {
			if !fix.Preferred {
				continue
			}
			out, err := applyEdits(src, fix.Edits)
			if err != nil {
				t.Errorf("%s: %s %q: %v", f.name, d.Code, fix.Title, err)
				continue
			}
			if buf := pybuf.Parse(out); buf.HasErrors() {
				t.Errorf("%s: %s %q leaves invalid Python:\n%s", f.name, d.Code, fix.Title, out)
				continue
			}
			if after := check(s, out); count(after, d.Code) >= count(ds, d.Code) {
				t.Errorf("%s: %s %q did not remove the diagnostic:\n%s\n%s", f.name, d.Code, fix.Title, out, render(after))
			}
		}
	}
	return render(mine)
}

// compareGolden compares got with the golden file at path, or rewrites it
// under -update.
func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("differs from the golden file %s (go test -update rewrites it):\n%s", path, got)
	}
}

// codeOf is the "TL001" of "TL001 cudagraphs-in-threads".
func codeOf(code string) string {
	c, _, _ := strings.Cut(code, " ")
	return c
}

// On Debian's torch 1.13 the case files get nothing but TL005 (one per
// torch.compile call) and TL009.
func TestCasesDebian(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(debianSite, "torch", "__init__.py")); err != nil {
		t.Skipf("Debian's python3-torch not installed: %v", err)
	}
	s := debian(t)
	for _, a := range readCases(t) {
		for _, f := range a.files {
			for _, d := range check(s, []byte(f.data)) {
				if c := codeOf(d.Code); c != "TL005" && c != "TL009" {
					t.Errorf("%s %s: %s on torch %s: %s", filepath.Base(a.path), f.name, d.Code, s.cat.Version, d.Message)
				}
			}
		}
	}
}

// The archives hold what their headers say: every named site exists, and
// every file wants something or is a negative case on purpose.
func TestCasesWellFormed(t *testing.T) {
	t.Parallel()
	for _, a := range readCases(t) {
		for _, sn := range a.sites {
			if _, ok := siteMakers[sn]; !ok {
				t.Errorf("%s: unknown site %q", a.path, sn)
			}
		}
		for _, f := range a.files {
			if !strings.HasSuffix(f.name, ".py") {
				t.Errorf("%s: section %q is not a .py file", a.path, f.name)
			}
			for _, m := range wantComment.FindAllStringSubmatch(f.data, -1) {
				for _, c := range strings.Fields(m[2]) {
					if !slices.Contains(a.codes, c) {
						t.Errorf("%s %s: want %s, not among the header's codes %v", a.path, f.name, c, a.codes)
					}
				}
			}
		}
	}
}
