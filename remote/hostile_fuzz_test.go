package remote

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// fuzzLimits keep each fuzzed stream cheap; the properties are the same
// at any size.
var fuzzLimits = MirrorLimits{
	MaxFiles:       20,
	MaxBytes:       48 << 10,
	MaxFileBytes:   8 << 10,
	MaxStreamBytes: 96 << 10,
}

// seedStream is a tar (gzip'd when zip) of entries, for the corpus.
func seedStream(zip bool, entries ...entry) []byte {
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if zip {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		size := int64(len(e.body))
		if typ != tar.TypeReg {
			size = 0
		}
		tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: typ, Size: size, Mode: 0o644, Linkname: e.link, Format: tar.FormatPAX})
		if typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	if zw != nil {
		zw.Close()
	}
	flag := byte(0)
	if zip {
		flag = 1
	}
	return append([]byte{flag}, buf.Bytes()...)
}

// FuzzMirrorArchive feeds arbitrary bytes to the mirror's stream reader,
// as a plain tar (first byte even) or as tar.gz (odd), the way fetchTree
// decodes a target's stream. Properties: it ends without panicking;
// nothing is written outside the destination, and nothing but regular
// .py/.pyi files under the package, none over the per-file limit, no more
// files or bytes than the limits allow; what it reports matches the disk;
// and the bytes it allocates stay under a bound set by the stream limit,
// however large the sizes the stream declares.
func FuzzMirrorArchive(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	good := []entry{{name: headerEntry, body: meta(1, 6)}, {name: "pkg/a.py", body: "x = 1\n"}, {name: summaryEntry, body: meta(1, 6)}}
	f.Add(seedStream(false, good...))
	f.Add(seedStream(true, good...))
	f.Add(seedStream(false, entry{name: "pkg/../../evil.py", body: "x"}))
	f.Add(seedStream(false, entry{name: "pkg/link.py", typ: tar.TypeSymlink, link: "/etc/passwd"}))
	f.Add(seedStream(true, entry{name: "pkg/big.py", body: strings.Repeat("x", 10<<10)}, entry{name: summaryEntry, body: meta(1, 10<<10)}))
	f.Add(seedStream(true, entry{name: headerEntry, body: meta(100, 1<<40)}))
	f.Add(seedStream(false, entry{name: summaryEntry, body: `{"files":0,"bytes":0,"skipped":[{"name":"../x.py","size":1},{"name":"pkg/y.py","size":-4,"error":"\xff"}]}`}))
	f.Add([]byte{1, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	// One fixed scratch path for every input: a fresh random directory
	// per input would make the coverage of each run differ, and the
	// fuzzer would spend its time minimising inputs that are not new.
	scratch := filepath.Join(f.TempDir(), "s")
	f.Fuzz(func(t *testing.T, data []byte) {
		deadline.Start(t, data)
		if len(data) == 0 {
			return
		}
		// Every run starts and ends with no scratch directory.
		defer os.RemoveAll(scratch)
		dest := filepath.Join(scratch, "m", "site")
		var r io.Reader = bytes.NewReader(data[1:])
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		if data[0]%2 == 1 {
			zr, err := gzip.NewReader(r)
			if err != nil {
				return
			}
			zr.Multistream(false)
			r = zr
		}
		r = &capReader{r: r, left: fuzzLimits.MaxStreamBytes, limit: fuzzLimits.MaxStreamBytes}
		res, err := untarTree(r, dest, "pkg", true, fuzzLimits, untarObserver{})
		runtime.ReadMemStats(&ms1)
		// The reader's own buffers, tar's header parsing (at most 1 MiB
		// per special header, each read from the stream) and one entry at
		// a time: all bounded by the bytes the stream may unpack.
		if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 2*uint64(fuzzLimits.MaxStreamBytes)+(2<<20) {
			t.Fatalf("allocated %d bytes for a stream of %d", alloc, len(data))
		}
		var files int
		var total int64
		werr := filepath.WalkDir(scratch, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dest, p)
			if d.IsDir() {
				if p != scratch && p != filepath.Dir(dest) && rel != "." && rel != "pkg" && !strings.HasPrefix(rel, "pkg"+string(filepath.Separator)) {
					t.Fatalf("directory %s outside the package", p)
				}
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			switch {
			case !info.Mode().IsRegular():
				t.Fatalf("%s is not a regular file (%v)", p, info.Mode())
			case strings.HasPrefix(rel, ".."):
				t.Fatalf("%s written outside the destination", p)
			case !strings.HasPrefix(rel, "pkg"+string(filepath.Separator)):
				t.Fatalf("%s outside the package", rel)
			case !strings.HasSuffix(rel, ".py") && !strings.HasSuffix(rel, ".pyi"):
				t.Fatalf("%s is not a Python source", rel)
			case info.Size() > fuzzLimits.MaxFileBytes:
				t.Fatalf("%s has %d bytes, over the per-file limit", rel, info.Size())
			}
			files++
			total += info.Size()
			return nil
		})
		if werr != nil && !errors.Is(werr, fs.ErrNotExist) {
			t.Fatal(werr)
		}
		if files > fuzzLimits.MaxFiles || total > fuzzLimits.MaxBytes {
			t.Fatalf("%d files of %d bytes on disk, over the limits", files, total)
		}
		if err == nil {
			if res.Files != files || res.Bytes != total {
				t.Fatalf("reported %d files of %d bytes, disk has %d of %d", res.Files, res.Bytes, files, total)
			}
			for _, s := range res.skipped {
				if _, err := checkName(s.Path, "pkg", true); err != nil || !utf8.ValidString(s.Reason) || len(s.Reason) > 300 {
					t.Fatalf("skip list entry %+v", s)
				}
			}
		}
		os.RemoveAll(scratch)
	})
}

// FuzzHelperReplySizes reads one frame whose declared length and body are
// fuzzed, then decodes it as every kind of answer and bounds it.
// Properties: a declared length over the limit is refused before the body
// is read; a body shorter than declared is an error; the bytes allocated
// follow the bytes that arrived, not the length declared; and every
// bounded answer is within HelperLimits and valid UTF-8.
func FuzzHelperReplySizes(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	f.Add(uint32(2), []byte("{}"))
	f.Add(uint32(1<<31), []byte("{"))
	f.Add(uint32(900<<10), []byte(`{"doc":"`))
	f.Add(uint32(60), []byte(`{"doc":"`+strings.Repeat("\xe2\x82\xac", 100)+`","file":"/a","line":-3,"stub_candidates":["x"]}`))
	f.Add(uint32(40), []byte(`{"values":{"a":{"repr":"\ud800","json":[1,2,3]}},"missing":["k"]}`))
	limits := HelperLimits{MaxFrame: 1 << 20, MaxDoc: 64, MaxDocSummary: 16, MaxSignature: 32, MaxRepr: 16, MaxName: 24, MaxList: 3}.withDefaults()
	f.Fuzz(func(t *testing.T, declared uint32, body []byte) {
		deadline.Start(t, declared, body)
		stream := binary.BigEndian.AppendUint32(nil, declared)
		stream = append(stream, body...)
		r := bytes.NewReader(stream)
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		got, err := readFrame(r, limits.MaxFrame)
		runtime.ReadMemStats(&ms1)
		if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 3*uint64(len(body))+(256<<10) {
			t.Fatalf("reading a frame of %d declared, %d sent bytes allocated %d", declared, len(body), alloc)
		}
		switch {
		case int64(declared) > int64(limits.MaxFrame):
			if err == nil || r.Len() != len(body) {
				t.Fatalf("a frame of %d bytes over the %d limit was read (%v, %d left)", declared, limits.MaxFrame, err, r.Len())
			}
			return
		case int(declared) > len(body):
			if err == nil {
				t.Fatal("a truncated frame was accepted")
			}
			return
		case err != nil:
			t.Fatalf("a whole frame was refused: %v", err)
		case !bytes.Equal(got, body[:declared]):
			t.Fatal("frame body differs")
		}
		check := func(what, s string, max int) {
			if len(s) > max || !utf8.ValidString(s) {
				t.Fatalf("%s: %d bytes (limit %d), valid %v", what, len(s), max, utf8.ValidString(s))
			}
		}
		var insp Inspection
		if json.Unmarshal(got, &insp) == nil {
			b := insp.bounded(limits)
			check("doc", b.Doc, limits.MaxDoc)
			check("summary", b.DocSummary, limits.MaxDocSummary)
			check("signature", b.Signature, limits.MaxSignature)
			check("repr", b.Repr, limits.MaxRepr)
			for _, s := range append([]string{b.File, b.Qualname, b.Module, b.Type, b.ObjectQualname}, b.StubCandidates...) {
				check("name", s, limits.MaxName)
			}
			if len(b.StubCandidates) > limits.MaxList || b.Line < 0 {
				t.Fatalf("bounded inspection %+v", b)
			}
		}
		var cfg Config
		if json.Unmarshal(got, &cfg) == nil {
			b := cfg.bounded(limits)
			for k, v := range b.Values {
				check("key", k, limits.MaxName)
				check("repr", v.Repr, limits.MaxRepr)
				check("default repr", v.DefaultRepr, limits.MaxRepr)
				if len(v.JSON) > limits.MaxRepr || len(v.EnvNames) > limits.MaxList {
					t.Fatalf("bounded value %+v", v)
				}
			}
			if len(b.Missing) > limits.MaxList {
				t.Fatalf("bounded missing %v", b.Missing)
			}
		}
		var rep reply
		if json.Unmarshal(got, &rep) == nil && rep.Error != nil {
			rep.Error.bound(limits)
			check("message", rep.Error.Message, limits.MaxDocSummary)
			check("traceback", rep.Error.Traceback, limits.MaxDoc)
		}
		var hello Hello
		if json.Unmarshal(got, &hello) == nil {
			b := hello.bounded(limits)
			if len(b.SysPath) > limits.MaxList {
				t.Fatalf("sys.path of %d entries", len(b.SysPath))
			}
			for _, s := range append([]string{b.Executable, b.Cwd, b.Prefix}, b.SysPath...) {
				check("hello", s, limits.MaxName)
			}
		}
	})
}
