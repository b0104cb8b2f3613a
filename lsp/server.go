package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Options configure Serve. The zero value is usable.
type Options struct {
	// Logger receives the server's own log; nil discards it. Never log to
	// stdout when serving over stdio.
	Logger *zap.Logger
	// Version is reported to the client as serverInfo.version.
	Version string
	// MaxConcurrentRequests bounds the requests the engine works on at
	// once; later ones wait (and can still be cancelled). Default 8.
	MaxConcurrentRequests int
	// ClientPollInterval is how often the client's process, when
	// initialize named one, is checked for life. Default 2s.
	ClientPollInterval time.Duration
	// ShutdownTimeout bounds Engine.Shutdown when the connection ends
	// without a shutdown request. Default 10s.
	ShutdownTimeout time.Duration
}

// NewStderrLogger returns a logger writing JSON lines to stderr at level
// ("debug", "info", "warn", "error").
func NewStderrLogger(level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(os.Stderr), lvl)
	return zap.New(core), nil
}

// Stdio is the process's stdin and stdout as one connection, for serving
// the editor that started this process.
func Stdio() io.ReadWriteCloser { return stdio{} }

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return errors.Join(os.Stdin.Close(), os.Stdout.Close()) }

// Lifecycle states; the read loop is the only writer.
const (
	stateNew int32 = iota
	stateInitialized
	stateShutdown
)

// inflight is a request being worked on.
type inflight struct {
	cancel          context.CancelFunc
	clientCancelled atomic.Bool
}

// lspServer is one connection's server.
type lspServer struct {
	engine Engine
	opts   Options
	log    *zap.Logger

	conn   jsonrpc2.Conn
	client *Client

	ctx    context.Context // ends with the connection; parent of every request
	cancel context.CancelFunc

	state atomic.Int32
	// lifeMu is held (read) while a message is handled; closing, set
	// under the write lock, stops handling for good, so nothing starts
	// work after Serve began waiting for the work to end.
	lifeMu  sync.RWMutex
	closing bool

	sem         chan struct{}
	requests    sync.WaitGroup // request and background goroutines
	inflightMu  sync.Mutex
	inflight    map[jsonrpc2.ID]*inflight
	configMu    sync.Mutex // one configuration delivery at a time
	shutdownErr error
	shutdownOne sync.Once

	exited     chan struct{} // closed by the exit notification
	exitOnce   sync.Once
	exitCode   atomic.Int32
	clientGone chan struct{} // closed by the watchdog
}

// Serve runs a language server for one client on rwc until the client
// sends exit, the connection ends, the client's process dies, or ctx is
// done. It returns the exit code LSP prescribes: 0 when the client asked
// for shutdown before the end, else 1. err says why the server ended
// other than by exit or a closed connection.
func Serve(ctx context.Context, rwc io.ReadWriteCloser, engine Engine, opts Options) (exitCode int, err error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxConcurrentRequests <= 0 {
		opts.MaxConcurrentRequests = 8
	}
	if opts.ClientPollInterval <= 0 {
		opts.ClientPollInterval = 2 * time.Second
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 10 * time.Second
	}
	s := &lspServer{
		engine:     engine,
		opts:       opts,
		log:        opts.Logger,
		sem:        make(chan struct{}, opts.MaxConcurrentRequests),
		inflight:   make(map[jsonrpc2.ID]*inflight),
		exited:     make(chan struct{}),
		clientGone: make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer s.cancel()
	s.exitCode.Store(1)

	s.conn = jsonrpc2.NewConn(newFrameStream(rwc, s.log))
	s.client = newClient(s.ctx, s.conn, s.log, engine, newFileMappers(64, fileMapperBytes))
	s.conn.Go(s.ctx, s.handle)

	select {
	case <-s.conn.Done():
	case <-s.exited:
	case <-s.clientGone:
		err = errors.New("client process exited")
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.lifeMu.Lock()
	s.closing = true
	s.lifeMu.Unlock()
	s.cancel()
	_ = s.conn.Close()
	// The read loop is not waited for: a blocking read of stdin does not
	// end when stdin is closed, and nothing it reads is handled now.
	select {
	case <-s.conn.Done():
		if connErr := s.conn.Err(); err == nil && connErr != nil && !isClosedErr(connErr) && !s.hasExited() {
			err = fmt.Errorf("reading from client: %w", connErr)
		}
	default:
	}
	s.requests.Wait()
	s.client.close()
	if err := s.shutdownEngine(context.Background()); err != nil {
		s.log.Warn("engine shutdown", zap.Error(err))
	}

	if s.hasExited() {
		return int(s.exitCode.Load()), nil
	}
	if err == nil && s.state.Load() == stateShutdown {
		return 0, nil
	}
	return 1, err
}

func (s *lspServer) hasExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed)
}

// shutdownEngine calls Engine.Shutdown once.
func (s *lspServer) shutdownEngine(ctx context.Context) error {
	s.shutdownOne.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
		defer cancel()
		defer s.recoverTo("shutdown", func(err error) { s.shutdownErr = err })
		s.shutdownErr = s.engine.Shutdown(ctx)
	})
	return s.shutdownErr
}

// recoverTo recovers a panic, logs it with its stack, and passes it on as
// an error. Call it deferred.
func (s *lspServer) recoverTo(method string, onPanic func(error)) {
	if v := recover(); v != nil {
		s.log.Error("panic in handler", zap.String("method", method), zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
		onPanic(panicError(method, v))
	}
}

// handle is the connection's handler, called on the read loop for every
// request and notification in arrival order. It never returns an error:
// jsonrpc2 would close the connection.
func (s *lspServer) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
	s.lifeMu.RLock()
	defer s.lifeMu.RUnlock()
	if s.closing {
		return nil
	}
	call, isCall := req.(*jsonrpc2.Call)
	method := req.Method()
	replyOnce := s.replier(reply, method)
	defer s.recoverTo(method, func(err error) {
		if isCall {
			replyOnce(nil, err)
		}
	})

	switch method {
	case "$/cancelRequest":
		s.cancelRequest(req.Params())
		return nil
	case "exit":
		s.exit()
		return nil
	}

	switch s.state.Load() {
	case stateNew:
		if method == "initialize" && isCall {
			s.initialize(ctx, replyOnce, req.Params())
			return nil
		}
		if isCall {
			replyOnce(nil, jsonrpc2.Errorf(jsonrpc2.ServerNotInitialized, "%s before initialize", method))
			return nil
		}
		s.log.Debug("notification before initialize dropped", zap.String("method", method))
		return nil
	case stateShutdown:
		if isCall {
			replyOnce(nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "%s after shutdown", method))
			return nil
		}
		s.log.Debug("notification after shutdown dropped", zap.String("method", method))
		return nil
	}

	if isCall {
		run, err := s.prepareCall(ctx, method, req.Params())
		if err != nil {
			replyOnce(nil, err)
			return nil
		}
		s.dispatch(call.ID(), method, replyOnce, run)
		return nil
	}
	if err := s.notification(ctx, method, req.Params()); err != nil {
		s.log.Warn("notification failed", zap.String("method", method), zap.Error(err))
	}
	return nil
}

// replyFunc sends a request's one reply.
type replyFunc func(result any, err error)

// replier wraps jsonrpc2's replier: one reply per request, sent on the
// connection's context so that a cancelled request is still answered.
func (s *lspServer) replier(reply jsonrpc2.Replier, method string) replyFunc {
	var once sync.Once
	return func(result any, err error) {
		once.Do(func() {
			if err := reply(s.ctx, result, err); err != nil {
				s.log.Debug("reply not sent", zap.String("method", method), zap.Error(err))
			}
		})
	}
}

// callRunner does a request's work off the read loop.
type callRunner func(ctx context.Context) (any, error)

// prepareCall decodes a request and converts its positions on the read
// loop, against the documents as the messages before it left them, and
// returns the work to run concurrently. Errors are the reply.
func (s *lspServer) prepareCall(ctx context.Context, method string, params json.RawMessage) (callRunner, error) {
	switch method {
	case "initialize":
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "initialize sent twice")
	case "shutdown":
		return s.shutdown(ctx)
	case "textDocument/hover":
		return s.hover(ctx, params)
	case "textDocument/definition":
		return s.definition(ctx, params)
	case "textDocument/implementation":
		return s.implementation(ctx, params)
	case "textDocument/references":
		return s.references(ctx, params)
	case "textDocument/documentHighlight":
		return s.documentHighlight(ctx, params)
	case "textDocument/documentSymbol":
		return s.documentSymbol(ctx, params)
	case "workspace/symbol":
		return s.workspaceSymbol(ctx, params)
	case "textDocument/prepareCallHierarchy":
		return s.prepareCallHierarchy(ctx, params)
	case "callHierarchy/incomingCalls":
		return s.incomingCalls(ctx, params)
	case "callHierarchy/outgoingCalls":
		return s.outgoingCalls(ctx, params)
	case "textDocument/codeAction":
		return s.codeAction(ctx, params)
	case "textDocument/documentLink":
		return s.documentLink(ctx, params)
	case "workspace/executeCommand":
		return s.executeCommand(ctx, params)
	}
	return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "method not found: %s", method)
}

// notification handles a notification on the read loop.
func (s *lspServer) notification(ctx context.Context, method string, params json.RawMessage) error {
	switch method {
	case "initialized":
		return s.initialized(ctx)
	case "textDocument/didOpen":
		return s.didOpen(ctx, params)
	case "textDocument/didChange":
		return s.didChange(ctx, params)
	case "textDocument/didClose":
		return s.didClose(ctx, params)
	case "textDocument/didSave":
		return s.didSave(ctx, params)
	case "workspace/didChangeConfiguration":
		return s.didChangeConfiguration(ctx, params)
	case "window/workDoneProgress/cancel":
		var p tokenParams
		if err := decodeParams(params, &p); err != nil {
			return err
		}
		s.client.cancelProgress(p.Token)
		return nil
	}
	if len(method) >= 2 && method[:2] == "$/" {
		return nil // optional protocol notifications may be ignored
	}
	s.log.Debug("unknown notification ignored", zap.String("method", method))
	return nil
}

// dispatch runs a request concurrently, at most MaxConcurrentRequests at
// a time, cancellable by $/cancelRequest while waiting or running.
func (s *lspServer) dispatch(id jsonrpc2.ID, method string, reply replyFunc, run callRunner) {
	ctx, cancel := context.WithCancel(s.ctx)
	req := &inflight{cancel: cancel}
	s.inflightMu.Lock()
	s.inflight[id] = req
	s.inflightMu.Unlock()

	s.requests.Add(1)
	go func() {
		defer s.requests.Done()
		defer func() {
			s.inflightMu.Lock()
			delete(s.inflight, id)
			s.inflightMu.Unlock()
			cancel()
		}()
		defer s.recoverTo(method, func(err error) { reply(nil, err) })

		var result any
		var err error
		select {
		case s.sem <- struct{}{}:
			func() {
				defer func() { <-s.sem }()
				result, err = run(ctx)
			}()
		case <-ctx.Done():
			err = ctx.Err()
		}
		reply(result, replyError(err, req.clientCancelled.Load()))
	}()
}

// cancelRequest handles $/cancelRequest. Clients send numeric ids, which
// arrive as JSON numbers; jsonrpc2's own canceller only matches int32 and
// string IDs, so the id is converted here.
func (s *lspServer) cancelRequest(params json.RawMessage) {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if err := decodeParams(params, &p); err != nil {
		s.log.Warn("bad $/cancelRequest", zap.Error(err))
		return
	}
	id, ok := parseID(p.ID)
	if !ok {
		s.log.Warn("bad $/cancelRequest id", zap.ByteString("id", p.ID))
		return
	}
	s.inflightMu.Lock()
	req := s.inflight[id]
	s.inflightMu.Unlock()
	if req != nil {
		req.clientCancelled.Store(true)
		req.cancel()
	}
}

// parseID reads a request id as a JSON number (integral, in int32 range,
// as jsonrpc2 stores it) or string.
func parseID(raw json.RawMessage) (jsonrpc2.ID, bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return jsonrpc2.ID{}, false
	}
	switch v := v.(type) {
	case float64:
		if v != float64(int32(v)) {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.NewNumberID(int32(v)), true
	case string:
		return jsonrpc2.NewStringID(v), true
	}
	return jsonrpc2.ID{}, false
}

// decodeParams decodes params into v; a mismatch is InvalidParams.
func decodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 {
		return invalidParams("missing params")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return invalidParams("invalid params: %v", err)
	}
	return nil
}
