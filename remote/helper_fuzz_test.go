package remote

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// streamProcess is a Process whose stdout is a fixed byte stream: the
// helper's side of the protocol, replayed. Kill is counted so a test can
// tell a stream that was given up on from one that ended.
type streamProcess struct {
	stdout io.Reader
	mu     sync.Mutex
	kills  int
}

func (p *streamProcess) Stdin() io.WriteCloser { return nopWriteCloser{io.Discard} }
func (p *streamProcess) Stdout() io.Reader     { return p.stdout }
func (p *streamProcess) Stderr() io.Reader     { return bytes.NewReader(nil) }
func (p *streamProcess) Wait() error           { return nil }
func (p *streamProcess) Kill() error {
	p.mu.Lock()
	p.kills++
	p.mu.Unlock()
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// replayHelper builds a Helper, with calls 1..pending waiting, whose reply
// stream is stream; the process is already reaped, as it is when its
// output ends.
func replayHelper(stream []byte, pending int) (*Helper, *streamProcess, map[uint64]chan reply) {
	proc := &streamProcess{stdout: bytes.NewReader(stream)}
	h := &Helper{
		target: "fuzz", proc: proc, cancel: func() {}, limits: DefaultHelperLimits(),
		stderr: newRingBuffer(stderrLines), stderrDone: make(chan struct{}),
		stdin: proc.Stdin(), pending: make(map[uint64]*pendingCall),
		dead: make(chan struct{}), exited: make(chan struct{}), started: time.Now(),
	}
	close(h.stderrDone)
	close(h.exited)
	chans := make(map[uint64]chan reply)
	for id := uint64(1); id <= uint64(pending); id++ {
		ch := make(chan reply, 1)
		h.pending[id], chans[id] = &pendingCall{ch: ch, since: time.Now()}, ch
	}
	return h, proc, chans
}

func frameOf(body string) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(out, body...)
}

// FuzzHelperReplies replays arbitrary bytes as the helper's stdout to the
// reply reader: it must end (never block or spin), never panic, answer a
// waiting call at most once, and leave the helper dead with an error that
// says so, so no call waits forever.
func FuzzHelperReplies(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	for _, s := range [][]byte{
		frameOf(`{"id":1,"result":{"ok":true}}`),
		append(frameOf(`{"id":2,"result":null}`), frameOf(`{"id":1,"error":{"type":"ValueError","message":"m","traceback":"tb"}}`)...),
		append(frameOf(`{"id":1,"result":1}`), frameOf(`{"id":1,"result":2}`)...), // the same id twice
		frameOf(`{"id":-1,"result":1}`),
		frameOf(`{"id":1.5}`),
		frameOf(`not json`),
		{0xff, 0xff, 0xff, 0xff},
		{0, 0, 0, 9, '{'},
		{0, 0},
		nil,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		deadline.Start(t, stream)
		h, _, chans := replayHelper(stream, 3)
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			h.readLoop(bufio.NewReader(bytes.NewReader(stream)))
		}()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("reply reader still running 10s after its stream ended")
		}
		h.die(nil) // what the process waiter does once the process is reaped
		select {
		case <-h.Done():
		default:
			t.Fatal("helper not marked dead")
		}
		if h.Err() == nil {
			t.Fatal("a dead helper reports no error")
		}
		for id, ch := range chans {
			if n := len(ch); n > 1 {
				t.Fatalf("call %d answered %d times", id, n)
			}
		}
	})
}
