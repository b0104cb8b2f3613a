package pyindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/torchlsp/torchlsp/server/localfile"
)

// The cache file is
//
//	magic | uvarint version | fingerprint (uvarint length + bytes) |
//	uvarint payload length | CRC-32 (IEEE, little endian) of payload | payload
//
// and the payload is the number of files, then each file's own table of
// distinct strings followed by its record, in which every string is an
// index into that table. A table of its own per file keeps what writing
// and reading hold to one file's strings (a table of the whole index took
// a map of 6.5 MB to write, on top of the index, at the cold server's
// peak); torch 2.11's strings take 5.5 MB so, against 4.2 MB shared.
// Anything that does not check out is reported as errBadCache and the
// index reparses.
const (
	cacheMagic   = "TLSPYIX\x00"
	cacheVersion = 4
	// maxNesting bounds class nesting in a cache file, so a hostile file
	// cannot exhaust the stack.
	maxNesting = 64
)

var errBadCache = errors.New("cache file is corrupt")

// encoder writes a cache file's payload, file by file, through a small
// buffer to its sink, counting the bytes and their CRC as they go.
// Nothing of the payload is held whole: saving torch 2.11's index held its
// 7.5 MB (table, body and the file's copy) on top of the index itself,
// the cold server's peak.
type encoder struct {
	ids   map[string]uint32 // each distinct string of the file → its place in table
	table []string
	sink  io.Writer // nil: only count and sum
	buf   []byte    // bytes not yet flushed to sink
	n     int64     // bytes flushed
	crc   uint32    // CRC-32 (IEEE) of the bytes flushed
	err   error     // the sink's first error
}

// encodeFlushAt is the size at which the encoder's buffer goes to its sink.
const encodeFlushAt = 64 << 10

func (e *encoder) flush() {
	if len(e.buf) == 0 {
		return
	}
	e.crc = crc32.Update(e.crc, crc32.IEEETable, e.buf)
	e.n += int64(len(e.buf))
	if e.sink != nil && e.err == nil {
		_, e.err = e.sink.Write(e.buf)
	}
	e.buf = e.buf[:0]
}

func (e *encoder) grew() {
	if len(e.buf) >= encodeFlushAt {
		e.flush()
	}
}

func (e *encoder) uvarint(v uint64) {
	e.buf = binary.AppendUvarint(e.buf, v)
	e.grew()
}

// add gives s its place in the table, once.
func (e *encoder) add(s string) {
	if _, ok := e.ids[s]; !ok {
		e.ids[s] = uint32(len(e.table))
		e.table = append(e.table, s)
	}
}

func (e *encoder) str(s string) { e.uvarint(uint64(e.ids[s])) }

// strings makes the table of fd's strings, in the order file writes them.
func (e *encoder) strings(rel string, fd *fileData) {
	clear(e.ids)
	e.table = e.table[:0]
	e.add(rel)
	e.add(fd.docSummary)
	var bindings func(bs []binding)
	bindings = func(bs []binding) {
		for i := range bs {
			b := &bs[i]
			e.add(b.name)
			for _, s := range [...]string{b.sig, b.value, b.attr, b.decorators, b.docSummary} {
				e.add(s)
			}
			bindings(b.members)
		}
	}
	bindings(fd.bindings)
	for _, s := range fd.stars {
		e.add(s.module)
	}
	for _, n := range fd.all {
		e.add(n)
	}
}

// writeTable writes the string table: a count, then each string's length
// and bytes.
func (e *encoder) writeTable() {
	e.uvarint(uint64(len(e.table)))
	for _, s := range e.table {
		e.uvarint(uint64(len(s)))
		for len(s) > 0 {
			k := min(len(s), encodeFlushAt)
			e.buf = append(e.buf, s[:k]...)
			s = s[k:]
			e.grew()
		}
	}
}

func (e *encoder) binding(b *binding) {
	e.str(b.name)
	e.uvarint(uint64(b.kind))
	tc := uint64(0)
	if b.typeChecking {
		tc = 1
	}
	e.uvarint(tc)
	e.uvarint(uint64(b.line))
	e.uvarint(uint64(b.col))
	e.uvarint(uint64(b.endLine))
	e.uvarint(uint64(b.docStart))
	e.uvarint(uint64(b.docEnd))
	e.str(b.sig)
	e.str(b.value)
	e.str(b.attr)
	e.str(b.decorators)
	e.str(b.docSummary)
	e.uvarint(uint64(len(b.members)))
	for i := range b.members {
		e.binding(&b.members[i])
	}
}

func (e *encoder) file(rel string, fd *fileData) {
	e.str(rel)
	e.uvarint(uint64(fd.docStart))
	e.uvarint(uint64(fd.docEnd))
	e.str(fd.docSummary)
	e.uvarint(uint64(len(fd.bindings)))
	for i := range fd.bindings {
		e.binding(&fd.bindings[i])
	}
	e.uvarint(uint64(len(fd.stars)))
	for _, s := range fd.stars {
		e.str(s.module)
		e.uvarint(uint64(s.line))
		tc := uint64(0)
		if s.typeChecking {
			tc = 1
		}
		e.uvarint(tc)
	}
	e.uvarint(uint64(len(fd.all)))
	for _, n := range fd.all {
		e.str(n)
	}
	flags := uint64(0)
	if fd.hasAll {
		flags |= 1
	}
	if fd.allDynamic {
		flags |= 2
	}
	if fd.identsAll {
		flags |= 4
	}
	e.uvarint(flags)
	// The postings are fixed-width: 32-bit hashes spread too thinly for
	// deltas to be shorter.
	e.uvarint(uint64(len(fd.idents)))
	for _, h := range fd.idents {
		e.buf = binary.LittleEndian.AppendUint32(e.buf, h)
		e.grew()
	}
}

// payload writes every file's table and record, and flushes.
func (e *encoder) payload(files []*fileState, fds []*fileData) {
	e.uvarint(uint64(len(files)))
	for i, f := range files {
		e.strings(f.rel, fds[i])
		e.writeTable()
		e.file(f.rel, fds[i])
	}
	e.flush()
}

// writeCache writes the cache file's bytes to w. The header states the
// payload's length and checksum before the payload, so the payload is
// encoded twice: once to count and sum it, once to write it; both
// passes read the same files' data, taken once.
func (ix *Index) writeCache(w io.Writer) error {
	fds := make([]*fileData, len(ix.files))
	e := &encoder{ids: make(map[string]uint32), buf: make([]byte, 0, encodeFlushAt+64)}
	for i, f := range ix.files {
		fds[i] = ix.load(f)
	}
	e.payload(ix.files, fds)
	size, sum := e.n, e.crc

	header := make([]byte, 0, len(ix.fingerprint)+32)
	header = append(header, cacheMagic...)
	header = binary.AppendUvarint(header, cacheVersion)
	header = binary.AppendUvarint(header, uint64(len(ix.fingerprint)))
	header = append(header, ix.fingerprint...)
	header = binary.AppendUvarint(header, uint64(size))
	header = binary.LittleEndian.AppendUint32(header, sum)
	if _, err := w.Write(header); err != nil {
		return err
	}
	e.sink, e.n, e.crc = w, 0, 0
	e.payload(ix.files, fds)
	if e.err == nil && (e.n != size || e.crc != sum) {
		e.err = errors.New("the index changed while it was written")
	}
	return e.err
}

// saveCache writes the cache file atomically: a temporary file in the same
// directory, renamed over the old one.
func (ix *Index) saveCache() error {
	ix.saveMu.Lock()
	defer ix.saveMu.Unlock()
	dir := filepath.Dir(ix.cacheFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(ix.cacheFile)+".tmp*")
	if err != nil {
		return fmt.Errorf("save cache: %w", err)
	}
	werr := ix.writeCache(tmp)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), ix.cacheFile)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save cache %s: %w", ix.cacheFile, werr)
	}
	return nil
}

// maxDecodeBytes bounds the memory that decodeCache makes for what a
// cache file counts (string table entries, bindings, star imports,
// __all__ names, postings): every count is charged its elements' size
// before they are made. A count is already bounded by the bytes left, but
// an empty string or a binding of empty fields takes a byte or a few on
// disk and 16 or 144 bytes in memory, so a forged file of maxCacheBytes
// that passes the checksum could otherwise ask for gigabytes. Debian's
// torch 1.13 (37k names, a 2.9 MB file) decodes into 6.4 MB of these, so
// an index at MaxNamesPerIndex into about 170 MB, and at most 32 MB of
// postings.
const maxDecodeBytes = 512 << 20

type decoder struct {
	b    []byte
	off  int
	err  error
	strs []string
	made int64 // bytes charged by make (see maxDecodeBytes)
}

// charge accounts for n elements of size bytes about to be made, and
// fails past maxDecodeBytes.
func (d *decoder) charge(n int, size uintptr) bool {
	if d.err != nil {
		return false
	}
	d.made += int64(n) * int64(size)
	if d.made > maxDecodeBytes {
		d.err = fmt.Errorf("%w: it counts more than %d bytes of data", errBadCache, int64(maxDecodeBytes))
		return false
	}
	return true
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errBadCache
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.off += n
	return v
}

// count reads a length; every counted item takes at least one byte, so a
// count beyond the bytes left is corruption, not a reason to allocate.
func (d *decoder) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)-d.off) {
		d.fail()
		return 0
	}
	return int(v)
}

func (d *decoder) u32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail()
	}
	return uint32(v)
}

func (d *decoder) i32() int32 {
	v := d.uvarint()
	if v > 1<<31-1 {
		d.fail()
	}
	return int32(v)
}

func (d *decoder) str() string {
	id := d.uvarint()
	if id >= uint64(len(d.strs)) {
		d.fail()
		return ""
	}
	return d.strs[id]
}

func (d *decoder) binding(b *binding, nesting int) {
	if nesting > maxNesting {
		d.fail()
		return
	}
	b.name = d.str()
	k := d.uvarint()
	if k < uint64(KindModule) || k > uint64(KindImport) {
		d.fail()
	}
	b.kind = Kind(k)
	b.typeChecking = d.uvarint() == 1
	b.line, b.col, b.endLine = d.i32(), d.i32(), d.i32()
	b.docStart, b.docEnd = d.u32(), d.u32()
	b.sig, b.value, b.attr, b.decorators, b.docSummary = d.str(), d.str(), d.str(), d.str(), d.str()
	if n := d.count(); n > 0 && d.charge(n, unsafe.Sizeof(binding{})) {
		b.members = make([]binding, n)
		for i := range b.members {
			d.binding(&b.members[i], nesting+1)
		}
	}
}

func (d *decoder) file() (string, *fileData) {
	rel := d.str()
	fd := &fileData{}
	fd.docStart, fd.docEnd = d.u32(), d.u32()
	fd.docSummary = d.str()
	if n := d.count(); n > 0 && d.charge(n, unsafe.Sizeof(binding{})) {
		fd.bindings = make([]binding, n)
		for i := range fd.bindings {
			d.binding(&fd.bindings[i], 0)
		}
	}
	if n := d.count(); n > 0 && d.charge(n, unsafe.Sizeof(starImport{})) {
		fd.stars = make([]starImport, n)
		for i := range fd.stars {
			fd.stars[i] = starImport{module: d.str(), line: d.i32(), typeChecking: d.uvarint() == 1}
		}
	}
	if n := d.count(); n > 0 && d.charge(n, unsafe.Sizeof("")) {
		fd.all = make([]string, n)
		for i := range fd.all {
			fd.all[i] = d.str()
		}
	}
	flags := d.uvarint()
	fd.hasAll, fd.allDynamic, fd.identsAll = flags&1 != 0, flags&2 != 0, flags&4 != 0
	fd.idents = d.hashes()
	return rel, fd
}

// table reads a file's string table. One string holds the table's bytes;
// its entries are slices of it, so a file's strings take one allocation.
func (d *decoder) table() {
	n := d.count()
	if !d.charge(n, unsafe.Sizeof("")) {
		return
	}
	if cap(d.strs) < n {
		d.strs = make([]string, n)
	}
	d.strs = d.strs[:n]
	start := d.off
	for range n {
		l := d.count()
		if d.err != nil {
			return
		}
		d.off += l
	}
	blob := string(d.b[start:d.off])
	d.off = start
	for i := range d.strs {
		l := d.count()
		d.strs[i] = blob[d.off-start : d.off-start+l]
		d.off += l
	}
}

// hashes reads a file's postings: a count, then that many sorted 32-bit
// hashes.
func (d *decoder) hashes() []uint32 {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(d.b)-d.off)/4 {
		d.fail()
		return nil
	}
	if !d.charge(int(n), 4) {
		return nil
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(d.b[d.off:])
		d.off += 4
		if i > 0 && out[i] <= out[i-1] {
			d.fail() // not sorted: a binary search would miss
			return nil
		}
	}
	return out
}

// decodeCache checks data against this index's fingerprint and files and
// returns the data of every file, in ix.files order.
func (ix *Index) decodeCache(data []byte) ([]*fileData, error) {
	d := &decoder{b: data}
	if !bytes.HasPrefix(data, []byte(cacheMagic)) {
		return nil, errBadCache
	}
	d.off = len(cacheMagic)
	if d.uvarint() != cacheVersion {
		return nil, fmt.Errorf("%w: other format version", errBadCache)
	}
	n := d.count()
	if d.err != nil || string(data[d.off:d.off+n]) != ix.fingerprint {
		return nil, fmt.Errorf("%w: stale (site dir changed)", errBadCache)
	}
	d.off += n
	size := d.count()
	if d.err != nil || len(data)-d.off != size+4 {
		return nil, fmt.Errorf("%w: truncated", errBadCache)
	}
	sum := binary.LittleEndian.Uint32(data[d.off:])
	payload := data[d.off+4:]
	if crc32.ChecksumIEEE(payload) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadCache)
	}
	d = &decoder{b: payload}
	if d.count() != len(ix.files) {
		return nil, fmt.Errorf("%w: file count", errBadCache)
	}
	out := make([]*fileData, len(ix.files))
	for i, f := range ix.files {
		d.table()
		rel, fd := d.file()
		if d.err != nil {
			return nil, d.err
		}
		if rel != f.rel {
			return nil, fmt.Errorf("%w: file list differs at %s", errBadCache, f.rel)
		}
		out[i] = fd
	}
	if d.off != len(payload) {
		return nil, fmt.Errorf("%w: trailing bytes", errBadCache)
	}
	return out, nil
}

// maxCacheBytes bounds the cache file that loadCache reads. The file
// holds at most MaxNamesPerIndex names (about 20 bytes each), strings
// taken from the sources (at most the mirror's 256 MiB) and at most
// maxIdentsPerIndex hashes (32 MB): under 350 MB at the very worst, while
// torch 2.11's is 3.1 MB and Debian's torch 1.13's 2.9 MB. A larger file
// is not one Build wrote: it is refused, so the index reparses.
const maxCacheBytes = 512 << 20

// loadCache fills every file's data from the cache file, or changes
// nothing and says why not. The cache is read as hostile (another process
// may have put anything at its name): the file is opened without
// following a link at its name and without blocking, checked on the open
// descriptor to be a regular file and read through maxCacheBytes, so a
// named pipe, a link to /dev/zero or a huge file fails at once and the
// index is rebuilt.
func (ix *Index) loadCache() error {
	data, err := localfile.ReadNoFollow(ix.cacheFile, maxCacheBytes)
	if err != nil {
		return err
	}
	fds, err := ix.decodeCache(data)
	if err != nil {
		return err
	}
	for i, f := range ix.files {
		f.data.Store(fds[i])
	}
	return nil
}
