package remote

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ProtocolVersion is the helper protocol this package speaks.
const ProtocolVersion = 1

// maxFrame bounds one frame from the helper; larger ones mean a broken
// stream, not a big answer.
const maxFrame = 64 << 20

// stderrLines is how many trailing stderr lines are kept for error messages.
const stderrLines = 50

// Hello is the helper's first frame: who is answering on the target.
type Hello struct {
	Protocol       int      `json:"protocol"`
	Python         string   `json:"python"` // e.g. "3.11.2"
	Implementation string   `json:"implementation"`
	Executable     string   `json:"executable"`
	Prefix         string   `json:"prefix"`
	BasePrefix     string   `json:"base_prefix"`
	SysPath        []string `json:"sys_path"`
	PID            int      `json:"pid"`
	Platform       string   `json:"platform"`
	Cwd            string   `json:"cwd"`
}

// RemoteError is an exception raised by a helper method on the target.
type RemoteError struct {
	Target    string // the target's name
	Method    string
	Type      string `json:"type"` // Python exception type, or "UnknownMethod"
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("helper on target %q: %s: %s: %s", e.Target, e.Method, e.Type, e.Message)
}

// IsRemoteError reports whether err is a RemoteError of the given Python
// type (any type when typ is empty).
func IsRemoteError(err error, typ string) bool {
	var re *RemoteError
	return errors.As(err, &re) && (typ == "" || re.Type == typ)
}

// ErrHelperExited is wrapped by errors of calls that failed because the
// helper process ended.
var ErrHelperExited = errors.New("helper exited")

type request struct {
	ID     uint64 `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params"`
}

type reply struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *RemoteError    `json:"error"`
}

// Helper is one running resident helper process. Calls on it are
// multiplexed by id and may be answered out of order.
type Helper struct {
	target string
	proc   Process
	cancel context.CancelFunc
	hello  Hello
	stderr *ringBuffer
	// stderrDone is closed when the stderr stream has been drained.
	stderrDone chan struct{}

	writeMu sync.Mutex
	stdin   io.WriteCloser

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan reply
	dying   bool
	closing bool
	dead    chan struct{} // closed once the helper can answer no more
	deadErr error
	exited  chan struct{} // closed once the process has been reaped
	started time.Time
}

// StartHelper starts the resident helper on t and waits, under ctx, for its
// hello. The process lives until Close (or until it dies); ctx only bounds
// the start.
func StartHelper(ctx context.Context, t Target, spec Spec) (*Helper, error) {
	procCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	proc, err := startResident(procCtx, t, bootstrapCommand(spec, "torchlsp_helper"))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start helper on target %q: %w", t.Name(), err)
	}
	h := &Helper{
		target:     t.Name(),
		proc:       proc,
		cancel:     cancel,
		stderr:     newRingBuffer(stderrLines),
		stderrDone: make(chan struct{}),
		stdin:      proc.Stdin(),
		pending:    make(map[uint64]chan reply),
		dead:       make(chan struct{}),
		exited:     make(chan struct{}),
		started:    time.Now(),
	}
	go func() {
		defer close(h.stderrDone)
		h.stderr.readFrom(proc.Stderr())
	}()

	type helloResult struct {
		hello Hello
		err   error
	}
	out := bufio.NewReaderSize(proc.Stdout(), 64<<10)
	got := make(chan helloResult, 1)
	go func() {
		if err := SendProgram(h.stdin, helperSource); err != nil {
			got <- helloResult{err: err}
			return
		}
		body, err := readFrame(out)
		if err != nil {
			got <- helloResult{err: fmt.Errorf("read hello: %w", err)}
			return
		}
		var hello Hello
		if err := json.Unmarshal(body, &hello); err != nil {
			got <- helloResult{err: fmt.Errorf("decode hello: %w", err)}
			return
		}
		got <- helloResult{hello: hello}
	}()
	var res helloResult
	select {
	case res = <-got:
	case <-ctx.Done():
		res.err = ctx.Err()
	}
	if res.err == nil && res.hello.Protocol != ProtocolVersion {
		res.err = fmt.Errorf("helper speaks protocol %d, torchlsp speaks %d", res.hello.Protocol, ProtocolVersion)
	}
	if res.err != nil {
		proc.Kill()
		cancel()
		proc.Wait()
		// The interpreter's last words say why it did not start (no such
		// file, a syntax error): wait for the stderr reader to take them.
		t := time.NewTimer(time.Second)
		select {
		case <-h.stderrDone:
		case <-t.C:
		}
		t.Stop()
		return nil, fmt.Errorf("start helper on target %q: %w%s", h.target, res.err, h.stderrTail())
	}
	h.hello = res.hello
	go h.readLoop(out)
	go func() {
		err := proc.Wait()
		close(h.exited)
		h.die(err)
	}()
	return h, nil
}

// Hello returns the helper's handshake.
func (h *Helper) Hello() Hello { return h.hello }

// Done is closed when the helper has exited or been closed.
func (h *Helper) Done() <-chan struct{} { return h.dead }

// Err returns why the helper stopped, or nil while it runs.
func (h *Helper) Err() error {
	select {
	case <-h.dead:
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.deadErr
	default:
		return nil
	}
}

// StderrTail returns the last lines the helper wrote to stderr.
func (h *Helper) StderrTail() []string { return h.stderr.lines() }

// Call sends one request and decodes the result into result (which may be
// nil). A cancelled ctx abandons the wait; the late reply is dropped.
func (h *Helper) Call(ctx context.Context, method string, params, result any) error {
	if params == nil {
		params = struct{}{}
	}
	ch := make(chan reply, 1)
	h.mu.Lock()
	if h.dying {
		h.mu.Unlock()
		<-h.dead
		return fmt.Errorf("%s: %w", method, h.Err())
	}
	h.nextID++
	id := h.nextID
	h.pending[id] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.pending, id)
		h.mu.Unlock()
	}()

	frame, err := encodeFrame(request{ID: id, Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if err := h.write(ctx, frame); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s on target %q: %w", method, h.target, ctx.Err())
		}
		// A broken pipe means the helper is going; report why it went.
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-h.dead:
			return fmt.Errorf("%s: %w", method, h.Err())
		case <-t.C:
		}
		return fmt.Errorf("%s: send to helper on target %q: %w", method, h.target, err)
	}

	select {
	case r := <-ch:
		if r.Error != nil {
			r.Error.Target, r.Error.Method = h.target, method
			return r.Error
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(r.Result, result); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
		return nil
	case <-h.dead:
		// A reply that raced the death still counts.
		select {
		case r := <-ch:
			if r.Error == nil {
				if result == nil {
					return nil
				}
				return json.Unmarshal(r.Result, result)
			}
		default:
		}
		return fmt.Errorf("%s: %w", method, h.Err())
	case <-ctx.Done():
		return fmt.Errorf("%s on target %q: %w", method, h.target, ctx.Err())
	}
}

// write sends a frame; a write blocked on a full pipe gives up with ctx.
func (h *Helper) write(ctx context.Context, frame []byte) error {
	done := make(chan error, 1)
	go func() {
		h.writeMu.Lock()
		defer h.writeMu.Unlock()
		_, err := h.stdin.Write(frame)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-h.dead:
		return ErrHelperExited
	}
}

// Close ends the helper: stdin is closed so it leaves by itself, and the
// process group is killed if it has not gone shortly after.
func (h *Helper) Close() error {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.writeMu.Lock()
	h.stdin.Close()
	h.writeMu.Unlock()
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-h.dead:
	case <-t.C:
	}
	h.proc.Kill()
	h.cancel()
	h.die(nil)
	return nil
}

func (h *Helper) readLoop(r *bufio.Reader) {
	for {
		body, err := readFrame(r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				h.proc.Kill()
				h.die(fmt.Errorf("read reply: %w", err))
				return
			}
			// Prefer the exit status, which the waiter reports.
			t := time.NewTimer(time.Second)
			defer t.Stop()
			select {
			case <-h.exited:
			case <-t.C:
				h.die(errors.New("its output closed"))
			}
			return
		}
		var rep reply
		if err := json.Unmarshal(body, &rep); err != nil {
			h.proc.Kill()
			h.die(fmt.Errorf("decode reply: %w", err))
			return
		}
		h.mu.Lock()
		ch := h.pending[rep.ID]
		h.mu.Unlock()
		if ch != nil {
			// The channel holds one reply. A second reply for the same id
			// (a confused or hostile helper) is dropped rather than
			// blocking this loop, which would starve every other call.
			select {
			case ch <- rep:
			default:
			}
		}
	}
}

// die records the first cause of the helper's end and fails every call
// still waiting.
func (h *Helper) die(cause error) {
	h.mu.Lock()
	if h.dying {
		h.mu.Unlock()
		return
	}
	h.dying = true
	closing := h.closing
	h.mu.Unlock()

	h.proc.Kill()
	// The last stderr lines usually say why; give them a moment to arrive.
	t := time.NewTimer(500 * time.Millisecond)
	select {
	case <-h.stderrDone:
	case <-t.C:
	}
	t.Stop()
	var msg string
	switch {
	case closing:
		msg = fmt.Sprintf("helper on target %q was closed", h.target)
	case cause != nil:
		msg = fmt.Sprintf("helper on target %q exited (%v)%s", h.target, cause, h.stderrTail())
	default:
		msg = fmt.Sprintf("helper on target %q exited%s", h.target, h.stderrTail())
	}
	h.mu.Lock()
	h.deadErr = &exitError{msg: msg}
	h.mu.Unlock()
	close(h.dead)
}

// exitError is the error of calls that failed because the helper ended.
type exitError struct{ msg string }

func (e *exitError) Error() string { return e.msg }
func (e *exitError) Unwrap() error { return ErrHelperExited }

func (h *Helper) stderrTail() string {
	lines := h.stderr.lines()
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return ": " + strings.Join(lines, "\n")
}

func encodeFrame(v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	frame := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(frame, uint32(len(body)))
	copy(frame[4:], body)
	return frame, nil
}

func readFrame(r io.Reader) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("truncated frame header: %w", err)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d (stream corrupted?)", n, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("truncated frame: %w", err)
	}
	return body, nil
}

// ringBuffer keeps the last lines of a stream.
type ringBuffer struct {
	mu   sync.Mutex
	buf  []string
	next int
	full bool
}

func newRingBuffer(n int) *ringBuffer { return &ringBuffer{buf: make([]string, n)} }

const maxStderrLine = 1024

func (b *ringBuffer) readFrom(r io.Reader) {
	br := bufio.NewReaderSize(r, maxStderrLine)
	var long bool // inside a line already cut short
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			complete := chunk[len(chunk)-1] == '\n'
			if !long {
				b.add(strings.TrimRight(string(chunk), "\r\n"))
			}
			long = !complete
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func (b *ringBuffer) add(line string) {
	b.mu.Lock()
	b.buf[b.next] = line
	b.next = (b.next + 1) % len(b.buf)
	if b.next == 0 {
		b.full = true
	}
	b.mu.Unlock()
}

func (b *ringBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.full {
		return append([]string(nil), b.buf[:b.next]...)
	}
	return append(append([]string(nil), b.buf[b.next:]...), b.buf[:b.next]...)
}
