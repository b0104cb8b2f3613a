package gates

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	fixtureSite = "testdata/site"
	debianSite  = "/usr/lib/python3/dist-packages"
	debianPy    = "/usr/bin/python3"
)

func scanFixture(t testing.TB) *Catalog {
	t.Helper()
	cat, err := Scan(context.Background(), fixtureSite, Options{})
	if err != nil {
		t.Fatalf("Scan(%s): %v", fixtureSite, err)
	}
	return cat
}

func needPython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(debianPy); err != nil {
		t.Skipf("%s not installed", debianPy)
	}
}

// runPython runs a testdata script with the site dir on PYTHONPATH and decodes its JSON.
func runPython(t *testing.T, script, site string, out any) {
	t.Helper()
	abs, err := filepath.Abs(site)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPy, filepath.Join("testdata", script), abs)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+abs, "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s output: %v", script, err)
	}
}

// The catalog of every fixture config module equals the keys the Python
// runtime builds when it imports the same files.
func TestFixtureCatalogMatchesPython(t *testing.T) {
	needPython(t)
	cat := scanFixture(t)
	var want map[string][]string
	runPython(t, "dump_config.py", fixtureSite, &want)
	got := map[string][]string{}
	for _, m := range cat.Modules {
		var keys []string
		for _, f := range m.Flags {
			keys = append(keys, f.Key)
		}
		sort.Strings(keys)
		got[m.Name] = keys
	}
	if len(want) != 2 {
		t.Fatalf("python found %d config modules in the fixture, want 2: %v", len(want), want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("catalog keys differ from Python's _config keys\n got: %v\nwant: %v", got, want)
	}
}

func TestFixtureFlags(t *testing.T) {
	cat := scanFixture(t)
	tests := []struct {
		key        string
		line       int // 1-based
		typ        string
		def        string
		doc        string
		envDefault []string
		envForce   []string
		alias      string
		justknob   string
		isConfig   bool
	}{
		{key: "debug", line: 25, typ: "bool", def: "False", doc: "Print extra debug output.\nSecond line of the comment."},
		{key: "verbose_progress", line: 27, typ: "bool", def: "False", doc: "trailing comment documents this one"},
		{key: "max_autotune", line: 29, typ: "bool", def: `os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE") == "1"`,
			doc: "Docstring after the assignment documents max_autotune.", envDefault: []string{"TORCHINDUCTOR_MAX_AUTOTUNE"}},
		{key: "coordinate_descent_tuning", line: 32, typ: "", def: `( os.environ.get("TORCHINDUCTOR_COORDINATE_DESCENT_TUNING") == "1" )`,
			envDefault: []string{"TORCHINDUCTOR_COORDINATE_DESCENT_TUNING"}},
		{key: "fx_graph_remote_cache", line: 36, typ: "Optional[bool]", def: "fx_graph_remote_cache_default()",
			envDefault: []string{"TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE"}},
		{key: "autotune_local_cache", line: 38, typ: "bool", def: "True", isConfig: true,
			justknob: "pytorch/remote_cache:autotune_local_cache", envDefault: []string{"TORCHINDUCTOR_AUTOTUNE_LOCAL_CACHE"},
			envForce: []string{"TORCHINDUCTOR_FORCE_A", "TORCHINDUCTOR_FORCE_B"}},
		{key: "use_static_launcher", line: 45, isConfig: true, alias: "torch._inductor.config.autotune_local_cache"},
		{key: "threads", line: 47, def: `int(os.getenv("TORCHINDUCTOR_THREADS", "-1"))`, envDefault: []string{"TORCHINDUCTOR_THREADS"}},
		{key: "cache_dir", line: 49, def: `os.environ["TORCHINDUCTOR_CACHE_DIR"] if "TORCHINDUCTOR_CACHE_DIR" in os.environ else None`,
			envDefault: []string{"TORCHINDUCTOR_CACHE_DIR"}},
		{key: "_private_but_still_an_entry", line: 51, typ: "dict", def: `{"a": 1}`},
		{key: "ratio", line: 55, typ: "float", def: "0.5"},
		{key: "name_list", line: 56, typ: "list", def: `["a", "b"]`},
		{key: "pair", line: 57, typ: "tuple", def: "(1, 2)"},
		{key: "names", line: 58, typ: "set", def: `{"x"}`},
		{key: "env_limit", line: 60, def: `os.getenv("TORCHINDUCTOR_LIMIT")`},
		{key: "TYPE_CHECKING", line: 4, typ: "bool", def: "False"},
		{key: "platform_flag", line: 70, typ: "str", def: `"posix"`},
		{key: "triton.cudagraphs", line: 88, typ: "bool", def: `os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1"`,
			doc: "Use cudagraphs on output code", envDefault: []string{"TORCHINDUCTOR_CUDAGRAPHS"}},
		{key: "triton.cudagraph_trees", line: 91, typ: "bool", def: "True", doc: "Use cudagraph trees for memory pooling if `cudagraphs` is True"},
		{key: "triton.inner.depth", line: 97, typ: "int", def: "2"},
		{key: "cuda.arch", line: 111, typ: "Optional[str]", def: "None", doc: "CUDA arch to use."},
		{key: "cuda.cutlass_dir", line: 112, typ: "str", def: `"own"`},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			f, ok := cat.Flag(tt.key)
			if !ok {
				t.Fatalf("Flag(%q) not found", tt.key)
			}
			if f.Module != "torch._inductor.config" || f.File != "torch/_inductor/config.py" {
				t.Errorf("module/file = %s %s", f.Module, f.File)
			}
			if f.Line+1 != tt.line {
				t.Errorf("line = %d, want %d", f.Line+1, tt.line)
			}
			if f.Type != tt.typ && tt.typ != "" {
				t.Errorf("type = %q, want %q", f.Type, tt.typ)
			}
			if tt.def != "" && f.Default != tt.def {
				t.Errorf("default = %q, want %q", f.Default, tt.def)
			}
			if f.Doc != tt.doc {
				t.Errorf("doc = %q, want %q", f.Doc, tt.doc)
			}
			if !reflect.DeepEqual(f.EnvDefault, tt.envDefault) || !reflect.DeepEqual(f.EnvForce, tt.envForce) {
				t.Errorf("env = %v / %v, want %v / %v", f.EnvDefault, f.EnvForce, tt.envDefault, tt.envForce)
			}
			if f.Alias != tt.alias || f.Justknob != tt.justknob || f.IsConfig != tt.isConfig {
				t.Errorf("alias/justknob/isConfig = %q %q %v, want %q %q %v", f.Alias, f.Justknob, f.IsConfig, tt.alias, tt.justknob, tt.isConfig)
			}
		})
	}
	// Names install_config_module skips must not be flags.
	for _, k := range []string{"os", "sys", "Callable", "Any", "Optional", "Config", "get_tristate_env", "__all__",
		"__dunder_is_skipped__", "to_delete", "fn_value", "helper_is_not_a_flag", "fx_graph_remote_cache_default",
		"triton.method_is_not_a_flag", "cuda._private_not_inherited", "NotAtRunTime", "triton", "triton.inner"} {
		if _, ok := cat.Flag(k); ok {
			t.Errorf("Flag(%q) found; install_config_module skips it", k)
		}
	}
}

func TestFlagLookup(t *testing.T) {
	cat := scanFixture(t)
	tests := []struct {
		key, want string
		ok        bool
	}{
		{"triton.cudagraph_trees", "torch._inductor.config.triton.cudagraph_trees", true},
		{"torch._inductor.config.triton.cudagraph_trees", "torch._inductor.config.triton.cudagraph_trees", true},
		{"cudagraph_trees", "torch._dynamo.config.cudagraph_trees", true},
		{"torch._dynamo.config.cudagraph_trees", "torch._dynamo.config.cudagraph_trees", true},
		{"triton.cudagraph_tree", "", false},
		{"torch._inductor.cudagraph_trees", "", false},
		{"triton", "", false},
	}
	for _, tt := range tests {
		f, ok := cat.Flag(tt.key)
		if ok != tt.ok || (ok && f.FullKey() != tt.want) {
			got := ""
			if f != nil {
				got = f.FullKey()
			}
			t.Errorf("Flag(%q) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
	if got := cat.Suggest("triton.cudagraph_tree"); len(got) == 0 || got[0] != "triton.cudagraph_trees" {
		t.Errorf("Suggest(triton.cudagraph_tree) = %v", got)
	}
	if got := cat.Suggest("torch._inductor.config.max_autotun"); len(got) == 0 || got[0] != "max_autotune" {
		t.Errorf("Suggest(max_autotun) = %v", got)
	}
	if got := cat.Suggest("zzzzzzzzzzzzzzzzzzzzzz"); len(got) != 0 {
		t.Errorf("Suggest(nonsense) = %v, want none", got)
	}
	envs := cat.FlagForEnv("TORCHINDUCTOR_CUDAGRAPHS")
	if len(envs) != 1 || envs[0].Key != "triton.cudagraphs" {
		t.Errorf("FlagForEnv(TORCHINDUCTOR_CUDAGRAPHS) = %v", envs)
	}
	if envs := cat.FlagForEnv("TORCHINDUCTOR_FORCE_B"); len(envs) != 1 || envs[0].Key != "autotune_local_cache" {
		t.Errorf("FlagForEnv(TORCHINDUCTOR_FORCE_B) = %v", envs)
	}
	if got := cat.ModuleNames(); !reflect.DeepEqual(got, []string{"torch._dynamo.config", "torch._inductor.config"}) {
		t.Errorf("ModuleNames = %v", got)
	}
}

func readExpectedSites(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("testdata/expected_sites.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func siteLines(cat *Catalog) []string {
	var out []string
	for k, ss := range cat.SiteMap {
		for _, s := range ss {
			out = append(out, formatSiteLine(k, s))
		}
	}
	sort.Strings(out)
	return out
}

// The fixture's gate sites equal the hand-checked list, with the prefilter
// and without it.
func TestFixtureSites(t *testing.T) {
	want := readExpectedSites(t)
	sort.Strings(want)
	for _, opts := range []Options{{}, {NoPrefilter: true}, {Workers: 1}} {
		cat, err := Scan(context.Background(), fixtureSite, opts)
		if err != nil {
			t.Fatal(err)
		}
		got := siteLines(cat)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("opts %+v: sites differ\n got:\n%s\nwant:\n%s", opts, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestSitesOfCudagraphTrees(t *testing.T) {
	cat := scanFixture(t)
	var got []string
	for _, s := range cat.Sites("triton.cudagraph_trees") {
		if s.Kind == KindRead {
			got = append(got, s.File+":"+fmtInt(s.Line+1))
		}
	}
	want := []string{"torch/_inductor/compile_fx.py:15", "torch/_inductor/compile_fx.py:20", "torch/_inductor/compile_fx.py:24",
		"torch/_inductor/compile_fx.py:27", "torch/_inductor/output_code.py:5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reads of triton.cudagraph_trees = %v, want %v", got, want)
	}
}

func fmtInt(i int) string { return strconv.Itoa(i) }

func TestModes(t *testing.T) {
	cat := scanFixture(t)
	if !cat.HasCompile {
		t.Fatal("HasCompile = false for the fixture")
	}
	want := map[string]map[string]string{
		"default":                    {},
		"lite":                       {"fallback_by_default": "True", "use_dce": "False"},
		"reduce-overhead":            {"triton.cudagraphs": "True"},
		"max-autotune-no-cudagraphs": {"max_autotune": "True", "coordinate_descent_tuning": "True"},
		"max-autotune":               {"max_autotune": "True", "triton.cudagraphs": "True", "coordinate_descent_tuning": "True"},
	}
	if !reflect.DeepEqual(cat.Modes, want) {
		t.Errorf("Modes = %v\nwant %v", cat.Modes, want)
	}
	for _, k := range cat.CompileOptions {
		if f, _ := cat.Flag("torch._inductor.config." + k); f == nil || f.Alias != "" {
			t.Errorf("CompileOptions has %q (alias or unknown)", k)
		}
	}
	m, _ := cat.Module("torch._inductor.config")
	if len(cat.CompileOptions) != len(m.Flags)-1 {
		t.Errorf("CompileOptions has %d keys, want %d (all but the one alias)", len(cat.CompileOptions), len(m.Flags)-1)
	}
	if cat.Version != "9.9.0+fixture" {
		t.Errorf("Version = %q", cat.Version)
	}
}

func TestFormatGates(t *testing.T) {
	cat := scanFixture(t)
	var b bytes.Buffer
	if err := FormatGates(&b, cat, "triton.cudagraph_trees"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"torch._inductor.config.triton.cudagraph_trees\n",
		"  defined torch/_inductor/config.py:91:5  type bool  default True\n",
		"torch/_inductor/compile_fx.py:15:8  if config.triton.cudagraph_trees:\n",
		"torch/_inductor/output_code.py:5:24  if is_backward and ic.triton.cudagraph_trees:\n",
		"torch/_inductor/compile_fx.py:50:5  config.triton.cudagraph_trees = False [write]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("FormatGates output lacks %q:\n%s", want, out)
		}
	}
	err := FormatGates(&b, cat, "triton.cudagraph_tree")
	if err == nil || !strings.Contains(err.Error(), "did you mean triton.cudagraph_trees") {
		t.Errorf("FormatGates(unknown) error = %v", err)
	}
}

// Debian's torch 1.13 predates config modules and torch.compile: the
// scanner must say so, agreeing with what that torch reports about itself.
func TestDebianTorch(t *testing.T) {
	needPython(t)
	if _, err := os.Stat(filepath.Join(debianSite, "torch")); err != nil {
		t.Skip("python3-torch not installed")
	}
	var facts struct {
		Version     string   `json:"version"`
		HasCompile  bool     `json:"has_compile"`
		ConfigFiles []string `json:"config_files"`
	}
	runPython(t, "debian_facts.py", debianSite, &facts)
	cat, err := Scan(context.Background(), debianSite, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cat.Version != facts.Version {
		t.Errorf("Version = %q, torch says %q", cat.Version, facts.Version)
	}
	if cat.HasCompile != facts.HasCompile {
		t.Errorf("HasCompile = %v, torch says %v", cat.HasCompile, facts.HasCompile)
	}
	var files []string
	for _, m := range cat.Modules {
		files = append(files, m.File)
	}
	if len(files) != len(facts.ConfigFiles) || (len(files) > 0 && !reflect.DeepEqual(files, facts.ConfigFiles)) {
		t.Errorf("config modules = %v, python's ast finds %v", files, facts.ConfigFiles)
	}
	if len(cat.Modes) != 0 || len(cat.SiteMap) != 0 {
		t.Errorf("modes %v, %d flags with sites; want none", cat.Modes, len(cat.SiteMap))
	}
}

// TORCHLSP_TORCH211_SITE points at a copy of torch 2.11's site dir and
// TORCHLSP_TORCH211_CONFIG at the JSON that torch wrote about its config
// modules (modules → keys); both are outside the repository.
func TestTorch211(t *testing.T) {
	site, js := os.Getenv("TORCHLSP_TORCH211_SITE"), os.Getenv("TORCHLSP_TORCH211_CONFIG")
	if site == "" || js == "" {
		t.Skip("TORCHLSP_TORCH211_SITE / TORCHLSP_TORCH211_CONFIG not set")
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var dump struct {
		Modules map[string]struct {
			Keys    []string `json:"keys"`
			Entries map[string]struct {
				Alias    *string `json:"alias"`
				Justknob *string `json:"justknob"`
			} `json:"entries"`
		} `json:"modules"`
		Options []string `json:"options"`
	}
	if err := json.Unmarshal(b, &dump); err != nil {
		t.Fatal(err)
	}
	cat, err := Scan(context.Background(), site, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Modules) != len(dump.Modules) {
		t.Errorf("%d config modules, torch has %d", len(cat.Modules), len(dump.Modules))
	}
	for name, m := range dump.Modules {
		mod, ok := cat.Module(name)
		if !ok {
			t.Errorf("config module %s missing", name)
			continue
		}
		got := map[string]*Flag{}
		for _, f := range mod.Flags {
			got[f.Key] = f
		}
		for _, k := range m.Keys {
			f, ok := got[k]
			if !ok {
				t.Errorf("%s: key %s missing", name, k)
				continue
			}
			e := m.Entries[k]
			if e.Alias != nil && *e.Alias != f.Alias {
				t.Errorf("%s.%s alias = %q, torch %q", name, k, f.Alias, *e.Alias)
			}
			if e.Justknob != nil && *e.Justknob != f.Justknob {
				t.Errorf("%s.%s justknob = %q, torch %q", name, k, f.Justknob, *e.Justknob)
			}
		}
		if len(got) != len(m.Keys) {
			t.Errorf("%s: %d keys, torch has %d", name, len(got), len(m.Keys))
		}
	}
	opts := append([]string(nil), cat.CompileOptions...)
	want := append([]string(nil), dump.Options...)
	sort.Strings(opts)
	sort.Strings(want)
	if !reflect.DeepEqual(opts, want) {
		t.Errorf("CompileOptions (%d) differ from torch._inductor.list_options() (%d)", len(opts), len(want))
	}
	var reads []string
	for _, s := range cat.Sites("triton.cudagraph_trees") {
		if s.Kind == KindRead {
			reads = append(reads, s.File+":"+fmtInt(s.Line+1))
		}
	}
	wantReads := []string{"torch/_inductor/compile_fx.py:1853", "torch/_inductor/cudagraph_utils.py:140",
		"torch/_inductor/cudagraph_utils.py:236", "torch/_inductor/output_code.py:160", "torch/_inductor/output_code.py:183"}
	if !reflect.DeepEqual(reads, wantReads) {
		t.Errorf("reads of triton.cudagraph_trees = %v, want %v", reads, wantReads)
	}
	full, err := Scan(context.Background(), site, Options{NoPrefilter: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(siteLines(full), siteLines(cat)) {
		t.Error("prefiltered scan found other sites than the full parse")
	}
}
