package remote

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testLimits are small enough that the hostile streams below stay cheap.
var testLimits = MirrorLimits{
	MaxFiles:       100,
	MaxBytes:       4 << 20,
	MaxFileBytes:   1 << 20,
	MaxStreamBytes: 96 << 20,
	StartTimeout:   2 * time.Second,
	StallTimeout:   time.Second,
	Timeout:        60 * time.Second,
}

// hostileInfo describes package pkg as a hostile target would announce it;
// the hostile mirror script ignores where it is.
func hostileInfo(files int, bytes int64) PackageInfo {
	return PackageInfo{Name: "pkg", Version: "6.6.6", Site: "/srv/site", Member: "pkg", Location: "/srv/site/pkg",
		IsPackage: true, FilesCount: files, Bytes: bytes}
}

// Each hostile mirror stream either succeeds with what the limits allow
// (too-large files skipped and listed) or fails with a message naming the
// limit or the phase that stalled, within its deadline; it never writes
// outside the cache, never keeps more than the limits allow, and leaves
// nothing that LookupMirror would use.
func TestMirrorHostileStreams(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name    string
		comp    Compression
		info    PackageInfo
		patch   string
		want    string        // error substring; empty for success
		stalled bool          // the error must be ErrMirrorStalled
		within  time.Duration // the mirror must end within this
		check   func(t *testing.T, m *MirrorTree)
	}{
		{
			name: "four 16 MiB files of zeros are skipped", comp: CompressGzip,
			info: hostileInfo(5, 4*16*mib+6),
			patch: `
def main():
    s = Stream()
    s.meta("header.json", {"files": 5, "bytes": 4 * 16 * 2**20 + 6})
    s.file("pkg/__init__.py", b"x = 1\n")
    for i in range(4):
        s.file("pkg/big%d.py" % i, zeros=16 * 2**20)
    s.meta("summary.json", {"files": 5, "bytes": 4 * 16 * 2**20 + 6, "skipped": []})
    s.close()
`,
			within: 60 * time.Second,
			check: func(t *testing.T, m *MirrorTree) {
				if m.Manifest.Files != 1 || m.Manifest.Bytes != 6 {
					t.Errorf("kept %d files of %d bytes, want the one small file", m.Manifest.Files, m.Manifest.Bytes)
				}
				if len(m.Skipped()) != 4 {
					t.Fatalf("skipped = %+v, want the four large files", m.Skipped())
				}
				for i, s := range m.Skipped() {
					if s.Path != "pkg/big"+strconv.Itoa(i)+".py" || s.Size != 16*mib || !strings.Contains(s.Reason, "over the per-file limit of 1 MiB") {
						t.Errorf("skipped[%d] = %+v", i, s)
					}
				}
				if sf, ok := m.IsSkipped("pkg/big2.py"); !ok || sf.Size != 16*mib {
					t.Errorf("IsSkipped(pkg/big2.py) = %+v, %v", sf, ok)
				}
				if _, err := os.Lstat(filepath.Join(m.SiteDir, "pkg", "big0.py")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a skipped file is in the mirror: %v", err)
				}
				if info := m.Info(); info.FilesCount != 5 || info.Bytes != 4*16*mib+6 {
					t.Errorf("Info() = %+v, want the target's own counts", info)
				}
			},
		},
		{
			name: "a decompression bomb stops at the stream limit", comp: CompressGzip,
			info: hostileInfo(9, 9*16*mib),
			patch: `
def main():
    s = Stream()
    s.meta("header.json", {"files": 0, "bytes": 0})
    for i in range(9):
        s.file("pkg/bomb%d.py" % i, zeros=16 * 2**20)
    s.close()
`,
			want: "the unpacked stream passed the limit of 96 MiB", within: 60 * time.Second,
		},
		{
			name: "more files announced than allowed", comp: CompressNone, info: hostileInfo(1, 1),
			patch: `
def main():
    s = Stream()
    s.meta("header.json", {"files": 101, "bytes": 101})
    s.close()
`,
			want: "announced 101 files, over the limit of 100 files per package", within: 10 * time.Second,
		},
		{
			name: "more files sent than allowed", comp: CompressNone, info: hostileInfo(1, 1),
			patch: `
def main():
    s = Stream()
    s.meta("header.json", {"files": 1, "bytes": 1})
    for i in range(101):
        s.file("pkg/f%d.py" % i, b"x")
    s.close()
`,
			want: "sent more than 100 files, the limit per package", within: 10 * time.Second,
		},
		{
			name: "more bytes sent than allowed", comp: CompressNone, info: hostileInfo(5, 5*mib),
			patch: `
def main():
    s = Stream()
    for i in range(5):
        s.file("pkg/f%d.py" % i, zeros=2**20)
    s.close()
`,
			want: "sent more than 4 MiB of files, the limit per package", within: 10 * time.Second,
		},
		{
			name: "stall after the header", comp: CompressGzip, info: hostileInfo(1, 6),
			patch: `
def main():
    s = Stream()
    s.meta("header.json", {"files": 1, "bytes": 6})
    s.flush()
    _time.sleep(600)
`,
			want: "the stream stalled: no data for 1s after the header, with 0 of 1 files", stalled: true, within: 10 * time.Second,
		},
		{
			name: "stall in the middle of a file", comp: CompressNone, info: hostileInfo(2, 1006),
			patch: `
def main():
    sys.stdin.buffer.readline()
    out = sys.stdout.buffer
    h = _json.dumps({"files": 2, "bytes": 1006}).encode()
    out.write(raw_entry(".torchlsp/header.json", h))
    out.write(raw_entry("pkg/__init__.py", b"x = 1\n"))
    info = _tar.TarInfo("pkg/half.py")
    info.size = 1000
    out.write(info.tobuf(_tar.PAX_FORMAT) + b"y" * 500)
    out.flush()
    _time.sleep(600)
`,
			want: "the stream stalled", stalled: true, within: 10 * time.Second,
		},
		{
			name: "no header at all", comp: CompressGzip, info: hostileInfo(1, 6),
			patch: `
def main():
    _time.sleep(600)
`,
			want: "no stream header from the target within 2s", stalled: true, within: 10 * time.Second,
		},
		{
			name: "bytes trickle in but the header never completes", comp: CompressNone, info: hostileInfo(1, 6),
			patch: `
def main():
    for i in range(1200):
        sys.stdout.buffer.write(b"\0")
        sys.stdout.buffer.flush()
        _time.sleep(0.1)
`,
			want: "no stream header from the target within 2s", stalled: true, within: 10 * time.Second,
		},
		{
			name: "the script does not exit after its stream", comp: CompressNone, info: hostileInfo(1, 6),
			patch: `
def main():
    s = Stream()
    s.meta("header.json", {"files": 1, "bytes": 6})
    s.file("pkg/__init__.py", b"x = 1\n")
    s.meta("summary.json", {"files": 1, "bytes": 6, "skipped": []})
    s.close()
    os.close(1)
    _time.sleep(600)
`,
			want: "the mirror script did not exit within 1s after its stream ended", stalled: true, within: 10 * time.Second,
		},
		{
			name: "a detached child keeps the stream open", comp: CompressNone, info: hostileInfo(1, 6),
			patch: `
def main():
    s = Stream()
    s.meta("header.json", {"files": 1, "bytes": 6})
    s.flush()
    if os.fork() == 0:
        os.setsid()
        with open(os.environ["HOSTILE_PATCH"] + ".pid", "w") as f:
            f.write(str(os.getpid()))
        _time.sleep(600)
        os._exit(0)
    os._exit(0)
`,
			want: "the stream stalled", stalled: true, within: 10 * time.Second,
		},
		{
			name: "the target's skip list names files outside the package", comp: CompressNone, info: hostileInfo(2, 6),
			patch: `
def main():
    s = Stream()
    s.meta("header.json", {"files": 1, "bytes": 6})
    s.file("pkg/__init__.py", b"x = 1\n")
    s.meta("summary.json", {"files": 1, "bytes": 6, "skipped": [
        {"name": "../../etc/passwd", "size": 1, "error": "x"},
        {"name": "/etc/shadow.py", "size": 1, "error": "x"},
        {"name": "other/a.py", "size": 1, "error": "x"},
        {"name": "pkg/big.py", "size": 99999999, "error": "too large: 99999999 bytes"},
        "not an object", {"name": 5}]})
    s.close()
`,
			within: 10 * time.Second,
			check: func(t *testing.T, m *MirrorTree) {
				if sk := m.Skipped(); len(sk) != 1 || sk[0].Path != "pkg/big.py" || sk[0].Size != 99999999 ||
					sk[0].Reason != "on the target: too large: 99999999 bytes" {
					t.Errorf("skipped = %+v, want only pkg/big.py", sk)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !heapAlone(t) {
				return
			}
			spec := hostileSpec(t, "torchlsp_mirror", tt.patch)
			cache := cacheDir(t)
			target := NewLocal(spec)
			defer target.Close()
			// Only the cases about a stall or a slow start keep the short
			// windows: on a loaded machine the interpreter's start, or the
			// target's first compressed block after the header, can take
			// longer than that.
			limits := testLimits
			if !tt.stalled {
				limits.StallTimeout = 10 * time.Second
			}
			if !strings.Contains(tt.want, "no stream header") {
				limits.StartTimeout = 30 * time.Second
			}
			var m *MirrorTree
			var err error
			start := time.Now()
			peak := heapPeak(func() {
				m, err = MirrorWith(testContext(t), target, spec, tt.info, cache, MirrorOptions{Limits: limits, Compression: tt.comp})
			})
			took := time.Since(start)
			// A detached child of the script wrote its pid: it is no
			// process of the target's group, so end it here.
			if b, rerr := os.ReadFile(spec.Env["HOSTILE_PATCH"] + ".pid"); rerr == nil {
				if pid, _ := strconv.Atoi(string(b)); pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			t.Logf("%v in %v, Go heap peak %.1f MiB, cache %d bytes", err, took.Round(time.Millisecond), float64(peak)/mib, dirBytes(t, cache))
			if took > tt.within {
				t.Errorf("took %v, want at most %v", took, tt.within)
			}
			// The stream reader holds 256 KiB buffers and one file at a
			// time at most; no hostile input may cost more than a few MiB.
			if peak > 32*mib {
				t.Errorf("Go heap grew by %d bytes", peak)
			}
			if used := dirBytes(t, cache); used > 5*mib {
				t.Errorf("the cache holds %d bytes", used)
			}
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, m)
				again, err := LookupMirror(cache, spec, "pkg")
				if err != nil || again.Root != m.Root {
					t.Fatalf("LookupMirror = %v, %v", again, err)
				}
				// The mirror is reused: its counts are the target's.
				if _, err := MirrorWith(testContext(t), failingTarget{}, spec, tt.info, cache, MirrorOptions{Limits: testLimits}); err != nil {
					t.Errorf("a second mirror of the same package was not reused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if tt.stalled != errors.Is(err, ErrMirrorStalled) {
				t.Errorf("errors.Is(err, ErrMirrorStalled) = %v, want %v", !tt.stalled, tt.stalled)
			}
			if _, err := LookupMirror(cache, spec, "pkg"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("LookupMirror after a failed mirror: %v", err)
			}
			left, _ := os.ReadDir(filepath.Dir(MirrorDir(cache, spec, tt.info)))
			if len(left) != 0 {
				t.Errorf("leftovers after failure: %v", left)
			}
		})
	}
}

// A target whose package description could make paths escape the mirror
// (a relative site such as x/../.., a location elsewhere, a member with a
// slash) is refused before anything runs there.
func TestMirrorRefusesHostilePackageInfo(t *testing.T) {
	t.Parallel()
	good := hostileInfo(1, 1)
	tests := []struct {
		name string
		edit func(*PackageInfo)
		want string
	}{
		{"relative site", func(p *PackageInfo) { p.Site, p.Location = "x/../..", "x/../../pkg" }, "not an absolute clean path"},
		{"unclean site", func(p *PackageInfo) { p.Site, p.Location = "/srv/x/../../etc", "/etc/pkg" }, "not an absolute clean path"},
		{"location elsewhere", func(p *PackageInfo) { p.Location = "/etc" }, "is not pkg inside site dir /srv/site"},
		{"member with a slash", func(p *PackageInfo) { p.Member = "../pkg" }, "bad member name"},
		{"member dot dot", func(p *PackageInfo) { p.Member = ".." }, "bad member name"},
		{"too many files", func(p *PackageInfo) { p.FilesCount = 101 }, "the target has 101 source files, over the limit of 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			info := good
			tt.edit(&info)
			cache := cacheDir(t)
			_, err := MirrorWith(context.Background(), failingTarget{}, Spec{Name: "hostile"}, info, cache, MirrorOptions{Limits: testLimits})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			if n := dirBytes(t, cache); n != 0 {
				t.Errorf("%d bytes written", n)
			}
		})
	}
}

// A mirror whose manifest was written with a relative site dir (by an
// earlier version, from a hostile target), or that holds a file over the
// per-file limit, is not used: the next Mirror fetches it again.
func TestOpenMirrorRefusesHostileManifest(t *testing.T) {
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "fixturepkg")
	tests := []struct {
		name   string
		damage func(t *testing.T, m *MirrorTree)
		want   string
	}{
		{"relative site dir", func(t *testing.T, m *MirrorTree) {
			rewriteManifest(t, m, func(man *Manifest) { man.TargetSiteDir = "x/../.." })
		}, "not an absolute clean path"},
		{"member escapes", func(t *testing.T, m *MirrorTree) {
			rewriteManifest(t, m, func(man *Manifest) { man.Member = "../site" })
		}, "bad member name"},
		{"file over the per-file limit", func(t *testing.T, m *MirrorTree) {
			rewriteManifest(t, m, func(man *Manifest) { man.MaxFileBytes = 10 })
		}, "over the per-file limit of 10 bytes"},
		{"format 1", func(t *testing.T, m *MirrorTree) {
			rewriteManifest(t, m, func(man *Manifest) { man.Format = 1 })
		}, "format 1 is not usable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := cacheDir(t)
			target := NewLocal(spec)
			defer target.Close()
			m, err := Mirror(testContext(t), target, spec, info, cache, nil)
			if err != nil {
				t.Fatal(err)
			}
			tt.damage(t, m)
			if _, err := OpenMirror(m.Root); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("OpenMirror: %v, want %q", err, tt.want)
			}
			again, err := Mirror(testContext(t), target, spec, info, cache, nil)
			if err != nil || again.Manifest.TargetSiteDir != info.Site || again.Manifest.Member != "fixturepkg" {
				t.Errorf("Mirror after the damage = %+v, %v", again, err)
			}
		})
	}
}

func rewriteManifest(t *testing.T, m *MirrorTree, edit func(*Manifest)) {
	t.Helper()
	man := m.Manifest
	edit(&man)
	p := filepath.Join(m.Root, manifestName)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o444); err != nil {
		t.Fatal(err)
	}
}

// The real mirror script does not send what torchlsp would not keep: files
// over the per-file limit are listed as skipped by the target, and the
// rest is mirrored.
func TestMirrorScriptSkipsOversizedFiles(t *testing.T) {
	t.Parallel()
	site := t.TempDir()
	pkg := filepath.Join(site, "bulky")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"__init__.py": "x = 1\n",
		"big.py":      strings.Repeat("#", (1<<20)+1),
	} {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := fixtureSpec(t)
	spec.Env = map[string]string{"PYTHONPATH": site}
	info := packageInfo(t, spec, "bulky")
	target := NewLocal(spec)
	defer target.Close()
	for _, comp := range []Compression{CompressNone, CompressGzip} {
		m, err := MirrorWith(testContext(t), target, spec, info, cacheDir(t), MirrorOptions{Limits: testLimits, Compression: comp})
		if err != nil {
			t.Fatal(err)
		}
		sk := m.Skipped()
		if m.Manifest.Files != 1 || len(sk) != 1 || sk[0].Path != "bulky/big.py" || sk[0].Size != (1<<20)+1 ||
			sk[0].Reason != "on the target: too large: 1048577 bytes" {
			t.Errorf("%s: %d files kept, skipped %+v", comp, m.Manifest.Files, sk)
		}
		if got := m.Info(); got.FilesCount != info.FilesCount || got.Bytes != info.Bytes {
			t.Errorf("Info() = %d files %d bytes, the target said %d, %d", got.FilesCount, got.Bytes, info.FilesCount, info.Bytes)
		}
	}
}
