package opimpl

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// runtimeFacts is what scripts/device/op_impl_facts.py prints: the
// registries of a running torch.
type runtimeFacts struct {
	Version  string               `json:"version"`
	Site     string               `json:"site"`
	Inductor bool                 `json:"inductor"`
	Ops      map[string]runtimeOp `json:"ops"`
}

type runtimeOp struct {
	Missing   bool                      `json:"missing"`
	Overloads []string                  `json:"overloads"`
	Tables    map[string][]runtimeEntry `json:"tables"`
	PyImpl    []runtimeEntry            `json:"py_impl"`
	Fallbacks []string                  `json:"fallbacks"`
	Refs      map[string]runtimeEntry   `json:"refs"`
}

type runtimeEntry struct {
	File      string `json:"file"`
	Line      int    `json:"line"` // 1-based
	Qualname  string `json:"qualname"`
	Generic   bool   `json:"generic"`
	Overload  string `json:"overload"`
	Inherited bool   `json:"inherited"`
	Key       string `json:"key"`
	Error     string `json:"error"`
	CIA       bool   `json:"cia"`
}

// fromCIA reports whether Inductor decomposes the op through its C++
// CompositeImplicitAutograd kernel: there is no Python source to find.
// Facts from before the script marked these name the partial instead.
func (e runtimeEntry) fromCIA() bool {
	return e.CIA || strings.Contains(e.Qualname, "_special_op_to_decompose_cia")
}

// tableKinds maps the script's table names to the kinds that fill them.
var tableKinds = map[string][]Kind{
	"meta":                   {KindMeta},
	"decomposition":          {KindDecomposition},
	"pre_autograd":           {KindPreAutograd},
	"inductor_decomposition": {KindInductorDecomposition},
	"lowering":               {KindLowering, KindFallback},
}

// comparison counts how the static table fares against a running torch.
type comparison struct {
	exact   int // same function: file and first line
	generic int // the runtime function is made by a factory; a registration of the op is listed
	regOnly int // the scanner lists the registration but not which function it registers
	missing []string
	wrong   []string
	extra   []string // static registrations the running torch does not have
	// conditional are static-only registrations under an if whose
	// condition the running torch did not meet.
	conditional []string
	checked     int
	refExact    int
	cia         int // decomposed through a C++ kernel: nothing static to find
}

// compare checks every runtime registration of the facts against tab.
func compare(tab *Table, facts *runtimeFacts) comparison {
	var c comparison
	for name, op := range facts.Ops {
		if op.Missing {
			continue
		}
		seen := map[string]bool{} // table/overload pairs the runtime has
		for tname, entries := range op.Tables {
			kinds, ok := tableKinds[tname]
			if !ok {
				continue
			}
			for _, e := range entries {
				if e.Inherited || (tname == "inductor_decomposition" && samePyImpl(op, e)) {
					continue // a copy of the core decomposition or py_impl kernel, checked there
				}
				if e.fromCIA() {
					c.cia++
					continue
				}
				seen[tname+"/"+e.Overload] = true
				c.checked++
				c.match(tab.ForOp(Op{NS: "aten", Name: name, Overload: e.Overload}), kinds, e, tname+" aten."+name+"."+e.Overload)
			}
		}
		for _, e := range op.PyImpl {
			c.checked++
			var cands []Impl
			for _, im := range tab.ForOp(Op{NS: "aten", Name: name, Overload: e.Overload}) {
				if im.Table == e.Key {
					cands = append(cands, im)
				}
			}
			seen["py_impl/"+e.Overload] = true
			c.match(cands, []Kind{KindPyImpl}, e, "py_impl "+e.Key+" aten."+name+"."+e.Overload)
		}
		for ref, e := range op.Refs {
			c.checked++
			im, ok := tab.Ref(ref)
			switch {
			case !ok:
				c.missing = append(c.missing, "ref "+ref)
			case im.Def >= 0 && (im.DefPath != e.File || im.Def+1 != e.Line) && !e.Generic:
				c.wrong = append(c.wrong, "ref "+ref+": static "+im.DefPath+":"+itoa(im.Def+1)+", runtime "+e.File+":"+itoa(e.Line))
			case im.Def >= 0 && !e.Generic:
				c.refExact++
			default:
				c.regOnly++
			}
		}
		// Static registrations of overloads the runtime tables lack.
		for _, im := range tab.ForOp(Op{NS: "aten", Name: name}) {
			tname := tableOf(im.Kind)
			if tname == "" || (tname == "inductor_decomposition" || tname == "lowering") && !facts.Inductor {
				continue
			}
			if (im.Op.Overload != "" && !seen[tname+"/"+im.Op.Overload] && contains(op.Overloads, im.Op.Overload)) ||
				(im.Op.Overload == "" && !seenAny(seen, tname)) {
				what := im.Label() + " " + im.Op.String() + " at " + im.Path + ":" + itoa(im.Line+1)
				if im.Cond != "" {
					c.conditional = append(c.conditional, what+" if "+im.Cond)
				} else {
					c.extra = append(c.extra, what)
				}
			}
		}
	}
	sort.Strings(c.missing)
	sort.Strings(c.wrong)
	sort.Strings(c.extra)
	sort.Strings(c.conditional)
	return c
}

func (c *comparison) match(cands []Impl, kinds []Kind, e runtimeEntry, what string) {
	var ofKind []Impl
	for _, im := range cands {
		for _, k := range kinds {
			if im.Kind == k {
				ofKind = append(ofKind, im)
			}
		}
	}
	if len(ofKind) == 0 {
		c.missing = append(c.missing, what+" ("+e.File+":"+itoa(e.Line)+" "+e.Qualname+")")
		return
	}
	if e.Generic || e.Error != "" {
		c.generic++
		return
	}
	for _, im := range ofKind {
		if im.Def >= 0 && im.DefPath == e.File && im.Def+1 == e.Line {
			c.exact++
			return
		}
	}
	for _, im := range ofKind {
		if im.Def < 0 {
			c.regOnly++
			return
		}
	}
	var got []string
	for _, im := range ofKind {
		got = append(got, im.DefPath+":"+itoa(im.Def+1))
	}
	c.wrong = append(c.wrong, what+": static "+strings.Join(got, ", ")+", runtime "+e.File+":"+itoa(e.Line)+" "+e.Qualname)
}

// samePyImpl reports whether e is the op's py_impl kernel for the same
// overload (facts from before the script marked these inherited).
func samePyImpl(op runtimeOp, e runtimeEntry) bool {
	for _, p := range op.PyImpl {
		if p.Overload == e.Overload && p.File == e.File && p.Line == e.Line {
			return true
		}
	}
	return false
}

func tableOf(k Kind) string {
	for name, kinds := range tableKinds {
		for _, x := range kinds {
			if x == k {
				return name
			}
		}
	}
	return ""
}

func seenAny(seen map[string]bool, table string) bool {
	for k := range seen {
		if strings.HasPrefix(k, table+"/") {
			return true
		}
	}
	return false
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// report fails the test on every runtime registration the table misses or
// places elsewhere, and logs the totals.
func (c comparison) report(t *testing.T) {
	t.Helper()
	t.Logf("checked %d runtime registrations: %d same function and line, %d refs same line, %d by registration (factory-made function), %d registration without function; %d missing, %d wrong, %d static-only; %d decomposed through a C++ CompositeImplicitAutograd kernel, not checked",
		c.checked, c.exact, c.refExact, c.generic, c.regOnly, len(c.missing), len(c.wrong), len(c.extra), c.cia)
	for _, m := range c.missing {
		t.Errorf("missing: %s", m)
	}
	for _, w := range c.wrong {
		t.Errorf("wrong: %s", w)
	}
	for _, x := range c.extra {
		t.Errorf("static only: %s", x)
	}
	for _, x := range c.conditional {
		t.Logf("static only, under a condition this torch did not meet: %s", x)
	}
	if c.checked == 0 {
		t.Error("the facts hold no registrations")
	}
}

// TestAgainstRuntime113 runs the device script with Debian's python3 on its
// torch 1.13 and checks the static table of the same install against it.
func TestAgainstRuntime113(t *testing.T) {
	t.Parallel()
	site := debianSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "device", "op_impl_facts.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, debianPython, script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v", debianPython, script, err)
	}
	var facts runtimeFacts
	if err := json.Unmarshal(out, &facts); err != nil {
		t.Fatalf("facts: %v", err)
	}
	if facts.Site != site {
		t.Fatalf("the script ran on the torch in %s, not %s", facts.Site, site)
	}
	tab, err := Scan(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Version != facts.Version {
		t.Fatalf("table of torch %s, facts of %s", tab.Version, facts.Version)
	}
	compare(tab, &facts).report(t)
}

// TestAgainstRuntimeFacts checks a torch tree against the facts the device
// script printed on the machine that has it: TORCHLSP_OPIMPL_FACTS names the
// JSON (default: the committed facts of torch 2.11 on the H200 host), and
// TORCHLSP_OPIMPL_SITE (default TORCHLSP_TORCH211_SITE) the copy of that
// tree.
func TestAgainstRuntimeFacts(t *testing.T) {
	t.Parallel()
	site := os.Getenv("TORCHLSP_OPIMPL_SITE")
	if site == "" {
		site = os.Getenv("TORCHLSP_TORCH211_SITE")
	}
	if site == "" {
		t.Skip("TORCHLSP_OPIMPL_SITE and TORCHLSP_TORCH211_SITE are unset: no copy of the torch tree the facts describe")
	}
	path := os.Getenv("TORCHLSP_OPIMPL_FACTS")
	if path == "" {
		path = filepath.Join("testdata", "facts-2.11.0+cu130.json")
	}
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("no facts at %s: run scripts/device/op_impl_facts.py on the target and name its output in TORCHLSP_OPIMPL_FACTS", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	var facts runtimeFacts
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tab, err := Scan(context.Background(), site)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Version != facts.Version {
		t.Fatalf("%s holds torch %s, the facts are of %s", site, tab.Version, facts.Version)
	}
	compare(tab, &facts).report(t)
}
