package repro

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/remote"
)

// debianPython is Debian's interpreter with python3-torch 1.13.
const debianPython = "/usr/bin/python3"

func requirePython(t testing.TB, python string) string {
	t.Helper()
	p, err := exec.LookPath(python)
	if err != nil {
		t.Skipf("no %s: %v", python, err)
	}
	return p
}

// bareTorchlessPython finds an interpreter that cannot import torch.
func bareTorchlessPython(t testing.TB) string {
	t.Helper()
	p := requirePython(t, "python3")
	if err := exec.Command(p, "-c", "import torch").Run(); err == nil {
		t.Skipf("%s imports torch", p)
	}
	return p
}

func TestPyStringLiteralRoundTrip(t *testing.T) {
	python := requirePython(t, debianPython)
	inputs := []string{
		``,
		`plain`,
		`"quoted" and 'single'`,
		`"""triple"""`,
		`back\slash\` + `\`,
		"new\nline\r\ttab\x00nul",
		"\u00e9\u4e2d\U0001F600\u2028\u2029",
		`"); import os; os.system("echo pwned"); ("`,
		"\xff\xfe",
	}
	var script strings.Builder
	script.WriteString("import json,sys\nout=[]\n")
	for _, s := range inputs {
		script.WriteString("out.append(" + pyStringLiteral(s) + ")\n")
	}
	script.WriteString("sys.stdout.write(json.dumps(out))\n")
	for _, s := range inputs {
		lit := pyStringLiteral(s)
		for _, r := range lit {
			if r < 0x20 || r >= 0x7f {
				t.Fatalf("literal for %q holds non-printable %U", s, r)
			}
		}
	}
	out, err := exec.Command(python, "-c", script.String()).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	for i, s := range inputs {
		want := string([]rune(s)) // one U+FFFD per invalid byte
		if got[i] != want {
			t.Errorf("round trip of %q: got %q", s, got[i])
		}
	}
}

func TestGenerateVariantsAndParams(t *testing.T) {
	vs, err := Generate(Spec{Mode: "reduce-overhead", Function: "m.sub:f", Inputs: "m:make"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
		if strings.Contains(v.Script, paramsToken) {
			t.Errorf("%s: parameters token left in the script", v.Name)
		}
		p := paramsOf(t, v.Script)
		if p.Variant != v.Name || p.Threads != DefaultThreads || p.CallsPerThread != DefaultCallsPerThread || p.Backend != "inductor" {
			t.Errorf("%s: defaults not filled: %+v", v.Name, p)
		}
	}
	if got, want := strings.Join(names, ","), strings.Join(AllVariants(), ","); got != want {
		t.Errorf("variants %s, want %s", got, want)
	}

	sub, err := Generate(Spec{Variants: []string{VariantMainThread, VariantThreads}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub) != 2 || sub[0].Name != VariantThreads || sub[1].Name != VariantMainThread {
		t.Errorf("subset: got %v", sub)
	}
}

// paramsOf reads back the JSON parameters embedded in a script.
func paramsOf(t *testing.T, script string) scriptParams {
	t.Helper()
	const prefix = "main(json.loads("
	i := strings.Index(script, prefix)
	if i < 0 {
		t.Fatal("no PARAMS line")
	}
	line, _, _ := strings.Cut(script[i+len(prefix):], "\n")
	line = strings.TrimSuffix(line, "))")
	var text string
	if err := json.Unmarshal([]byte(line), &text); err != nil {
		t.Fatalf("PARAMS literal %.80s: %v", line, err)
	}
	var p scriptParams
	if err := json.Unmarshal([]byte(text), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVariantParams(t *testing.T) {
	trees := ConfigSetting{inductorConfig, "triton.cudagraph_trees", "False"}
	graphs := ConfigSetting{inductorConfig, "triton.cudagraphs", "False"}
	tests := []struct {
		name        string
		spec        Spec
		variant     string
		wantMode    string
		wantOptions map[string]string
		wantLast    *ConfigSetting
	}{
		{"reduce-overhead loses cudagraphs", Spec{Mode: "reduce-overhead"}, VariantCudagraphsOff, "", map[string]string{"triton.cudagraphs": "False"}, &graphs},
		{"max-autotune swaps mode", Spec{Mode: "max-autotune"}, VariantCudagraphsOff, "max-autotune-no-cudagraphs", nil, &graphs},
		{"options get the flag", Spec{Options: map[string]string{"triton.cudagraphs": "True", "max_autotune": "True"}}, VariantCudagraphsOff, "", map[string]string{"triton.cudagraphs": "False", "max_autotune": "True"}, &graphs},
		{"trees off by config", Spec{Mode: "reduce-overhead", Config: []ConfigSetting{{inductorConfig, "triton.cudagraph_trees", "True"}}}, VariantCudagraphTreesOff, "reduce-overhead", nil, &trees},
		{"trees off in options too", Spec{Options: map[string]string{"triton.cudagraph_trees": "True"}}, VariantCudagraphTreesOff, "", map[string]string{"triton.cudagraph_trees": "False"}, &trees},
		{"as written stays", Spec{Mode: "reduce-overhead"}, VariantThreads, "reduce-overhead", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := baseParams(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			p := variantParams(base, tt.variant)
			if p.Mode != tt.wantMode {
				t.Errorf("mode %q, want %q", p.Mode, tt.wantMode)
			}
			if len(p.Options) != len(tt.wantOptions) {
				t.Errorf("options %v, want %v", p.Options, tt.wantOptions)
			}
			for k, v := range tt.wantOptions {
				if p.Options[k] != v {
					t.Errorf("option %s = %q, want %q", k, p.Options[k], v)
				}
			}
			switch {
			case tt.wantLast == nil && len(p.Config) != len(tt.spec.Config):
				t.Errorf("config changed: %v", p.Config)
			case tt.wantLast != nil && (len(p.Config) == 0 || p.Config[len(p.Config)-1] != *tt.wantLast):
				t.Errorf("config %v, want it to end with %v", p.Config, *tt.wantLast)
			}
			if len(base.Options) != len(tt.spec.Options) {
				t.Errorf("variant changed the base options: %v", base.Options)
			}
		})
	}
}

func TestGenerateRejects(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"mode and options", Spec{Mode: "reduce-overhead", Options: map[string]string{"a": "1"}}, "not both"},
		{"mode with code", Spec{Mode: `x"); import os; ("`}, "not a mode name"},
		{"bad option key", Spec{Options: map[string]string{"a b": "1"}}, "not a dotted name"},
		{"empty option value", Spec{Options: map[string]string{"a": " "}}, "has no value"},
		{"bad config module", Spec{Config: []ConfigSetting{{"torch;os", "k", "1"}}}, "malformed"},
		{"bad function", Spec{Function: "os.system('x')"}, "not module:qualname"},
		{"bad inputs", Spec{Function: "m:f", Inputs: "m"}, "not module:qualname"},
		{"too many threads", Spec{Threads: 1000}, "threads"},
		{"negative calls", Spec{CallsPerThread: -1}, "calls per thread"},
		{"unknown variant", Spec{Variants: []string{"nope"}}, "unknown variant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Generate(tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// runScripts runs spec's variants for real on the local machine.
func runScripts(t *testing.T, python string, env map[string]string, spec Spec) map[string]VariantResult {
	t.Helper()
	vs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), localTarget(t, "local"), remote.Interpreter{Python: python, Env: env}, vs, RunOptions{Parallel: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]VariantResult{}
	for _, r := range rep.Variants {
		if r.Failure != "" {
			t.Fatalf("%s: %s", r.Variant, r.Failure)
		}
		out[r.Variant] = r
	}
	return out
}

func TestStandInScripts(t *testing.T) {
	python := requirePython(t, debianPython)
	res := runScripts(t, python, nil, Spec{Mode: "reduce-overhead", StandIn: true})

	threads := res[VariantThreads]
	if threads.OK || len(threads.Errors) == 0 {
		t.Fatalf("threads: want an AssertionError, got %+v", threads)
	}
	e := threads.Errors[0]
	f, ok := e.TorchFrame()
	if e.Type != "AssertionError" || !ok || !strings.HasPrefix(f.File, "<torchlsp-stand-in>") || f.Func != "get_obj" ||
		!strings.Contains(f.Code, "_is_key_in_tls") {
		t.Errorf("threads error %+v, frame %+v", e, f)
	}
	if threads.ErrorCount() != threads.ExpectedCalls || threads.TorchVersion != "1.13.0a0" || threads.Device != "cpu" {
		t.Errorf("threads: %d raised of %d; torch %q device %q", threads.ErrorCount(), threads.ExpectedCalls, threads.TorchVersion, threads.Device)
	}
	if ex := res[VariantExecutor]; ex.OK || ex.ErrorCount() == 0 {
		t.Errorf("executor: want exceptions, got %+v", ex)
	}
	if tr := res[VariantCudagraphTreesOff]; tr.OK || tr.Wrong == 0 || len(tr.Errors) != 0 || tr.Right+tr.Wrong != tr.Calls {
		t.Errorf("cudagraph-trees-off: want wrong results only, got ok=%v wrong=%d right=%d errors=%v", tr.OK, tr.Wrong, tr.Right, tr.Errors)
	} else {
		t.Logf("cudagraph-trees-off: %d of %d wrong", tr.Wrong, tr.Calls)
	}
	for _, name := range []string{VariantMainThread, VariantCudagraphsOff} {
		if r := res[name]; !r.OK || r.Right != 2*DefaultCallsPerThread {
			t.Errorf("%s: want ok with %d right, got %+v", name, 2*DefaultCallsPerThread, r)
		}
	}
}

func TestStandInHonoursConfigAsWritten(t *testing.T) {
	python := requirePython(t, debianPython)
	res := runScripts(t, python, nil, Spec{
		Mode:     "reduce-overhead",
		StandIn:  true,
		Config:   []ConfigSetting{{inductorConfig, "triton.cudagraph_trees", "False"}, {"torch._dynamo.config", "suppress_errors", "True"}},
		Variants: []string{VariantThreads},
	})
	r := res[VariantThreads]
	if r.OK || r.Wrong == 0 || len(r.Errors) != 0 {
		t.Errorf("threads with trees off in the file: want wrong results, got %+v", r)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "stand-in ignores torch._dynamo.config.suppress_errors") {
		t.Errorf("notes %v", r.Notes)
	}
}

func TestStandInWithoutTorch(t *testing.T) {
	python := bareTorchlessPython(t)
	res := runScripts(t, python, nil, Spec{Mode: "reduce-overhead", StandIn: true, CompileInThreads: true})
	if r := res[VariantCudagraphTreesOff]; r.Wrong == 0 || r.TorchVersion != "" || !strings.Contains(r.Workload, "Python lists") {
		t.Errorf("trees off without torch: %+v", r)
	}
	if r := res[VariantThreads]; len(r.Errors) == 0 || r.Errors[0].Type != "AssertionError" {
		t.Errorf("threads without torch: %+v", r)
	}
	if r := res[VariantMainThread]; !r.OK {
		t.Errorf("main thread without torch: %+v", r)
	}
}

func TestRealModeUnsupported(t *testing.T) {
	tests := []struct {
		name   string
		python func(testing.TB) string
		want   string
	}{
		{"torch 1.13 has no compile", func(t testing.TB) string { return requirePython(t, debianPython) }, "no torch.compile in torch 1.13"},
		{"no torch at all", bareTorchlessPython, "torch is not importable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runScripts(t, tt.python(t), nil, Spec{Mode: "reduce-overhead", Variants: []string{VariantThreads}})
			r := res[VariantThreads]
			if r.OK || !strings.Contains(r.Unsupported, tt.want) {
				t.Errorf("got unsupported %q ok=%v, want %q", r.Unsupported, r.OK, tt.want)
			}
		})
	}
}

// A target that can run no variant says so once: the variants after the
// first that found it are not started, and each carries its reason.
func TestTargetWideUnsupportedStopsTheRest(t *testing.T) {
	python := requirePython(t, debianPython)
	res := runScripts(t, python, nil, Spec{Mode: "reduce-overhead"})
	started := 0
	for name, r := range res {
		if !r.UnsupportedTarget || !strings.Contains(r.Unsupported, "no torch.compile in torch 1.13") {
			t.Errorf("%s: %+v; want the target-wide reason", name, r)
		}
		if r.ExitCode != -1 {
			started++
		}
	}
	if started == 0 || started > 2 { // at most the two running at once when the first answered
		t.Errorf("%d of %d variants started; want only those running when the first found the target unable", started, len(res))
	}
}

func TestUserFunction(t *testing.T) {
	python := requirePython(t, debianPython)
	wd, _ := os.Getwd()
	env := map[string]string{"PYTHONPATH": wd + "/testdata/userpkg"}
	res := runScripts(t, python, env, Spec{
		StandIn:  true,
		Options:  map[string]string{"triton.cudagraphs": "True", "triton.cudagraph_trees": "False"},
		Function: "torchlsp_repro_user:scale_and_relu",
		Inputs:   "torchlsp_repro_user:sample_inputs",
		Variants: []string{VariantMainThread, VariantThreads},
	})
	if r := res[VariantMainThread]; !r.OK || !strings.Contains(r.Workload, "user scale_and_relu") || r.Inputs == nil || r.Inputs.Source != "factory torchlsp_repro_user:sample_inputs" {
		t.Errorf("main thread: %+v", r)
	}
	if r := res[VariantThreads]; r.Wrong == 0 {
		t.Errorf("threads with legacy graphs: want wrong results, got %+v", r)
	}

	noFactory := runScripts(t, python, env, Spec{StandIn: true, Function: "torchlsp_repro_user:scale_and_relu", Variants: []string{VariantMainThread}})
	r := noFactory[VariantMainThread]
	if !strings.Contains(r.Workload, "stand-in MLP") || !strings.Contains(strings.Join(r.Notes, " "), "no sample-input factory") {
		t.Errorf("without a factory: workload %q notes %v", r.Workload, r.Notes)
	}
}

func BenchmarkGenerate(b *testing.B) {
	spec := Spec{Mode: "reduce-overhead", StandIn: true, Config: []ConfigSetting{{inductorConfig, "triton.cudagraph_trees", "False"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(spec); err != nil {
			b.Fatal(err)
		}
	}
}
