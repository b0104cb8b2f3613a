package remote

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote/hostiletest"
)

// hostileSpec returns a local target whose interpreter patches program
// (torchlsp_helper or torchlsp_mirror) with patch; the other program runs
// unchanged. The fixture site is on its path.
func hostileSpec(t testing.TB, program, patch string) Spec {
	t.Helper()
	spec := fixtureSpec(t)
	python, env := hostiletest.Install(t, t.TempDir(), program, patch)
	env["PYTHONPATH"] = spec.Env["PYTHONPATH"]
	spec.Python, spec.Env = python, env
	return spec
}

// aloneEnv names, in the process heapAlone starts, the test that runs there.
const aloneEnv = "TORCHLSP_TEST_ALONE"

// heapAlone runs the calling test again in a process of its own and
// reports what it printed. Go's heap belongs to the process, so a heap
// bound measured beside parallel tests counts their allocations too (a
// 3.9 MB reply once measured 112 MiB that way). It returns true in the
// process of its own, where the test goes on, and false in the caller's,
// which should return.
func heapAlone(t *testing.T) bool {
	t.Helper()
	if os.Getenv(aloneEnv) == t.Name() {
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, part := range parts {
		parts[i] = "^" + regexp.QuoteMeta(part) + "$"
	}
	cmd := exec.CommandContext(testContext(t), os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), aloneEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the test in a process of its own: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("the test did not run in a process of its own:\n%s", out)
	}
	t.Logf("in a process of its own:\n%s", out)
	return false
}

// heapPeak samples the Go heap while f runs and returns the largest
// in-use size seen, less what was in use before.
func heapPeak(f func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
				peak.Store(ms.HeapInuse - base)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}

// dirBytes is the size of the regular files under dir.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}
