package remote

import (
	"os"
	"path/filepath"
	"runtime"
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
