package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/torchlsp/torchlsp/internal/await"
)

// hostileInspect replaces the helper's inspect method: for the names
// below it misbehaves, for the rest it is the real one.
const hostileInspect = `
_real_inspect = m_inspect
def m_inspect(params):
    q = params.get("qualname")
    if q == "fixturepkg.huge":
        big = "d" * (700 << 10)
        r = _real_inspect({"qualname": "fixturepkg.plain"})
        r.update(doc=big, doc_summary=big, signature="(" + "a, " * (230 << 10) + ")", repr=big,
                 file="/" + "x" * 100000, stub_candidates=["c%d" % i for i in range(20000)], line=-5)
        return r
    if q == "fixturepkg.bigger":
        r = _real_inspect({"qualname": "fixturepkg.plain"})
        r["doc"] = "e" * (30 << 20)
        return r
    if q == "fixturepkg.rawframe":
        # Past the Channel: a frame header announcing 1 GiB, then a trickle.
        import struct
        channel_out.write(struct.pack(">I", 1 << 30) + b"{")
        time.sleep(600)
    if q == "fixturepkg.deadlock":
        # Hold the reply lock for good: the reader thread still reads the
        # watchdog's ping, but can never send the pong.
        channel_lock.acquire()
        time.sleep(600)
    if q == "fixturepkg.slow":
        time.sleep(float(params.get("seconds") or 2))
    if q == "fixturepkg.holdslock":
        # A C call that keeps Python's lock, as loading torch's extension
        # does: the reader thread cannot answer pings meanwhile.
        import ctypes
        ctypes.PyDLL(None).usleep(int(float(params.get("seconds") or 1) * 1e6))
        return _real_inspect({"qualname": "fixturepkg.plain"})
    return _real_inspect(params)
METHODS["inspect"] = (m_inspect, True)

_real_channel = Channel
class Channel(_real_channel):
    def __init__(self, reader, out_fd):
        _real_channel.__init__(self, reader, out_fd)
        global channel_out, channel_lock
        channel_out, channel_lock = self._out, self._lock
`

// probeLimits make the hung-helper watchdog fast for tests.
var probeLimits = HelperLimits{ProbeAfter: 200 * time.Millisecond, ProbeTimeout: 500 * time.Millisecond}

func hostileClient(t *testing.T, limits HelperLimits) *Client {
	t.Helper()
	spec := hostileSpec(t, "torchlsp_helper", hostileInspect)
	target := NewLocal(spec)
	c := NewClientWith(target, spec, limits)
	t.Cleanup(func() {
		c.Close()
		target.Close()
	})
	return c
}

// A helper's answer is cut to the limits before anything keeps it: a
// 700 KB docstring, summary, signature and repr, a 100 KB path and 20,000 stub
// names come back within HelperLimits; a 30 MB reply is refused by the
// helper itself with a clear error, and the helper goes on answering.
func TestHelperAnswersAreBounded(t *testing.T) {
	t.Parallel()
	if !heapAlone(t) {
		return
	}
	c := hostileClient(t, HelperLimits{})
	ctx := testContext(t)
	var insp Inspection
	var err error
	peak := heapPeak(func() { insp, err = c.Inspect(ctx, "fixturepkg.huge") })
	if err != nil {
		t.Fatal(err)
	}
	l := DefaultHelperLimits()
	for _, f := range []struct {
		name string
		v    string
		max  int
	}{{"doc", insp.Doc, l.MaxDoc}, {"doc_summary", insp.DocSummary, l.MaxDocSummary}, {"signature", insp.Signature, l.MaxSignature}, {"repr", insp.Repr, l.MaxRepr}} {
		if len(f.v) > f.max || !strings.HasSuffix(f.v, "…") || !utf8.ValidString(f.v) {
			t.Errorf("%s: %d bytes (limit %d), ends %q", f.name, len(f.v), f.max, f.v[max(len(f.v)-8, 0):])
		}
	}
	if insp.File != "" || insp.Line != 0 || len(insp.StubCandidates) != l.MaxList {
		t.Errorf("file %d bytes, line %d, %d stub candidates; want the path dropped, no line, %d candidates",
			len(insp.File), insp.Line, len(insp.StubCandidates), l.MaxList)
	}
	t.Logf("a 3.9 MB reply: Go heap peak %.1f MiB", float64(peak)/(1<<20))
	if peak > 24<<20 {
		t.Errorf("Go heap grew by %d bytes for one reply", peak)
	}

	_, err = c.Inspect(ctx, "fixturepkg.bigger")
	if !IsRemoteError(err, "ReplyTooLarge") || !strings.Contains(err.Error(), "exceeds the helper's limit of 4194304 bytes") {
		t.Errorf("30 MB reply: err = %v, want ReplyTooLarge", err)
	}
	got, err := c.Inspect(ctx, "fixturepkg.plain")
	if err != nil || got.DocSummary != "Adds two numbers." {
		t.Errorf("after the refused reply: %+v, %v", got, err)
	}
}

// A helper that writes past its Channel a frame over the limit is stopped
// with a message naming the limit; the next call gets a new helper.
func TestHelperFrameOverLimit(t *testing.T) {
	t.Parallel()
	if !heapAlone(t) {
		return
	}
	c := hostileClient(t, HelperLimits{})
	ctx := testContext(t)
	first, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var callErr error
	peak := heapPeak(func() { _, callErr = c.Inspect(ctx, "fixturepkg.rawframe") })
	if !errors.Is(callErr, ErrHelperExited) || !strings.Contains(callErr.Error(), "sent a frame of 1 GiB, over the limit of 4 MiB") {
		t.Fatalf("err = %v, want the frame limit", callErr)
	}
	if peak > 8<<20 {
		t.Errorf("a 1 GiB frame header cost %d bytes of heap", peak)
	}
	second, err := c.Hello(ctx)
	if err != nil || second.PID == first.PID {
		t.Fatalf("no new helper after the refused frame: %+v, %v", second, err)
	}
}

// The helper's package description decides where mirrors go: paths over
// the limit are an error, not a cut.
func TestPackageInfoPathsOverLimit(t *testing.T) {
	t.Parallel()
	spec := hostileSpec(t, "torchlsp_helper", `
_real_package_info = m_package_info
def m_package_info(params):
    r = _real_package_info(params)
    r["site"] = "/" + "s" * 10000
    return r
METHODS["package_info"] = (m_package_info, True)
`)
	target := NewLocal(spec)
	defer target.Close()
	c := NewClient(target, spec)
	defer c.Close()
	_, err := c.PackageInfo(testContext(t), "fixturepkg")
	if err == nil || !strings.Contains(err.Error(), "a site of 10001 bytes, over the limit of 4096") {
		t.Errorf("err = %v", err)
	}
}

// A helper stopped with SIGSTOP is found out by the watchdog's ping,
// killed, and replaced: the call that met it is answered by the new
// helper, within its own deadline, instead of failing after it.
func TestHungHelperIsReplaced(t *testing.T) {
	t.Parallel()
	c := hostileClient(t, probeLimits)
	ctx := testContext(t)
	first, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(first.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	insp, err := c.Inspect(ctx, "fixturepkg.plain")
	took := time.Since(start)
	if err != nil || insp.DocSummary != "Adds two numbers." {
		t.Fatalf("hover on a stopped helper: %+v, %v", insp, err)
	}
	t.Logf("answered by a new helper after %v", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("took %v; the watchdog should act within about ProbeAfter+ProbeTimeout", took)
	}
	second, err := c.Hello(ctx)
	if err != nil || second.PID == first.PID {
		t.Fatalf("the stopped helper is still in use: %+v, %v", second, err)
	}
	if !pidGone(first.PID, 5*time.Second) {
		t.Errorf("the stopped helper %d was not killed", first.PID)
	}
}

// A call that deadlocks its helper every time fails, after one retry,
// with a message that says the helper stopped answering; the backoff then
// grows.
func TestHelperThatHangsEveryTime(t *testing.T) {
	t.Parallel()
	c := hostileClient(t, probeLimits)
	ctx := testContext(t)
	_, err := c.Inspect(ctx, "fixturepkg.deadlock")
	if !errors.Is(err, ErrHelperHung) || !errors.Is(err, ErrHelperExited) ||
		!strings.Contains(err.Error(), "stopped answering") || !strings.Contains(err.Error(), "the next request starts a new one") {
		t.Fatalf("err = %v", err)
	}
	t.Log(err)
	c.mu.Lock()
	failures := c.failures
	c.mu.Unlock()
	if failures < 1 {
		t.Errorf("failures = %d after two hangs, want the backoff to count them", failures)
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("ping after the hangs: %v", err)
	}
}

// A helper that holds Python's lock longer than the ping window (torch's
// extension loading on a busy host) is killed once; the call's retry runs
// on a helper given twice the window, and is answered.
func TestHelperSilentPastThePingWindowIsGivenLonger(t *testing.T) {
	t.Parallel()
	limits := HelperLimits{ProbeAfter: 200 * time.Millisecond, ProbeTimeout: time.Second}
	c := hostileClient(t, limits)
	ctx := testContext(t)
	var r Inspection
	err := c.Call(ctx, "inspect", map[string]any{"qualname": "fixturepkg.holdslock", "seconds": 1.6}, &r)
	if err != nil {
		t.Fatalf("a call that holds the lock 1.6 s, with a ping window of 1 s: %v", err)
	}
	c.mu.Lock()
	hangs := c.hangs
	c.mu.Unlock()
	if hangs != 1 {
		t.Errorf("hangs = %d, want the first helper killed once", hangs)
	}
}

// A helper that is slow but alive (an import that takes seconds, on its
// own thread) keeps answering pings, so it is not killed.
func TestSlowHelperIsNotKilled(t *testing.T) {
	t.Parallel()
	c := hostileClient(t, probeLimits)
	ctx := testContext(t)
	first, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var r Inspection
	err = c.Call(ctx, "inspect", map[string]any{"qualname": "fixturepkg.slow", "seconds": 2}, &r)
	if err != nil {
		t.Fatalf("slow call: %v", err)
	}
	second, err := c.Hello(ctx)
	if err != nil || second.PID != first.PID {
		t.Errorf("the slow helper was replaced: %d → %d, %v", first.PID, second.PID, err)
	}
}

// pidGone waits until pid no longer runs (a zombie counts as gone).
func pidGone(pid int, within time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return await.Gone(ctx, func() []int { return []int{pid} }) == nil
}

// The helper's own caps (characters) are a quarter of HelperLimits (bytes)
// and its reply limit is MaxFrame, so its answers always fit: a change on
// one side must be made on the other.
func TestHelperLimitsMatchThePythonHelper(t *testing.T) {
	t.Parallel()
	consts := map[string]int{}
	for _, line := range strings.Split(string(helperSource), "\n") {
		name, expr, ok := strings.Cut(line, " = ")
		if !ok || strings.ToUpper(name) != name || strings.ContainsAny(name, " \t") {
			continue
		}
		var a, b int
		if n, _ := fmt.Sscanf(expr, "%d << %d", &a, &b); n == 2 {
			consts[name] = a << b
		} else if n, _ := fmt.Sscanf(expr, "%d", &a); n == 1 {
			consts[name] = a
		}
	}
	l := DefaultHelperLimits()
	for _, c := range []struct {
		name string
		want int
	}{{"MAX_REPLY", l.MaxFrame}, {"DOC_LIMIT", l.MaxDoc / 4}, {"SUMMARY_LIMIT", l.MaxDocSummary / 4},
		{"SIGNATURE_LIMIT", l.MaxSignature / 4}, {"REPR_LIMIT", l.MaxRepr / 4},
		{"DIST_FILE_LIMIT", maxMetadataFile}, {"DIST_REQUIRES_LIMIT", maxSiteRequires}, {"DIST_TOP_LEVEL_LIMIT", maxSiteTopLevel},
		{"TYPED_LIMIT", maxTypedMarkers}, {"SITE_NAMES_LIMIT", maxSiteNames}, {"STDLIB_NAMES_LIMIT", maxStdlibNames},
		{"STARTUP_NAMES_LIMIT", maxStartupNames},
		{"SPEC_LIMIT", maxSiteSpec / 4}} {
		if consts[c.name] != c.want {
			t.Errorf("torchlsp_helper.py %s = %d, want %d", c.name, consts[c.name], c.want)
		}
	}
	// site_packages: a package's answer fits a reply's budget, and the
	// budget with every other name deferred (at most 1,230 bytes each, a
	// 200-character name escaped) fits a reply.
	if p, b := consts["SITE_PACKAGE_LIMIT"], consts["SITE_REPLY_BUDGET"]; p == 0 || p >= b || b+consts["SITE_NAMES_LIMIT"]*1230 >= l.MaxFrame {
		t.Errorf("torchlsp_helper.py SITE_PACKAGE_LIMIT = %d, SITE_REPLY_BUDGET = %d: the answers may not fit a reply of %d", p, b, l.MaxFrame)
	}
}

// A call that its helper never answers, while the helper still answers
// pings, ends at MaxCall with a message saying so, even when the caller
// gave no deadline; the helper is kept.
func TestStuckCallEndsAtMaxCall(t *testing.T) {
	t.Parallel()
	c := hostileClient(t, HelperLimits{ProbeAfter: 100 * time.Millisecond, ProbeTimeout: 500 * time.Millisecond, MaxCall: 1500 * time.Millisecond})
	first, err := c.Hello(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var r Inspection
	start := time.Now()
	err = c.Call(context.Background(), "inspect", map[string]any{"qualname": "fixturepkg.slow", "seconds": 600}, &r)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 1.5s, the limit of one call") {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
	second, err := c.Hello(testContext(t))
	if err != nil || second.PID != first.PID {
		t.Errorf("the helper was replaced: %d → %d, %v", first.PID, second.PID, err)
	}
}
