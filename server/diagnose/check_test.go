package diagnose

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// checkCases pairs each fixture with the diagnostics it must produce; the
// fixture's .fixed.py twin must produce none of that code.
var checkCases = []struct {
	file string
	code string
	want int
}{
	{"tl001_mode.py", CodeCudagraphsInThreads, 1},
	{"tl001_autotune.py", CodeCudagraphsInThreads, 1},
	{"tl001_config.py", CodeCudagraphsInThreads, 1},
	{"tl001_env.py", CodeCudagraphsInThreads, 1},
	{"tl002_trees_off.py", CodeTreesOffInThreads, 1},
	{"tl003_config_in_thread.py", CodeConfigInThread, 3},
	{"tl004_unknown.py", CodeUnknownFlag, 5},
	{"tl006_mode_options.py", CodeModeAndOptions, 1},
	{"tl007_type.py", CodeFlagType, 1},
	{"tl009_env_late.py", CodeEnvAfterImport, 1},
	{"tl010_forced.py", CodeEnvForced, 1},
}

func fixedTwin(file string) string { return strings.TrimSuffix(file, ".py") + ".fixed.py" }

func runCheckCases(t *testing.T, s site) {
	for _, tc := range checkCases {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata/check", tc.file)
			ds := check(s, readFile(t, path))
			if got := count(ds, tc.code); got != tc.want {
				t.Errorf("%s: %d × %s, want %d\n%s", tc.file, got, tc.code, tc.want, render(ds))
			}
			fixed := check(s, readFile(t, filepath.Join("testdata/check", fixedTwin(tc.file))))
			if got := count(fixed, tc.code); got != 0 {
				t.Errorf("%s: %d × %s, want none\n%s", fixedTwin(tc.file), got, tc.code, render(fixed))
			}
		})
	}
}

func TestCheckFixture(t *testing.T) { runCheckCases(t, fixture(t)) }

func TestCheckTorch211(t *testing.T) {
	s := torch211(t)
	runCheckCases(t, s)
	// The lines the diagnostics cite are the ones measured on the GPU
	// host's torch 2.11 (0-based here).
	want := map[string][]string{
		"tl001_mode.py": {
			"torch/_inductor/config.py:1510",
			"torch/_inductor/__init__.py:355",
			"torch/_inductor/compile_fx.py:1852",
			"torch/_inductor/cudagraph_trees.py:358",
		},
		"tl006_mode_options.py": {"torch/__init__.py:2711", "torch/__init__.py:2713"},
		"tl002_trees_off.py":    {"torch/_inductor/config.py:1513", "torch/_inductor/compile_fx.py:1852"},
	}
	for file, rel := range want {
		ds := check(s, readFile(t, filepath.Join("testdata/check", file)))
		have := map[string]bool{}
		for _, d := range ds {
			for _, r := range d.Related {
				have[r.File+":"+strconv.Itoa(r.Line)] = true
			}
		}
		for _, r := range rel {
			if !have[r] {
				t.Errorf("%s: no related line %s in\n%s", file, r, render(ds))
			}
		}
	}
}

// On Debian's torch 1.13 (no torch.compile, no config modules) every
// torch.compile gets the one no-torch.compile diagnostic and nothing is
// invented about flags.
func TestCheckDebian(t *testing.T) {
	s := debian(t)
	if s.cat.HasCompile {
		t.Fatalf("Debian's torch %s has torch.compile; this test expects 1.13", s.cat.Version)
	}
	files, err := filepath.Glob("testdata/check/*.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src := readFile(t, f)
		buf := pybuf.Parse(src)
		ds := Check(buf, s.cat, Options{SiteDir: s.dir})
		compiles := len(buf.Calls("torch.compile"))
		if strings.Contains(string(src), "@torch.compile\n") {
			compiles++
		}
		for _, d := range ds {
			if d.Code != CodeNoCompile && d.Code != CodeEnvAfterImport {
				t.Errorf("%s: unexpected %s on torch 1.13: %s", f, d.Code, d.Message)
			}
			if d.Code == CodeNoCompile && !strings.Contains(d.Message, "torch "+s.cat.Version+" on the target has no torch.compile") {
				t.Errorf("%s: message %q does not name the target's version", f, d.Message)
			}
		}
		if got := count(ds, CodeNoCompile); got != compiles {
			t.Errorf("%s: %d × %s, want one per torch.compile (%d)", f, got, CodeNoCompile, compiles)
		}
		for _, r := range FlagRefs(buf, s.cat) {
			if r.Spelling != SpellEnvVar {
				t.Errorf("%s: flag reference %s.%s invented for a torch without config modules", f, r.Module, r.Key)
			}
		}
	}
}

// Aliased flags (Config(alias=...)) and type checks on a tree of this
// package's own, scanned by the real scanner.
func TestCheckAliasSite(t *testing.T) {
	s := scanSite(t, "alias", aliasSite)
	for _, tc := range []struct {
		file, code string
		want       int
	}{
		{"alias.py", CodeFlagAlias, 2},
		{"alias.py", CodeFlagType, 1},
	} {
		ds := check(s, readFile(t, filepath.Join("testdata/check", tc.file)))
		if got := count(ds, tc.code); got != tc.want {
			t.Errorf("%s: %d × %s, want %d\n%s", tc.file, got, tc.code, tc.want, render(ds))
		}
		fixed := check(s, readFile(t, filepath.Join("testdata/check", fixedTwin(tc.file))))
		if got := count(fixed, tc.code); got != 0 {
			t.Errorf("%s: %d × %s, want none\n%s", fixedTwin(tc.file), got, tc.code, render(fixed))
		}
	}
}

// A torch without triton.cudagraphs in its config or its mode table has
// no CUDA graph hazard, whatever the code asks for.
func TestNoCudagraphsInTarget(t *testing.T) {
	s := scanSite(t, "alias", aliasSite)
	for _, f := range []string{"tl001_mode.py", "tl001_autotune.py", "tl001_env.py", "tl002_trees_off.py"} {
		ds := check(s, readFile(t, filepath.Join("testdata/check", f)))
		if n := count(ds, CodeCudagraphsInThreads) + count(ds, CodeTreesOffInThreads); n != 0 {
			t.Errorf("%s: %d CUDA graph diagnostics on a torch without them:\n%s", f, n, render(ds))
		}
	}
}

// The torch 2.11 aliases: cache_size_limit is an alias of recompile_limit.
func TestCheckAlias211(t *testing.T) {
	s := torch211(t)
	src := []byte("import torch._dynamo.config as dc\n\ndc.cache_size_limit = 64\n")
	ds := check(s, src)
	if count(ds, CodeFlagAlias) != 1 {
		t.Fatalf("want one %s:\n%s", CodeFlagAlias, render(ds))
	}
	out, err := applyEdits(src, ds[0].Fixes[0].Edits)
	if err != nil {
		t.Fatal(err)
	}
	if want := "dc.recompile_limit = 64"; !strings.Contains(string(out), want) {
		t.Errorf("fixed text %q lacks %q", out, want)
	}
}

// Each quick fix, applied, leaves valid Python with fewer diagnostics of
// its code.
func TestFixesApply(t *testing.T) {
	sites := []site{fixture(t), scanSite(t, "alias", aliasSite)}
	if os.Getenv("TORCHLSP_TORCH211_SITE") != "" {
		sites = append(sites, torch211(t))
	}
	files, err := filepath.Glob("testdata/check/*.py")
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, s := range sites {
		for _, f := range files {
			src := readFile(t, f)
			ds := check(s, src)
			for _, d := range ds {
				for _, fix := range d.Fixes {
					out, err := applyEdits(src, fix.Edits)
					if err != nil {
						t.Errorf("%s %s: %s %q: %v", s.name, f, d.Code, fix.Title, err)
						continue
					}
					applied++
					if buf := pybuf.Parse(out); buf.HasErrors() {
						t.Errorf("%s %s: %s %q leaves invalid Python:\n%s", s.name, f, d.Code, fix.Title, out)
						continue
					}
					after := check(s, out)
					if count(after, d.Code) >= count(ds, d.Code) {
						t.Errorf("%s %s: %s %q did not remove the diagnostic:\n%s\n%s", s.name, f, d.Code, fix.Title, out, render(after))
					}
				}
			}
		}
	}
	if applied < 10 {
		t.Errorf("only %d fixes applied; the fixtures should offer more", applied)
	}
}

// Related lines point at real lines of the site, and a gate's text is the
// line's text.
func TestRelatedLines(t *testing.T) {
	s := fixture(t)
	files, _ := filepath.Glob("testdata/check/*.py")
	for _, f := range files {
		for _, d := range check(s, readFile(t, f)) {
			for _, r := range d.Related {
				b := readFile(t, filepath.Join(s.dir, filepath.FromSlash(r.File)))
				lines := strings.Split(string(b), "\n")
				if r.Line < 0 || r.Line >= len(lines) || strings.TrimSpace(lines[r.Line]) == "" {
					t.Errorf("%s: %s related %s:%d is not a line of code", f, d.Code, r.File, r.Line)
					continue
				}
				if g, ok := strings.CutPrefix(r.Message, "gate: "); ok && strings.TrimSpace(lines[r.Line]) != g {
					t.Errorf("%s: gate %q, line holds %q", f, g, lines[r.Line])
				}
			}
		}
	}
}

// Golden files hold every diagnostic of every fixture, per torch tree.
func TestGolden(t *testing.T) {
	sites := []site{fixture(t), scanSite(t, "alias", aliasSite)}
	if os.Getenv("TORCHLSP_TORCH211_SITE") != "" {
		sites = append(sites, torch211(t))
	}
	if _, err := os.Stat(filepath.Join(debianSite, "torch")); err == nil {
		sites = append(sites, debian(t))
	}
	files, _ := filepath.Glob("testdata/check/*.py")
	for _, s := range sites {
		var b strings.Builder
		for _, f := range files {
			b.WriteString("== " + filepath.Base(f) + "\n")
			b.WriteString(render(check(s, readFile(t, f))))
		}
		golden := filepath.Join("testdata/golden", s.name+".txt")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if got := b.String(); got != string(want) {
			t.Errorf("%s differs from the golden file %s (go test -update rewrites it):\n%s", s.name, golden, got)
		}
	}
}
