package site

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/localfile"
)

// What the editor is handed: the default target's site announced
// (torchlsp/site) and withdrawn, built again when a package or a saved
// file asks for it, and whether the editor's Python server reads it.

// Prepare builds the default target's site in the background once an
// editor is connected, and tells the editor where it is. A switch to
// another target withdraws the old site at once.
func (ss *Sites) Prepare() {
	if !ss.deps.Notify.Capabilities().Site {
		return // the command line asks for a site explicitly
	}
	ss.Withdraw()
	spec, err := ss.deps.Spec("")
	if err != nil {
		return
	}
	ss.deps.Work.Go(func() {
		res, err := ss.Build(ss.deps.Work.Context(), spec.Name)
		if err != nil {
			if cur, cerr := ss.deps.Spec(""); cerr == nil && cur.Name == spec.Name && !(ss.deps.Work.Context().Err() != nil) {
				ss.deps.Notify.LogMessage(ss.deps.Work.Context(), api.MessageWarning, "torchlsp: "+err.Error())
			}
			ss.announceSite(api.SiteInfo{Target: spec.Name})
			return
		}
		ss.announceSite(api.SiteInfo{Target: spec.Name, Path: res.Path})
	})
}

// announceSite tells the editor a target's site (torchlsp/site), if that
// target is still the default; sendSite decides.
func (ss *Sites) announceSite(info api.SiteInfo) { ss.sendSite(&info) }

// Withdraw takes an announced site out of the editor's hands once its
// target is no longer the default: the new default's entry, empty until
// its own site is ready, replaces it.
func (ss *Sites) Withdraw() { ss.sendSite(nil) }

// sendSite is the one place that decides what torchlsp/site says. It
// decides under sendMu, which orders the notifications, against the
// default target as it is then: a site of a target that is no longer the
// default (a build that ended after a switch, wherever it was started) is
// dropped, and an earlier announcement for another target is withdrawn.
// A notification that would repeat the last one is not sent.
func (ss *Sites) sendSite(info *api.SiteInfo) {
	if !ss.deps.Notify.Capabilities().Site {
		return
	}
	st := &ss.state
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	cur, err := ss.deps.Spec("")
	if err != nil {
		return // no default target to hand a site of
	}
	st.mu.Lock()
	last := st.announced
	st.mu.Unlock()
	if info == nil || info.Target != cur.Name {
		if info != nil && info.Path != "" {
			ss.deps.Notify.LogMessage(ss.deps.Work.Context(), api.MessageLog, fmt.Sprintf("torchlsp: the site of target %s is not handed to the editor: the default target is %s now", info.Target, cur.Name))
		}
		if last == nil || last.Target == cur.Name {
			return // nothing of another target to withdraw
		}
		info = &api.SiteInfo{Target: cur.Name}
	}
	if last != nil && *last == *info {
		return
	}
	sent := *info
	st.mu.Lock()
	st.announced = &sent
	if sent.Path != "" {
		if st.shown == nil {
			st.shown = map[string]bool{}
		}
		st.shown[sent.Target] = true
	}
	st.mu.Unlock()
	ss.deps.Notify.Site(ss.deps.Work.Context(), sent)
}

// Command runs torchlsp.site: the target's site, built or brought up
// to date. Without a target it is the default's as the answer goes out:
// when the default changed while the site was built, the new default's is
// built in turn.
func (ss *Sites) Command(ctx context.Context, args api.TargetArgs) (*SiteResult, error) {
	const tries = 3
	for try := 1; ; try++ {
		res, err := ss.Build(ctx, args.Target)
		if err != nil {
			return nil, err
		}
		cur, err := ss.deps.Spec("")
		if args.Target == "" && (err != nil || cur.Name != res.Target) {
			if try < tries {
				continue
			}
			return nil, fmt.Errorf("site of the default target: the default changed %d times while its site was built", tries)
		}
		st := &ss.state
		st.mu.Lock()
		st.asked[res.Target] = true
		st.mu.Unlock()
		return res, nil
	}
}

// PackagesChanged rebuilds a site after one of its packages was
// mirrored again (the target's copy changed).
func (ss *Sites) PackagesChanged(target string) {
	st := &ss.state
	st.mu.Lock()
	_, built := st.last[target]
	inflight := st.inflight[target]
	st.mu.Unlock()
	if !built && inflight == nil {
		return // nobody asked for this target's site
	}
	ss.deps.Work.Go(func() {
		if inflight != nil {
			// A build that started before the new mirror may link the old
			// one: let it end, then build again.
			select {
			case <-inflight.done:
			case <-ss.deps.Work.Context().Done():
				return
			}
		}
		res, err := ss.Build(ss.deps.Work.Context(), target)
		if err != nil {
			return
		}
		ss.announceSite(api.SiteInfo{Target: target, Path: res.Path})
	})
}

// Saved rebuilds the default target's site, shortly, when a saved file
// imports a top-level module the last build did not consider. It is called
// on the LSP read loop, so the file is read in the background: a saved
// path may be a named pipe or a link to a device, and no file on disk may
// hold up the answers to later requests.
func (ss *Sites) Saved(path string) {
	if !strings.HasSuffix(path, ".py") || ss.deps.FolderOf(path) == "" {
		return
	}
	st := &ss.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.savedPending == nil {
		st.savedPending = map[string]bool{}
	}
	st.savedPending[path] = true
	if !st.savedReading {
		st.savedReading = ss.deps.Work.Go(ss.readSaved)
	}
}

// readSaved reads the saved files one at a time until none is pending:
// however many saves arrive, one goroutine reads.
func (ss *Sites) readSaved() {
	st := &ss.state
	for {
		st.mu.Lock()
		path := ""
		for p := range st.savedPending {
			path = p
			break
		}
		if path == "" {
			st.savedReading = false
			st.mu.Unlock()
			return
		}
		delete(st.savedPending, path)
		st.mu.Unlock()
		ss.siteSavedRead(path)
	}
}

// siteSavedRead reads a saved file (a bounded regular file, or nothing)
// and schedules the rebuild when it imports something new.
func (ss *Sites) siteSavedRead(path string) {
	spec, err := ss.deps.Spec("")
	if err != nil {
		return
	}
	st := &ss.state
	st.mu.Lock()
	last := st.last[spec.Name]
	st.mu.Unlock()
	if last == nil {
		return
	}
	src, err := localfile.Read(path, scanMaxFileBytes)
	if err != nil {
		return
	}
	fresh := false
	for _, n := range topImports(ss.deps.Parse(src).Imports()) {
		if !last.considered[n] {
			fresh = true
		}
	}
	if !fresh {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.saveTimer != nil {
		st.saveTimer.Stop()
	}
	st.saveTimer = time.AfterFunc(siteSaveDelay, func() {
		ss.deps.Work.Go(func() {
			res, err := ss.Build(ss.deps.Work.Context(), spec.Name)
			if err == nil {
				ss.announceSite(api.SiteInfo{Target: spec.Name, Path: res.Path})
			}
		})
	})
}

// Handed returns a target's site when the editor's Python server reads
// it: the editor asked for it with torchlsp.site, or site.hover is
// "compact" and the site was announced. An editor that only receives
// torchlsp/site may ignore it, so that alone changes nothing. Definitions
// then point into the site, where both servers' answers coincide.
func (ss *Sites) Handed(target string) *SiteResult {
	hover := ss.deps.Settings().Hover
	st := &ss.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.asked[target] && !(hover == "compact" && st.shown[target]) {
		return nil
	}
	return st.last[target]
}

// Compact reports whether hovers on a target leave signatures and
// docstrings to the Python server that reads its site.
func (ss *Sites) Compact(target string) bool {
	full := ss.deps.Settings().Hover == "full"
	return !full && ss.Handed(target) != nil
}

// PathFor maps a file of a mirror to the same file seen through the
// site the editor's Python server reads for target, when it reads one:
// both servers then name the same file.
func (ss *Sites) PathFor(target string, m *remote.MirrorTree, local string) (string, bool) {
	return ss.Handed(target).sitePath(m, local)
}

// sitePath maps a file in a mirror to the same file seen through a site.
func (r *SiteResult) sitePath(m *remote.MirrorTree, local string) (string, bool) {
	if r == nil || m == nil || r.mirrors[m.Manifest.Member] != m.SiteDir {
		return "", false
	}
	rel, err := filepath.Rel(m.SiteDir, local)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.Join(r.Path, rel), true
}
