package pyindex

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chainFacts is what scripts/device/chain_facts.py prints: where a running
// torch defines the objects of static chains.
type chainFacts struct {
	Version string      `json:"version"`
	Site    string      `json:"site"`
	Facts   []chainFact `json:"facts"`
}

type chainFact struct {
	Name    string `json:"name"`
	Keyword string `json:"keyword"`
	Kind    string `json:"kind"`
	Rel     string `json:"rel"`  // file relative to the site dir
	Line    int    `json:"line"` // 1-based: the def/class line, or the parameter's
	Col     int    `json:"col"`  // 0-based byte column of a parameter
	Error   string `json:"error"`
}

func (f chainFact) String() string {
	if f.Keyword != "" {
		return f.Name + "(" + f.Keyword + "=)"
	}
	return f.Name
}

// staticAnswer is the index's answer to one fact's question, as hover and
// definition give it: the definition, or for a keyword the parameter of the
// def that runs (a class's __init__).
func staticAnswer(ix *Index, f chainFact) (rel string, line, col int, err error) {
	r, err := ix.Resolve(f.Name)
	if err != nil {
		return "", 0, 0, err
	}
	s := r.Symbol
	if f.Keyword == "" {
		if s.Kind == KindModule {
			return s.File, 1, 0, nil
		}
		return s.File, s.Line + 1, 0, nil
	}
	if s.Kind == KindClass {
		if r, err = ix.Resolve(s.Qualname + ".__init__"); err != nil {
			return "", 0, 0, err
		}
		s = r.Symbol
	}
	p, ok, err := ix.Parameter(s.Path, s.Line, f.Keyword)
	if err != nil {
		return "", 0, 0, err
	}
	if !ok {
		return "", 0, 0, fmt.Errorf("%s at %s:%d has no parameter %s", s.Qualname, s.File, s.Line+1, f.Keyword)
	}
	return s.File, p.Line + 1, p.Col, nil
}

// compareFacts checks the index of site against facts: of the facts the
// interpreter could place, at least the share minRight must be where the
// index says (1: every one; each miss is reported either way).
func compareFacts(t *testing.T, site string, facts chainFacts, minRight float64) {
	t.Helper()
	ix, err := Open(site, "", WithPackages("torch"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if r, err := ix.Resolve("torch.version.__version__"); err != nil || strings.Trim(r.Symbol.Value, `"'`) != facts.Version {
		t.Fatalf("%s holds torch %s (%v), the facts are of %s", site, r.Symbol.Value, err, facts.Version)
	}
	checked, right := 0, 0
	for _, f := range facts.Facts {
		if f.Error != "" {
			t.Logf("%s: not placed by the interpreter (%s)", f, f.Error)
			continue
		}
		if !strings.HasPrefix(f.Rel, "torch/") {
			continue // the standard library or another package: torch's chains are measured
		}
		checked++
		miss := t.Errorf
		if minRight < 1 {
			miss = t.Logf
		}
		rel, line, col, err := staticAnswer(ix, f)
		switch {
		case err != nil:
			miss("%s: the interpreter says %s:%d, the index: %v", f, f.Rel, f.Line, err)
		case rel != f.Rel || line != f.Line || (f.Keyword != "" && col != f.Col):
			miss("%s: the interpreter says %s:%d:%d, the index %s:%d:%d", f, f.Rel, f.Line, f.Col, rel, line, col)
		default:
			right++
		}
	}
	if checked == 0 {
		t.Fatal("the facts place nothing")
	}
	share := float64(right) / float64(checked)
	t.Logf("torch %s: %d of %d static-chain answers agree with the interpreter (%.1f%%)", facts.Version, right, checked, 100*share)
	if share < minRight {
		t.Errorf("%.1f%% agree, want at least %.1f%%", 100*share, 100*minRight)
	}
}

// factModules are the modules whose every public name (and keyword
// parameter) the Debian test asks about: what training code calls.
var factModules = []string{"torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils", "torch.optim", "torch.optim.lr_scheduler", "torch.utils.data", "torch.utils.checkpoint", "torch.cuda", "torch.amp", "torch.autograd"}

// TestChainFacts113 runs the device script with Debian's python3 on its
// torch 1.13 and checks the index of the same install against it: the
// built-in list must agree exactly, every public name of factModules and
// their keyword parameters at 99% or more.
func TestChainFacts113(t *testing.T) {
	t.Parallel()
	requireDebianTorch(t)
	modules := []string{"--keywords"}
	for _, m := range factModules {
		modules = append(modules, "--module", m)
	}
	for _, tt := range []struct {
		name     string
		args     []string
		minRight float64
	}{
		{"built-in", nil, 1},
		{"modules", modules, 0.99},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			compareFacts(t, debianSite, debianFacts(t, tt.args...), tt.minRight)
		})
	}
}

// debianFacts runs the device script with Debian's python3.
func debianFacts(t *testing.T, args ...string) chainFacts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "device", "chain_facts.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, debianPython, append([]string{"-W", "ignore", script}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v", debianPython, script, err)
	}
	var facts chainFacts
	if err := json.Unmarshal(out, &facts); err != nil {
		t.Fatalf("facts: %v", err)
	}
	if facts.Site != debianSite {
		t.Fatalf("the script ran on the torch in %s, not %s", facts.Site, debianSite)
	}
	return facts
}

// TestChainFactsFile checks a copy of a torch tree against the facts the
// device script printed on the machine that has it: TORCHLSP_CHAIN_FACTS
// names the JSON (default: the committed facts of torch 2.11 on the H200
// host, the built-in list and every public name and keyword parameter of
// the modules training code uses; .gz is read compressed),
// TORCHLSP_CHAIN_SITE (default TORCHLSP_TORCH211_SITE) the copy of the
// tree. At least 99% must agree.
func TestChainFactsFile(t *testing.T) {
	t.Parallel()
	paths := []string{os.Getenv("TORCHLSP_CHAIN_FACTS")}
	if paths[0] == "" {
		paths = []string{
			filepath.Join("testdata", "facts", "chain-facts-2.11.0+cu130.json"),
			filepath.Join("testdata", "facts", "chain-modules-2.11.0+cu130.json.gz"),
		}
	}
	site := os.Getenv("TORCHLSP_CHAIN_SITE")
	if site == "" {
		site = os.Getenv("TORCHLSP_TORCH211_SITE")
	}
	if site == "" {
		t.Skip("TORCHLSP_CHAIN_SITE and TORCHLSP_TORCH211_SITE are unset: no copy of the torch tree the facts describe")
	}
	site, err := filepath.EvalSymlinks(site)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			compareFacts(t, site, readFacts(t, path), 0.99)
		})
	}
}

// readFacts reads a facts file, gzip-compressed when its name ends in .gz.
func readFacts(t *testing.T, path string) chainFacts {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer zr.Close()
		r = zr
	}
	var facts chainFacts
	if err := json.NewDecoder(r).Decode(&facts); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return facts
}
