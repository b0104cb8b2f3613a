package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
)

const systemPython = "/usr/bin/python3"

// fixtureSpec is a local target whose interpreter sees testdata/site.
func fixtureSpec(t testing.TB) Spec {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		t.Skipf("no %s: %v", systemPython, err)
	}
	site, err := filepath.Abs("testdata/site")
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Name: "test", Python: systemPython, Env: map[string]string{"PYTHONPATH": site}}
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startTestHelper(t testing.TB) *Helper {
	t.Helper()
	return startTestHelperWith(t, fixtureSpec(t))
}

func startTestHelperWith(t testing.TB, spec Spec) *Helper {
	t.Helper()
	target := NewLocal(spec)
	t.Cleanup(func() { target.Close() })
	h, err := StartHelper(testContext(t), target, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func newTestClient(t testing.TB) *Client {
	t.Helper()
	return newTestClientWith(t, fixtureSpec(t))
}

// sleepySpec is the fixture's spec for a test that acts while the helper
// imports sleepy (1.5 s); importing waits until that import has begun.
func sleepySpec(t testing.TB) (spec Spec, importing func()) {
	t.Helper()
	spec = fixtureSpec(t)
	mark := filepath.Join(t.TempDir(), "sleepy-started")
	spec.Env["SLEEPY_STARTED"] = mark
	return spec, func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := await.File(ctx, mark, func(b []byte) bool { return len(b) > 0 }); err != nil {
			t.Fatalf("the helper's import of sleepy did not begin: %v", err)
		}
	}
}

func newTestClientWith(t testing.TB, spec Spec) *Client {
	t.Helper()
	target := NewLocal(spec)
	c := NewClient(target, spec)
	t.Cleanup(func() {
		c.Close()
		target.Close()
	})
	return c
}

func TestHelperHandshake(t *testing.T) {
	h := startTestHelper(t)
	hello := h.Hello()
	if hello.Protocol != ProtocolVersion {
		t.Errorf("protocol = %d, want %d", hello.Protocol, ProtocolVersion)
	}
	if !strings.HasPrefix(hello.Python, "3.") || hello.PID <= 0 || hello.Platform != "linux" {
		t.Errorf("unexpected hello %+v", hello)
	}
	if hello.Executable != systemPython {
		t.Errorf("executable = %q, want %q", hello.Executable, systemPython)
	}
	site, _ := filepath.Abs("testdata/site")
	found := false
	for _, p := range hello.SysPath {
		found = found || p == site
	}
	if !found {
		t.Errorf("sys.path %v lacks PYTHONPATH entry %s", hello.SysPath, site)
	}
	var pong struct{ Pong bool }
	if err := h.Call(testContext(t), "ping", nil, &pong); err != nil || !pong.Pong {
		t.Fatalf("ping = %+v, %v", pong, err)
	}
}

// rewriteTarget runs a different program than asked: a fault injector.
type rewriteTarget struct {
	Target
	argv []string
}

func (r rewriteTarget) Start(ctx context.Context, c Command) (Process, error) {
	c.Argv = r.argv
	return r.Target.Start(ctx, c)
}

func TestHelperStartFailures(t *testing.T) {
	spec := fixtureSpec(t)
	local := NewLocal(spec)
	defer local.Close()
	wrongProtocol := `import sys,json,struct
n=int(sys.stdin.buffer.readline()); sys.stdin.buffer.read(n)
b=json.dumps({"protocol":99}).encode()
sys.stdout.buffer.write(struct.pack(">I",len(b))+b); sys.stdout.flush()
sys.stdin.buffer.read()`
	tests := []struct {
		name   string
		target Target
		want   string
		python string
	}{
		{"missing interpreter", local, "/nonexistent/python3", "/nonexistent/python3"},
		{"exits at once", rewriteTarget{local, []string{"sh", "-c", "echo no python here >&2; exit 3"}}, "no python here", ""},
		{"wrong protocol", rewriteTarget{local, []string{systemPython, "-c", wrongProtocol}}, "protocol 99", ""},
		{"hangs", rewriteTarget{local, []string{"sleep", "30"}}, "deadline exceeded", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			spec := spec
			if tt.python != "" {
				spec.Python = tt.python
			}
			h, err := StartHelper(ctx, tt.target, spec)
			if err == nil {
				h.Close()
				t.Fatal("StartHelper succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `target "test"`) {
				t.Errorf("error %q does not mention %q and the target", err, tt.want)
			}
		})
	}
}

func TestPackageInfoFixture(t *testing.T) {
	c := newTestClient(t)
	ctx := testContext(t)
	info, err := c.PackageInfo(ctx, "fixturepkg")
	if err != nil {
		t.Fatal(err)
	}
	site, _ := filepath.Abs("testdata/site")
	want := PackageInfo{
		Name: "fixturepkg", Version: "0.3.1", VersionSource: "source",
		Location: filepath.Join(site, "fixturepkg"), Site: site, Member: "fixturepkg",
		IsPackage: true, Origin: filepath.Join(site, "fixturepkg", "__init__.py"),
		FilesCount: 5, Bytes: info.Bytes,
	}
	if info != want {
		t.Errorf("PackageInfo =\n%+v\nwant\n%+v", info, want)
	}
	var size int64
	for _, f := range []string{"__init__.py", "config.py", "newconfig.py", "sub/__init__.py", "sub/stubs.pyi"} {
		st, err := os.Stat(filepath.Join(site, "fixturepkg", f))
		if err != nil {
			t.Fatal(err)
		}
		size += st.Size()
	}
	if info.Bytes != size {
		t.Errorf("bytes = %d, want %d", info.Bytes, size)
	}
	if _, err := c.PackageInfo(ctx, "no_such_package_xyz"); !IsRemoteError(err, "ModuleNotFoundError") {
		t.Errorf("missing package: err = %v", err)
	}
	if _, err := c.PackageInfo(ctx, "fixturepkg.sub"); !IsRemoteError(err, "ValueError") {
		t.Errorf("dotted name: err = %v", err)
	}
}

func TestPackageInfoTorchDoesNotImport(t *testing.T) {
	requireTorch(t)
	c := newTestClient(t)
	info, err := c.PackageInfo(testContext(t), "torch")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.Version, "1.13") || info.VersionSource != "metadata" {
		t.Errorf("version = %q from %q", info.Version, info.VersionSource)
	}
	if info.Location != debianTorch || info.FilesCount < 1000 || info.Bytes < 10<<20 {
		t.Errorf("unexpected info %+v", info)
	}
	if info.Imported {
		t.Error("package_info imported torch")
	}
}

const debianTorch = "/usr/lib/python3/dist-packages/torch"

func requireTorch(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(debianTorch, "__init__.py")); err != nil {
		t.Skipf("Debian torch not installed: %v", err)
	}
}

// lineOf returns the 1-based line of the first line in path starting with prefix
// (after indentation).
func lineOf(t *testing.T, path, prefix string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line starting with %q", path, prefix)
	return 0
}

func TestInspect(t *testing.T) {
	c := newTestClient(t)
	ctx := testContext(t)
	fixture, _ := filepath.Abs("testdata/site/fixturepkg/__init__.py")
	tests := []struct {
		qualname string
		check    func(t *testing.T, got Inspection)
	}{
		{"fixturepkg.plain", func(t *testing.T, got Inspection) {
			want := Inspection{Qualname: "fixturepkg.plain", Kind: "function", Type: "builtins.function",
				Module: "fixturepkg", ObjectQualname: "plain", File: fixture, Line: lineOf(t, fixture, "def plain"),
				Signature: "(a, b=2)", Doc: got.Doc, DocSummary: "Adds two numbers.", HasSource: true, StubCandidates: []string{}}
			if !equalInspection(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		}},
		{"fixturepkg.decorated", func(t *testing.T, got Inspection) {
			if !got.Wrapped || got.Kind != "function" || got.Line != lineOf(t, fixture, "def decorated") || got.Signature != "(x)" || got.DocSummary != "Doubles x." {
				t.Errorf("got %+v", got)
			}
		}},
		{"fixturepkg.Widget", func(t *testing.T, got Inspection) {
			if got.Kind != "class" || got.Line != lineOf(t, fixture, "class Widget") || got.File != fixture {
				t.Errorf("got %+v", got)
			}
		}},
		{"fixturepkg.Widget.method", func(t *testing.T, got Inspection) {
			if got.Kind != "function" || got.Line != lineOf(t, fixture, "def method") || got.ObjectQualname != "Widget.method" {
				t.Errorf("got %+v", got)
			}
		}},
		{"fixturepkg.sub", func(t *testing.T, got Inspection) {
			if got.Kind != "module" || got.Line != 1 || !strings.HasSuffix(got.File, "fixturepkg/sub/__init__.py") {
				t.Errorf("got %+v", got)
			}
		}},
		{"fixturepkg.__version__", func(t *testing.T, got Inspection) {
			if got.Kind != "value" || got.Repr != "'0.3.1'" || got.HasSource {
				t.Errorf("got %+v", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.qualname, func(t *testing.T) {
			got, err := c.Inspect(ctx, tt.qualname)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
	if _, err := c.Inspect(ctx, "fixturepkg.nothing_here"); !IsRemoteError(err, "AttributeError") {
		t.Errorf("missing attribute: err = %v", err)
	}
}

func equalInspection(a, b Inspection) bool {
	return a.Qualname == b.Qualname && a.Kind == b.Kind && a.Type == b.Type && a.Module == b.Module &&
		a.ObjectQualname == b.ObjectQualname && a.File == b.File && a.Line == b.Line &&
		a.Signature == b.Signature && a.DocSummary == b.DocSummary && a.HasSource == b.HasSource &&
		a.Wrapped == b.Wrapped && strings.Join(a.StubCandidates, ",") == strings.Join(b.StubCandidates, ",")
}

func TestInspectTorch(t *testing.T) {
	requireTorch(t)
	c := newTestClient(t)
	ctx := testContext(t)
	tests := []struct {
		qualname string
		kind     string
		file     string // relative to the torch dir; empty for builtins
		defLine  string
		stub     string // a stub candidate that must be offered
	}{
		{"torch.nn.functional.relu", "function", "nn/functional.py", "def relu(", ""},
		{"torch.nn.Linear", "class", "nn/modules/linear.py", "class Linear(", ""},
		{"torch.no_grad", "class", "autograd/grad_mode.py", "class no_grad(", ""},
		{"torch.add", "builtin", "", "", "torch._C._VariableFunctions.add"},
		{"torch.Tensor.add", "method_descriptor", "", "", "torch._C._TensorBase.add"},
		{"torch._C._nn.linear", "builtin", "", "", "torch._C._nn.linear"},
	}
	for _, tt := range tests {
		t.Run(tt.qualname, func(t *testing.T) {
			got, err := c.Inspect(ctx, tt.qualname)
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tt.kind {
				t.Errorf("kind = %q, want %q", got.Kind, tt.kind)
			}
			if tt.file == "" {
				if got.HasSource || !contains(got.StubCandidates, tt.stub) {
					t.Errorf("has_source %v, stub candidates %v lack %q", got.HasSource, got.StubCandidates, tt.stub)
				}
				if got.DocSummary == "" {
					t.Error("no doc summary")
				}
				return
			}
			file := filepath.Join(debianTorch, tt.file)
			if got.File != file || got.Line != lineOf(t, file, tt.defLine) || !got.HasSource {
				t.Errorf("got %s:%d (has_source %v), want %s:%d", got.File, got.Line, got.HasSource, file, lineOf(t, file, tt.defLine))
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestEvalConfig(t *testing.T) {
	c := newTestClient(t)
	ctx := testContext(t)
	old, err := c.EvalConfig(ctx, "fixturepkg.config")
	if err != nil {
		t.Fatal(err)
	}
	if old.Source != "attributes" || string(old.Values["triton.cudagraphs"].JSON) != "true" ||
		string(old.Values["debug"].JSON) != "false" || old.Values["name"].Repr != "'fixture'" || len(old.Values) != 5 {
		t.Errorf("old-style config = %+v", old)
	}
	cfg, err := c.EvalConfig(ctx, "fixturepkg.newconfig", "triton.cudagraphs", "compile_threads", "no.such.key")
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Values["triton.cudagraphs"]
	if cfg.Source != "get_config_copy" || string(got.JSON) != "false" || got.DefaultRepr != "False" ||
		strings.Join(got.EnvNames, ",") != "FIXTURE_CUDAGRAPHS" || len(cfg.Values) != 2 ||
		strings.Join(cfg.Missing, ",") != "no.such.key" {
		t.Errorf("config = %+v", cfg)
	}
	if _, err := c.EvalConfig(ctx, "no_such_config_module"); !IsRemoteError(err, "ModuleNotFoundError") {
		t.Errorf("missing module: err = %v", err)
	}
}

func TestEvalConfigSeesEnvironment(t *testing.T) {
	spec := fixtureSpec(t)
	spec.Env["FIXTURE_CUDAGRAPHS"] = "1"
	target := NewLocal(spec)
	defer target.Close()
	c := NewClient(target, spec)
	defer c.Close()
	cfg, err := c.EvalConfig(testContext(t), "fixturepkg.newconfig", "triton.cudagraphs")
	if err != nil {
		t.Fatal(err)
	}
	if v := string(cfg.Values["triton.cudagraphs"].JSON); v != "true" {
		t.Errorf("triton.cudagraphs = %s, want true from the target's environment", v)
	}
}

func TestHelperErrors(t *testing.T) {
	h := startTestHelper(t)
	ctx := testContext(t)
	tests := []struct {
		method    string
		params    any
		typ       string
		traceback bool
	}{
		{"no_such_method", nil, "UnknownMethod", false},
		{"import", map[string]string{"module": "no_such_module_xyz"}, "ModuleNotFoundError", true},
		{"import", map[string]int{"module": 3}, "ValueError", false},
		{"inspect", nil, "ValueError", false},
		{"eval_config", []int{1}, "ValueError", false},
	}
	for _, tt := range tests {
		err := h.Call(ctx, tt.method, tt.params, nil)
		var re *RemoteError
		if !errors.As(err, &re) || re.Type != tt.typ || re.Method != tt.method || re.Target != "test" {
			t.Errorf("%s(%v): err = %v, want a %s", tt.method, tt.params, err, tt.typ)
			continue
		}
		if (re.Traceback != "") != tt.traceback {
			t.Errorf("%s: traceback %q", tt.method, re.Traceback)
		}
	}
	if err := h.Call(ctx, "ping", nil, nil); err != nil {
		t.Fatalf("helper unusable after errors: %v", err)
	}
}

func TestImportsCannotTouchFrames(t *testing.T) {
	h := startTestHelper(t)
	ctx := testContext(t)
	var res ImportResult
	if err := h.Call(ctx, "import", map[string]string{"module": "noisy"}, &res); err != nil {
		t.Fatal(err)
	}
	if err := h.Call(ctx, "import", map[string]string{"module": "stdinreader"}, nil); err != nil {
		t.Fatal(err)
	}
	if res.Module != "noisy" {
		t.Errorf("import result %+v", res)
	}
	for i := 0; i < 3; i++ {
		if err := h.Call(ctx, "ping", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	tail := strings.Join(h.StderrTail(), "\n")
	if !strings.Contains(tail, "noisy: hello from print") || !strings.Contains(tail, "noisy raw bytes on fd 1") {
		t.Errorf("prints did not land on stderr: %q", tail)
	}
}

func TestConcurrentCallsOutOfOrder(t *testing.T) {
	spec, importing := sleepySpec(t)
	h := startTestHelperWith(t, spec)
	ctx := testContext(t)
	slow := make(chan error, 1)
	go func() { slow <- h.Call(ctx, "import", map[string]string{"module": "sleepy"}, nil) }()
	importing()

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				errs <- h.Call(ctx, "ping", nil, nil)
				return
			}
			var got Inspection
			err := h.Call(ctx, "inspect", map[string]string{"qualname": "fixturepkg.plain"}, &got)
			if err == nil && got.Qualname != "fixturepkg.plain" {
				err = errors.New("reply for another request: " + got.Qualname)
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	select {
	case err := <-slow:
		t.Fatalf("the slow import finished before the quick calls (%v): calls are not concurrent", err)
	default:
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

func TestCallContextCancel(t *testing.T) {
	h := startTestHelper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := h.Call(ctx, "import", map[string]string{"module": "sleepy"}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if err := h.Call(testContext(t), "ping", nil, nil); err != nil {
		t.Fatalf("ping after abandoned call: %v", err)
	}
}

func TestClientRestartsDeadHelper(t *testing.T) {
	spec, importing := sleepySpec(t)
	c := newTestClientWith(t, spec)
	ctx := testContext(t)
	first, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inflight := make(chan error, 1)
	go func() { _, err := c.Import(ctx, "sleepy"); inflight <- err }()
	importing()
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = <-inflight
	if !errors.Is(err, ErrHelperExited) || !strings.Contains(err.Error(), `helper on target "test" exited`) {
		t.Fatalf("in-flight call: err = %v, want a clear helper exit", err)
	}
	t.Log(err)
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("call after restart: %v", err)
	}
	second, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.PID == first.PID {
		t.Error("helper was not restarted")
	}
}

func TestClientBacksOffOnRepeatedFailures(t *testing.T) {
	spec := fixtureSpec(t)
	local := NewLocal(spec)
	defer local.Close()
	c := NewClient(rewriteTarget{local, []string{"sh", "-c", "echo broken interpreter >&2; exit 1"}}, spec)
	defer c.Close()
	ctx := testContext(t)
	err := c.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "broken interpreter") {
		t.Fatalf("first call: %v", err)
	}
	// A caller that cannot wait out the backoff fails at once.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	err = c.Ping(short)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "broken interpreter") {
		t.Fatalf("call during backoff: %v", err)
	}
}

func TestClientClose(t *testing.T) {
	c := newTestClient(t)
	ctx := testContext(t)
	hello, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := c.Ping(ctx); err == nil {
		t.Error("call after Close succeeded")
	}
	gone, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := await.Gone(gone, func() []int { return []int{hello.PID} }); err != nil {
		t.Errorf("helper process %d still runs after Close: %v", hello.PID, err)
	}
}

func TestHelperCloseFailsInflightCalls(t *testing.T) {
	spec, importing := sleepySpec(t)
	h := startTestHelperWith(t, spec)
	inflight := make(chan error, 1)
	go func() { inflight <- h.Call(testContext(t), "import", map[string]string{"module": "sleepy"}, nil) }()
	importing()
	h.Close()
	err := <-inflight
	if !errors.Is(err, ErrHelperExited) || !strings.Contains(err.Error(), "was closed") {
		t.Fatalf("in-flight call: %v", err)
	}
	if err := h.Call(testContext(t), "ping", nil, nil); !errors.Is(err, ErrHelperExited) {
		t.Fatalf("call after Close: %v", err)
	}
}

func TestClientStartsOneHelperForConcurrentCalls(t *testing.T) {
	c := newTestClient(t)
	ctx := testContext(t)
	pids := make(chan int, 16)
	var wg sync.WaitGroup
	for i := 0; i < cap(pids); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hello, err := c.Hello(ctx)
			if err != nil {
				t.Error(err)
			}
			pids <- hello.PID
		}()
	}
	wg.Wait()
	close(pids)
	first := 0
	for pid := range pids {
		if first == 0 {
			first = pid
		}
		if pid != first {
			t.Errorf("two helpers started: pids %d and %d", first, pid)
		}
	}
}

func BenchmarkHelperPing(b *testing.B) {
	h := startTestHelper(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := h.Call(ctx, "ping", nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
