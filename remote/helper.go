package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ProtocolVersion is the helper protocol this package speaks.
const ProtocolVersion = 1

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
	// GILDisabled: the interpreter is built without the GIL (sysconfig's
	// Py_GIL_DISABLED is 1). GILEnabled: whether the GIL was on when the
	// helper started (sys._is_gil_enabled(); PYTHON_GIL=1 turns it back
	// on), nil where the interpreter cannot say.
	GILDisabled bool  `json:"gil_disabled"`
	GILEnabled  *bool `json:"gil_enabled"`
}

// FreeThreaded reports whether the interpreter runs Python threads at
// once: built without the GIL, and not started with it turned back on.
func (h Hello) FreeThreaded() bool {
	return h.GILDisabled && (h.GILEnabled == nil || !*h.GILEnabled)
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

// ErrHelperHung is wrapped (with ErrHelperExited) by errors of calls that
// failed because the helper stopped answering, even pings, and was killed.
var ErrHelperHung = errors.New("helper hung")

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
// multiplexed by id and may be answered out of order. A watchdog pings a
// helper that leaves a call unanswered and says nothing else, and kills
// it when the ping goes unanswered too (see HelperLimits.ProbeAfter).
type Helper struct {
	target string
	proc   Process
	cancel context.CancelFunc
	hello  Hello
	limits HelperLimits
	stderr *ringBuffer
	// stderrDone is closed when the stderr stream has been drained.
	stderrDone chan struct{}
	// lastHeard is when bytes last came from the helper (unix ns): a
	// large reply still arriving over a slow link is no silence.
	lastHeard atomic.Int64

	writeMu sync.Mutex // serialises writes to stdin
	stdin   io.WriteCloser

	mu      sync.Mutex // guards the fields below
	nextID  uint64
	pending map[uint64]*pendingCall
	dying   bool
	closing bool
	dead    chan struct{} // closed once the helper can answer no more
	deadErr error
	exited  chan struct{} // closed once the process has been reaped
	started time.Time
}

// pendingCall is a call waiting for its reply.
type pendingCall struct {
	ch    chan reply // holds the one reply
	since time.Time
	probe bool // the watchdog's own ping
}

// StartHelper starts the resident helper on t and waits, under ctx, for its
// hello. The process lives until Close (or until it dies); ctx only bounds
// the start.
func StartHelper(ctx context.Context, t Target, spec Spec) (*Helper, error) {
	return StartHelperWith(ctx, t, spec, HelperLimits{})
}

// StartHelperWith is StartHelper with explicit limits; zero fields take
// DefaultHelperLimits.
func StartHelperWith(ctx context.Context, t Target, spec Spec, limits HelperLimits) (*Helper, error) {
	limits = limits.withDefaults()
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
		limits:     limits,
		stdin:      proc.Stdin(),
		pending:    make(map[uint64]*pendingCall),
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
	out := bufio.NewReaderSize(&heardReader{r: proc.Stdout(), last: &h.lastHeard}, 64<<10)
	got := make(chan helloResult, 1)
	go func() {
		if err := SendProgram(h.stdin, helperSource); err != nil {
			got <- helloResult{err: err}
			return
		}
		body, err := readFrame(out, limits.MaxFrame)
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
	h.hello = res.hello.bounded(limits)
	h.lastHeard.Store(time.Now().UnixNano())
	go h.readLoop(out)
	go h.watch()
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
	return h.call(ctx, method, params, result, false)
}

func (h *Helper) call(ctx context.Context, method string, params, result any, probe bool) error {
	if params == nil {
		params = struct{}{}
	}
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, h.limits.MaxCall)
	defer cancel()
	err := h.callCtx(ctx, method, params, result, probe)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && outer.Err() == nil {
		return fmt.Errorf("%s on target %q: no answer within %s, the limit of one call (the helper still answers pings, so this call is stuck there): %w",
			method, h.target, h.limits.MaxCall, context.DeadlineExceeded)
	}
	return err
}

func (h *Helper) callCtx(ctx context.Context, method string, params, result any, probe bool) error {
	ch := make(chan reply, 1)
	h.mu.Lock()
	if h.dying {
		h.mu.Unlock()
		<-h.dead
		return fmt.Errorf("%s: %w", method, h.Err())
	}
	h.nextID++
	id := h.nextID
	h.pending[id] = &pendingCall{ch: ch, since: time.Now(), probe: probe}
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

// watch is the helper's watchdog: while a call has waited ProbeAfter with
// nothing at all heard from the helper, it sends a ping, which the helper
// answers on its reader thread even while another thread imports torch.
// A ping unanswered for ProbeTimeout means the helper is stopped or
// deadlocked: it is killed, its calls fail with ErrHelperHung, and the
// Client starts a new one.
func (h *Helper) watch() {
	tick := min(max(h.limits.ProbeAfter/5, 10*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-h.dead:
			return
		case <-t.C:
		}
		waited, ok := h.oldestCall()
		quiet := time.Since(time.Unix(0, h.lastHeard.Load()))
		if !ok || waited < h.limits.ProbeAfter || quiet < h.limits.ProbeAfter {
			continue
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), h.limits.ProbeTimeout)
		err := h.call(ctx, "ping", nil, nil, true)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			continue // answered, or the helper died anyway
		}
		if time.Unix(0, h.lastHeard.Load()).After(sent) {
			continue // it spoke meanwhile: busy, not hung
		}
		// die kills the process once the cause is set: killing it first
		// let the reader see the exit and name it ("signal: killed"), so
		// the call was not retried as a hang.
		h.die(&hungCause{waited: waited + time.Since(sent), probe: h.limits.ProbeTimeout})
		return
	}
}

// oldestCall returns how long the longest-waiting call (pings of the
// watchdog aside) has waited.
func (h *Helper) oldestCall() (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var oldest time.Time
	for _, p := range h.pending {
		if !p.probe && (oldest.IsZero() || p.since.Before(oldest)) {
			oldest = p.since
		}
	}
	if oldest.IsZero() {
		return 0, false
	}
	return time.Since(oldest), true
}

// heardReader notes when bytes arrive.
type heardReader struct {
	r    io.Reader
	last *atomic.Int64
}

func (h *heardReader) Read(b []byte) (int, error) {
	n, err := h.r.Read(b)
	if n > 0 {
		h.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// hungCause is why a hung helper was killed.
type hungCause struct {
	waited, probe time.Duration
}

func (c *hungCause) Error() string {
	return fmt.Sprintf("no reply to a call for %s and none to a ping within %s", c.waited.Round(time.Millisecond), c.probe)
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
		body, err := readFrame(r, h.limits.MaxFrame)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				// die records the cause before it kills the process: a
				// kill first lets the waiter name the exit instead.
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
			h.die(fmt.Errorf("decode reply: %w", err))
			return
		}
		if rep.Error != nil {
			rep.Error.bound(h.limits)
		}
		h.mu.Lock()
		p := h.pending[rep.ID]
		h.mu.Unlock()
		if p != nil {
			// The channel holds one reply. A second reply for the same id
			// (a confused or hostile helper) is dropped rather than
			// blocking this loop, which would starve every other call.
			select {
			case p.ch <- rep:
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
	var hung *hungCause
	switch {
	case closing:
		msg = fmt.Sprintf("helper on target %q was closed", h.target)
	case errors.As(cause, &hung):
		msg = fmt.Sprintf("helper on target %q stopped answering (%v: is it stopped or deadlocked?); it was killed, and the next request starts a new one%s",
			h.target, hung, h.stderrTail())
	case cause != nil:
		msg = fmt.Sprintf("helper on target %q exited (%v)%s", h.target, cause, h.stderrTail())
	default:
		msg = fmt.Sprintf("helper on target %q exited%s", h.target, h.stderrTail())
	}
	h.mu.Lock()
	h.deadErr = &exitError{msg: msg, hung: hung != nil}
	h.mu.Unlock()
	close(h.dead)
}

// Hung reports whether the helper was killed for not answering.
func (h *Helper) Hung() bool { return errors.Is(h.Err(), ErrHelperHung) }

// exitError is the error of calls that failed because the helper ended.
type exitError struct {
	msg  string
	hung bool // killed for not answering
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) Unwrap() error { return ErrHelperExited }

// Is makes a hung helper's error match ErrHelperHung as well.
func (e *exitError) Is(target error) bool { return e.hung && target == ErrHelperHung }

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

// readFrame reads one frame of at most limit bytes. The body is read as it
// comes, so a length that the helper announces but never sends costs no
// memory.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("truncated frame header: %w", err)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("the helper sent a frame of %s, over the limit of %s (a broken or hostile helper): it was stopped", byteSize(int64(n)), byteSize(int64(limit)))
	}
	var buf bytes.Buffer
	buf.Grow(int(min(n, 64<<10)))
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("truncated frame: %w", err)
	}
	return buf.Bytes(), nil
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
