package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote/hostiletest"
	"github.com/torchlsp/torchlsp/server/config"
)

// holdSitePackages makes the helper's site_packages wait, once per hold
// file in HOSTILE_DIR: it says so through the FIFO "arrived" and goes on
// when the FIFO "release" is written. The rest is the real helper.
const holdSitePackages = `
_real_site_packages = m_site_packages
def m_site_packages(params):
    d = os.environ["HOSTILE_DIR"]
    hold = os.path.join(d, "hold")
    if os.path.exists(hold):
        os.remove(hold)
        with open(os.path.join(d, "arrived"), "w") as f:
            f.write("held\n")
        with open(os.path.join(d, "release")) as f:
            f.read()
    return _real_site_packages(params)
METHODS["site_packages"] = (m_site_packages, True)
`

// siteEvents records torchlsp/site notifications and log lines, and wakes
// whoever waits for them.
type siteEvents struct {
	NopNotifier
	mu      sync.Mutex // guards the fields below
	notes   []SiteInfo
	logs    []string
	changed chan struct{} // closed, and replaced, at each event
}

func newSiteEvents() *siteEvents { return &siteEvents{changed: make(chan struct{})} }

func (n *siteEvents) Capabilities() Capabilities { return Capabilities{Site: true} }

func (n *siteEvents) Site(_ context.Context, s SiteInfo) {
	n.record(func() { n.notes = append(n.notes, s) })
}

func (n *siteEvents) LogMessage(_ context.Context, _ MessageType, msg string) {
	n.record(func() { n.logs = append(n.logs, msg) })
}

func (n *siteEvents) record(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f()
	close(n.changed)
	n.changed = make(chan struct{})
}

// snapshot returns the notes and log lines so far.
func (n *siteEvents) snapshot() ([]SiteInfo, []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]SiteInfo(nil), n.notes...), append([]string(nil), n.logs...)
}

// wait waits until done holds for the notes and log lines so far.
func (n *siteEvents) wait(t *testing.T, what string, done func(notes []SiteInfo, logs []string) bool) {
	t.Helper()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		n.mu.Lock()
		ok := done(n.notes, n.logs)
		ch := n.changed
		n.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			notes, logs := n.snapshot()
			t.Fatalf("waited 60 s for %s; torchlsp/site: %+v; log: %q", what, notes, logs)
		}
	}
}

// fifo does what a FIFO's open and read or write does, with a deadline.
func fifo(t *testing.T, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("waited 60 s for %s", what)
	}
}

// TestSiteFollowsTheDefaultTarget switches the default target while the
// old one's site is being built (its helper holds the site request until
// the test lets it go): the editor hears of the new default at once (an
// empty entry, then its site), and never of the old target's site, which
// ends after the switch. Once for a rebuild after a save, once for a
// build after a switch; and torchlsp.site without a target answers with
// the new default's site.
func TestSiteFollowsTheDefaultTarget(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(sitePython); err != nil {
		t.Skipf("%s is missing", sitePython)
	}
	hostile := t.TempDir()
	for _, name := range []string{"arrived", "release"} {
		if err := syscall.Mkfifo(filepath.Join(hostile, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	slowPython, slowEnv := hostiletest.Install(t, hostile, "torchlsp_helper", holdSitePackages)
	pythonPath := fixturePath(t, "testdata", "site") + ":" + fixturePath(t, "testdata", "sitepkgs", "site-packages")
	slowEnv["PYTHONPATH"] = pythonPath
	hold := func() {
		t.Helper()
		if err := os.WriteFile(filepath.Join(hostile, "hold"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	held := func() {
		t.Helper()
		fifo(t, "the slow target's helper to get a site request", func() error {
			_, err := os.ReadFile(filepath.Join(hostile, "arrived"))
			return err
		})
	}
	release := func() {
		t.Helper()
		fifo(t, "the slow target's helper to take the release", func() error {
			return os.WriteFile(filepath.Join(hostile, "release"), []byte("go\n"), 0)
		})
	}

	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"train.py": "import torch\n"})
	root := t.TempDir()
	t.Cleanup(func() { removeReadOnly(root) })
	n := newSiteEvents()
	eng := New(Options{Notifier: n, Dirs: config.Dirs{Config: filepath.Join(root, "c"), Cache: filepath.Join(root, "k"), State: filepath.Join(root, "s")}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings, _ := json.Marshal(map[string]any{"defaultTarget": "slow", "targets": map[string]any{
		"slow": map[string]any{"python": slowPython, "env": slowEnv, "packages": []string{"torch"}},
		"fx":   map[string]any{"python": sitePython, "env": map[string]string{"PYTHONPATH": pythonPath}, "packages": []string{"torch"}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := eng.Initialize(ctx, InitializeParams{WorkspaceFolders: []string{ws}, InitializationOptions: settings}); err != nil {
		t.Fatal(err)
	}
	selectTarget := func(name string) int {
		t.Helper()
		if _, err := eng.SelectTargetCommand(ctx, TargetArgs{Target: name}); err != nil {
			t.Fatal(err)
		}
		notes, _ := n.snapshot()
		if len(notes) == 0 || notes[len(notes)-1] != (SiteInfo{Target: name}) {
			t.Fatalf("after the switch to %s, torchlsp/site said %+v; want {%s \"\"} last, at once", name, notes, name)
		}
		return len(notes)
	}
	hasSite := func(target string, from int) func([]SiteInfo, []string) bool {
		return func(notes []SiteInfo, _ []string) bool {
			for _, s := range notes[min(from, len(notes)):] {
				if s.Target == target && s.Path != "" {
					return true
				}
			}
			return false
		}
	}
	// dropped waits until the old target's site was either dropped (the
	// log says so) or announced after the switch, then checks the notes
	// since the switch.
	dropped := func(old, active string, from, drops int) {
		t.Helper()
		n.wait(t, "the end of "+old+"'s site build", func(notes []SiteInfo, logs []string) bool {
			count := 0
			for _, l := range logs {
				if strings.Contains(l, "site of target "+old+" is not handed") {
					count++
				}
			}
			return count >= drops || hasSite(old, from)(notes, logs)
		})
		notes, _ := n.snapshot()
		for _, s := range notes[from:] {
			if s.Target != active {
				t.Errorf("after the switch to %s, torchlsp/site announced %+v", active, s)
			}
		}
		if last := notes[len(notes)-1]; last.Target != active || last.Path == "" || !strings.Contains(filepath.Base(last.Path), active+"-") {
			t.Errorf("the last torchlsp/site is %+v, want %s's site", last, active)
		}
	}

	eng.Initialized(ctx)
	n.wait(t, "the slow target's site", hasSite("slow", 0))

	// A save brings in an import the site lacks: slow's site is built
	// again, and the default moves to fx while it is.
	hold()
	writeFiles(t, ws, map[string]string{"extra.py": "import alpha\n"})
	eng.DidSave(ctx, "file://"+filepath.Join(ws, "extra.py"))
	held()
	from := selectTarget("fx")
	n.wait(t, "fx's site", hasSite("fx", from))
	release()
	dropped("slow", "fx", from, 1)

	// Back to slow, whose build is held, and to fx again before it ends.
	hold()
	selectTarget("slow")
	held()
	from = selectTarget("fx")
	n.wait(t, "fx's site", hasSite("fx", from))
	release()
	dropped("slow", "fx", from, 2)

	// torchlsp.site without a target answers with the site of the target
	// that is the default when the answer goes out.
	from = selectTarget("slow")
	n.wait(t, "slow's site", hasSite("slow", from))
	hold()
	type answer struct {
		res *SiteResult
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := eng.Site(ctx, TargetArgs{})
		answers <- answer{res, err}
	}()
	held()
	selectTarget("fx")
	release()
	select {
	case a := <-answers:
		res := a.res
		if a.err != nil || res == nil || res.Target != "fx" || !strings.Contains(filepath.Base(res.Path), "fx-") {
			var got SiteInfo
			if res != nil {
				got = SiteInfo{Target: res.Target, Path: res.Path}
			}
			t.Errorf("torchlsp.site after the switch to fx = %+v, %v; want fx's site", got, a.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("waited 60 s for torchlsp.site's answer")
	}
}
