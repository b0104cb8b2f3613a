package repro

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote"
)

// ownWorkspace copies testdata/ownws into a temporary directory and adds
// a symbolic link to a file outside it, which must never travel.
func ownWorkspace(t *testing.T) (string, Bundle) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/ownws")); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.py")
	if err := os.WriteFile(outside, []byte("SECRET = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	b, err := CollectWorkspace(dir, BundleLimits{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, b
}

func TestCollectWorkspace(t *testing.T) {
	t.Parallel()
	_, b := ownWorkspace(t)
	var paths []string
	for _, f := range b.Files {
		paths = append(paths, f.Path)
	}
	want := "breaks.py never.py tinygpt/__init__.py tinygpt/model.py train.py"
	if got := strings.Join(paths, " "); got != want {
		t.Errorf("files %q, want %q", got, want)
	}
	if got := b.LeftOut.String(); !strings.Contains(got, "1 not a regular file (linked.py)") {
		t.Errorf("left out %q: want the link named", got)
	}

	limited, err := CollectWorkspace("testdata/ownws", BundleLimits{MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(limited.Files) != 2 || limited.LeftOut.Count != 3 || !strings.Contains(limited.LeftOut.String(), "3 past the 2-file limit") {
		t.Errorf("two files at most: got %d files, left out %q", len(limited.Files), limited.LeftOut)
	}
	small, err := CollectWorkspace("testdata/ownws", BundleLimits{MaxFileBytes: 300})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range small.Files {
		if len(f.Data) > 300 {
			t.Errorf("%s: %d bytes sent past the limit", f.Path, len(f.Data))
		}
	}
	if small.LeftOut.Count == 0 || !strings.Contains(small.LeftOut.String(), "over the 300-byte limit for a file") {
		t.Errorf("a 300-byte limit left out %q", small.LeftOut)
	}
}

func TestEncodeFilesRefusesEscapes(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"../x.py", "/etc/x.py", "a/../../x.py", "a\\b.py", "", ".hidden/x.py", "a//b.py"} {
		if _, err := encodeFiles([]File{{Path: p}}); err == nil {
			t.Errorf("%q: encoded", p)
		}
	}
	if _, err := Generate(Spec{StandIn: true, Entry: "../train.py", CaptureFile: "train.py", CaptureLines: [2]int{1, 1}}); err == nil {
		t.Error("an entry outside the workspace was accepted")
	}
}

// TestOwnCodeCaptured runs the user's own model from the workspace sent
// over stdin: its first real call is captured by running train.py, then
// replayed in each variant with those inputs.
func TestOwnCodeCaptured(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	_, b := ownWorkspace(t)
	res := runScripts(t, python, nil, Spec{
		Mode: "reduce-overhead", StandIn: true, CompileInThreads: true, CallsPerThread: 10,
		Files: b.Files, Entry: "train.py", CaptureFile: "train.py", CaptureLines: [2]int{17, 17}, Devices: 2,
		Variants: []string{VariantThreads, VariantMainThread, VariantCudagraphTreesOff, VariantThreadsPerGPU},
	})
	// One thread per logical device, each with its own copy of the model.
	if pd := res[VariantThreadsPerGPU]; len(pd.PerDevice) != 2 || pd.Calls != 20 || len(pd.PerDevice[1].Errors) == 0 || pd.PerDevice[1].Errors[0].Type != "AssertionError" {
		t.Errorf("per device: %+v", pd)
	}
	main := res[VariantMainThread]
	if !main.OK {
		t.Fatalf("main thread: %+v", main)
	}
	if main.Inputs == nil || !strings.Contains(main.Inputs.Source, "captured") || !strings.Contains(main.Inputs.Source, "train.py:21") {
		t.Errorf("inputs %+v: want captured at train.py:21", main.Inputs)
	}
	if main.Inputs == nil || len(main.Inputs.Values) != 2 || main.Inputs.Values[0] != "arg 0: int64[3, 12] cpu" || main.Inputs.Values[1] != "grad on" {
		t.Errorf("inputs %+v: want the call's int64[3, 12]", main.Inputs)
	}
	if !strings.Contains(main.Workload, "TinyGPT (tinygpt/model.py)") {
		t.Errorf("workload %q", main.Workload)
	}
	threads := res[VariantThreads]
	if len(threads.Errors) == 0 || threads.Errors[0].Type != "AssertionError" {
		t.Errorf("threads: want the stand-in's AssertionError, got %+v", threads)
	}
	// The temporary directory is gone once the script ends.
	for _, r := range res {
		if r.WorkspaceDir == "" {
			t.Errorf("%s: no workspace directory reported", r.Variant)
		} else if _, err := os.Stat(r.WorkspaceDir); !os.IsNotExist(err) {
			t.Errorf("%s: %s still there after the run (%v)", r.Variant, r.WorkspaceDir, err)
		}
	}
	for _, n := range threads.Notes {
		if strings.Contains(n, "workspace file(s) sent") && !strings.HasPrefix(n, "5 ") {
			t.Errorf("note %q: want 5 files", n)
		}
	}
}

func TestOwnCodeFactory(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	_, b := ownWorkspace(t)
	res := runScripts(t, python, nil, Spec{
		StandIn: true, CallsPerThread: 5, Files: b.Files,
		Function: "tinygpt.model:bag_of_tokens", Inputs: "train:make_batch",
		Variants: []string{VariantMainThread},
	})
	r := res[VariantMainThread]
	if !r.OK || !strings.Contains(r.Workload, "bag_of_tokens (tinygpt/model.py)") {
		t.Errorf("main thread: %+v", r)
	}
	if r.Inputs == nil || r.Inputs.Source != "factory train:make_batch" || r.Inputs.Values[0] != "arg 0: int64[2, 16] cpu" {
		t.Errorf("inputs %+v", r.Inputs)
	}
}

func TestOwnCodeNeverCalled(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	_, b := ownWorkspace(t)
	res := runScripts(t, python, nil, Spec{
		StandIn: true, Files: b.Files, Entry: "never.py", CaptureFile: "never.py", CaptureLines: [2]int{11, 11},
		CaptureTimeout: 2 * time.Second, Variants: []string{VariantMainThread},
	})
	r := res[VariantMainThread]
	if r.OK || len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, "never called the torch.compile at never.py:11") {
		t.Errorf("want the time box to end the capture, got %+v", r)
	}
}

// TestPerDevice runs one thread per (logical) device with the stand-in:
// each device reports on its own.
func TestPerDevice(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	res := runScripts(t, python, nil, Spec{
		Mode: "reduce-overhead", StandIn: true, CompileInThreads: true, CallsPerThread: 20, Devices: 2,
		Variants: []string{VariantThreadsPerGPU, VariantExecutorPerGPU},
	})
	for _, name := range []string{VariantThreadsPerGPU, VariantExecutorPerGPU} {
		r := res[name]
		if len(r.PerDevice) != 2 || r.PerDevice[0].Device != "cpu#0" || r.PerDevice[1].Device != "cpu#1" {
			t.Fatalf("%s: per device %+v", name, r.PerDevice)
		}
		if r.ExpectedCalls != 40 || r.Calls != 40 {
			t.Errorf("%s: %d of %d calls, want 40", name, r.Calls, r.ExpectedCalls)
		}
		for _, d := range r.PerDevice {
			if d.Calls != 20 || len(d.Errors) == 0 || d.Errors[0].Type != "AssertionError" {
				t.Errorf("%s %s: want 20 calls failing the TLS assert, got %+v", name, d.Device, d)
			}
		}
	}
	if _, err := Generate(Spec{StandIn: true, Variants: []string{VariantThreadsPerGPU}}); err == nil {
		t.Error("a per-GPU variant with one device was generated")
	}
}

// TestExplainStandIn explains the step with two deliberate graph breaks
// on Debian's torch 1.13, which has no Dynamo: the stand-in finds both
// lines and the recompile its changing input shape causes.
func TestExplainStandIn(t *testing.T) {
	t.Parallel()
	python := requirePython(t, debianPython)
	_, b := ownWorkspace(t)
	v, err := GenerateExplain(Spec{StandIn: true, Files: b.Files, Function: "breaks:step", Inputs: "breaks:make_x"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Explain(context.Background(), localTarget(t, "local"), remote.Interpreter{Python: python}, v, RunOptions{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := rep.Variants[0].Explain
	var got []string
	for _, e := range ex.GraphBreaks {
		got = append(got, fmt.Sprintf("%s:%d", e.File, e.Line))
	}
	if strings.Join(got, " ") != "breaks.py:12 breaks.py:13" {
		t.Errorf("graph breaks at %v, want breaks.py:12 and :13 (%+v)", got, ex.GraphBreaks)
	}
	if len(ex.Recompiles) == 0 || ex.Recompiles[0].File != "breaks.py" || ex.Recompiles[0].Line != 10 ||
		!strings.Contains(ex.Recompiles[0].Reason, "float32[4, 8] cpu -> arg 0: float32[5, 8] cpu") {
		t.Errorf("recompiles %+v", ex.Recompiles)
	}
	if !strings.HasPrefix(ex.Method, "stand-in") {
		t.Errorf("method %q: the stand-in must say so", ex.Method)
	}
	md := rep.ExplainMarkdown(nil)
	for _, want := range []string{"2 graph break(s)", "`breaks.py:12`", "print()", "Tensor.item()"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
