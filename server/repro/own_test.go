package repro

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	want := "never.py tinygpt/__init__.py tinygpt/model.py train.py"
	if got := strings.Join(paths, " "); got != want {
		t.Errorf("files %q, want %q", got, want)
	}
	if got := strings.Join(b.LeftOut, "\n"); !strings.Contains(got, "linked.py (not a regular file)") {
		t.Errorf("left out %q: want the link named", got)
	}

	limited, err := CollectWorkspace("testdata/ownws", BundleLimits{MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(limited.Files) != 2 || len(limited.LeftOut) != 2 {
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
	if len(small.LeftOut) == 0 {
		t.Error("a 300-byte limit left nothing out")
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
		Files: b.Files, Entry: "train.py", CaptureFile: "train.py", CaptureLines: [2]int{17, 17},
		Variants: []string{VariantThreads, VariantMainThread, VariantCudagraphTreesOff},
	})
	main := res[VariantMainThread]
	if !main.OK {
		t.Fatalf("main thread: %+v", main)
	}
	if main.Inputs == nil || !strings.Contains(main.Inputs.Source, "captured") || !strings.Contains(main.Inputs.Source, "train.py:21") {
		t.Errorf("inputs %+v: want captured at train.py:21", main.Inputs)
	}
	if main.Inputs == nil || len(main.Inputs.Values) != 1 || main.Inputs.Values[0] != "arg 0: int64[3, 12] cpu" {
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
	for _, n := range threads.Notes {
		if strings.Contains(n, "workspace file(s) sent") && !strings.HasPrefix(n, "4 ") {
			t.Errorf("note %q: want 4 files", n)
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
