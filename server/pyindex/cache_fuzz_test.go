package pyindex

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// FuzzDecodeCache hands the cache decoder arbitrary payloads behind a valid
// header and checksum (a corrupt file that happens to pass the CRC, or a
// hostile one): decoding must reject them with errBadCache or yield data
// that the resolver can walk without panicking.
func FuzzDecodeCache(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	ix := buildWithCache(f, copyTree(f, fixtureSite), "")
	enc := encodedCache(ix)
	d := &decoder{b: enc, off: len(cacheMagic)}
	d.uvarint()
	d.off += d.count()
	d.count()
	if d.err != nil {
		f.Fatal(d.err)
	}
	header, payload := enc[:d.off], enc[d.off+4:]
	sizeLen := binary.PutUvarint(make([]byte, binary.MaxVarintLen64), uint64(len(payload)))
	reseal := func(p []byte) []byte {
		out := append([]byte(nil), header[:len(header)-sizeLen]...)
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(p))
		return append(out, p...)
	}
	f.Add(payload)
	f.Add(payload[:len(payload)/2])
	f.Add([]byte{0x80})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		deadline.Start(t, p)
		fds, err := ix.decodeCache(reseal(p))
		if err != nil {
			if !errors.Is(err, errBadCache) {
				t.Fatalf("error %v does not wrap errBadCache", err)
			}
			return
		}
		for i, f := range ix.files {
			f.data.Store(fds[i])
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, q := range roundTripNames {
				_, _ = ix.Resolve(q)
				_, _ = ix.Members(q)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("resolving over decoded cache data did not finish in 10s")
		}
	})
}
