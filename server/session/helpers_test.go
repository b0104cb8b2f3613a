package session

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// testPython is the interpreter of the local targets in these tests:
// Debian's, which has python3-torch.
const testPython = "/usr/bin/python3"

// testWork runs a session's background work until the test ends.
type testWork struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // guards closed, and orders Go against Wait
	closed bool
	wg     sync.WaitGroup
}

func (w *testWork) Go(f func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.wg.Add(1)
	go func() { defer w.wg.Done(); f() }()
	return true
}

func (w *testWork) Context() context.Context { return w.ctx }

// stop cancels the work and refuses more; wait waits for it to end.
func (w *testWork) stop() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
}

func (w *testWork) wait() { w.wg.Wait() }

// quietEnv reports nowhere.
type quietEnv struct{}

func (quietEnv) Message(context.Context, Level, string)         {}
func (quietEnv) Log(context.Context, Level, string)             {}
func (quietEnv) StartProgress(context.Context, string) Progress { return quietProgress{} }
func (quietEnv) Status(target, version, state, msg string)      {}
func (quietEnv) PackagesChanged(string)                         {}
func (quietProgress) Report(string, int)                        {}
func (quietProgress) End(string)                                {}

type quietProgress struct{}

// testSession is a session of a local target on Debian's interpreter,
// with its own cache; site, when set, goes on its PYTHONPATH (a torch
// tree standing in for the installed one).
func testSession(t testing.TB, site string) *Session {
	t.Helper()
	if _, err := os.Stat(testPython); err != nil {
		t.Skipf("%s is missing", testPython)
	}
	ctx, cancel := context.WithCancel(context.Background())
	work := &testWork{ctx: ctx, cancel: cancel}
	spec := remote.Spec{Name: "local", Python: testPython, Packages: []string{"torch"}}
	if site != "" {
		spec.Env = map[string]string{"PYTHONPATH": site}
	}
	s := New(quietEnv{}, Options{
		Work: work, Parses: syntax.NewBudget(syntax.DefaultBudget), CacheDir: filepath.Join(t.TempDir(), "cache"),
		ConnectTimeout: time.Minute, InspectTimeout: time.Minute,
	}, spec, remote.NewLocal(spec))
	t.Cleanup(func() {
		work.stop()
		_ = s.Close()
		work.wait()
	})
	return s
}
