package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.uber.org/zap"
)

// maxContentLength bounds one message body. Larger bodies are skipped and
// answered with an error rather than buffered.
const maxContentLength = 64 << 20

// contentLengthHeader is matched case-insensitively when resynchronising.
const contentLengthHeader = "content-length:"

// errBadFrame marks input that cannot be framed as a message. The stream
// answers it and carries on; it never ends the connection.
var errBadFrame = errors.New("bad frame")

// frameStream is a jsonrpc2.Stream with LSP base-protocol framing that
// survives bad input. The stock jsonrpc2 stream returns an error for a bad
// header or an undecodable body, and jsonrpc2's connection then closes
// itself; this one answers such input with a JSON-RPC error (ParseError or
// InvalidRequest, with a null id when none can be read) and reads on,
// resynchronising on the next Content-Length header when the framing
// itself was broken.
type frameStream struct {
	in     *bufio.Reader
	out    io.Writer
	closer io.Closer
	log    *zap.Logger

	wmu sync.Mutex // one frame at a time on out

	maxBody int64 // bodies longer than this are skipped

	// lost is set when the framing broke and the next message must be
	// found by resync; resynced is set when resync consumed the next
	// frame's "Content-Length:" so the next header line holds only its
	// value.
	lost, resynced bool
}

func newFrameStream(rwc io.ReadWriteCloser, log *zap.Logger) *frameStream {
	return &frameStream{in: bufio.NewReaderSize(rwc, 64<<10), out: rwc, closer: rwc, log: log, maxBody: maxContentLength}
}

// Read returns the next well-formed message. Malformed input is answered
// and skipped; only I/O errors (io.EOF included) are returned.
func (s *frameStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		body, n, err := s.readFrame()
		if errors.Is(err, errBadFrame) {
			s.log.Warn("dropping malformed frame", zap.Error(err))
			// Answer first: the client may wait for the answer before it
			// sends the message the resynchronisation looks for.
			s.writeError(json.RawMessage("null"), jsonrpc2.ParseError, err.Error())
			if s.lost {
				if err := s.resync(); err != nil {
					return nil, n, err
				}
			}
			continue
		}
		if err != nil {
			return nil, n, err
		}
		msg, err := decodeMessage(body)
		if err != nil {
			s.answerUndecodable(body, err)
			continue
		}
		return msg, n, nil
	}
}

// readFrame reads one header block and its body.
func (s *frameStream) readFrame() ([]byte, int64, error) {
	var total int64
	length := int64(-1)
	sawHeader := false
	if s.resynced {
		s.resynced = false
		sawHeader = true
		line, n, err := s.readLine()
		total += n
		if err != nil {
			return nil, total, err
		}
		if length, err = parseContentLength(line); err != nil {
			return nil, total, s.lose(err)
		}
	}
	for {
		line, n, err := s.readLine()
		total += n
		if err != nil {
			return nil, total, err
		}
		if line == "" {
			if !sawHeader {
				continue // stray line breaks between messages
			}
			break
		}
		sawHeader = true
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, total, s.lose(fmt.Errorf("invalid header line %q", truncate(line, 80)))
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			if length, err = parseContentLength(value); err != nil {
				return nil, total, s.lose(err)
			}
		}
	}
	if length < 0 {
		return nil, total, s.lose(errors.New("missing Content-Length header"))
	}
	if length > s.maxBody {
		n, err := io.CopyN(io.Discard, s.in, length)
		total += n
		if err != nil {
			return nil, total, err
		}
		return nil, total, fmt.Errorf("%w: Content-Length %d exceeds the limit of %d", errBadFrame, length, s.maxBody)
	}
	body := make([]byte, length)
	n, err := io.ReadFull(s.in, body)
	total += int64(n)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		return nil, total, fmt.Errorf("reading %d byte body: %w", length, err)
	}
	return body, total, nil
}

// readLine reads one header line without its line break. Over-long lines
// are bad frames.
func (s *frameStream) readLine() (string, int64, error) {
	line, err := s.in.ReadSlice('\n')
	n := int64(len(line))
	if errors.Is(err, bufio.ErrBufferFull) {
		return "", n, s.lose(errors.New("header line too long"))
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			err = io.EOF
		}
		return "", n, err
	}
	return strings.TrimRight(string(line), "\r\n"), n, nil
}

func parseContentLength(value string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid Content-Length %q", truncate(strings.TrimSpace(value), 40))
	}
	return n, nil
}

// lose marks the framing as broken by cause and returns cause as a bad
// frame.
func (s *frameStream) lose(cause error) error {
	s.lost = true
	return fmt.Errorf("%w: %w", errBadFrame, cause)
}

// resync discards input up to and including the next "Content-Length:"
// so that reading can continue with the next message. An error is the I/O
// error that ended the search.
func (s *frameStream) resync() error {
	s.lost = false
	matched := 0
	for matched < len(contentLengthHeader) {
		c, err := s.in.ReadByte()
		if err != nil {
			return err
		}
		c = lowerASCII(c)
		switch {
		case c == contentLengthHeader[matched]:
			matched++
		case c == contentLengthHeader[0]:
			// The pattern's first byte occurs nowhere else in it, so a
			// restart at this byte loses no candidate match.
			matched = 1
		default:
			matched = 0
		}
	}
	s.resynced = true
	return nil
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// answerUndecodable replies to a framed body that is not a valid JSON-RPC
// message: ParseError for bad JSON, InvalidRequest for JSON that is not a
// request, with the request's id wherever one can be read, so that the
// client never waits for ever on a request it sent. Malformed responses
// are only logged: replying to a reply is never right.
func (s *frameStream) answerUndecodable(body []byte, cause error) {
	id, method, ok := topLevelIDAndMethod(body)
	if !json.Valid(body) {
		if ok && !method && len(id) > 0 && string(id) != "null" {
			s.log.Warn("dropping malformed response", zap.Error(cause), zap.Int("bytes", len(body)))
			return
		}
		s.log.Warn("dropping message that is not JSON", zap.Error(cause), zap.Int("bytes", len(body)))
		// JSON past the decoder's nesting limit, or broken inside its
		// params, may still say at its top which request it is.
		replyID := json.RawMessage("null")
		if ok && validID(id) {
			replyID = id
		}
		s.writeError(replyID, jsonrpc2.ParseError, "parse error: message body is not valid JSON")
		return
	}
	if !method && len(id) > 0 && string(id) != "null" {
		s.log.Warn("dropping malformed response", zap.Error(cause))
		return
	}
	replyID := json.RawMessage("null")
	if validID(id) {
		replyID = id
	}
	s.log.Warn("dropping invalid request", zap.Error(cause))
	s.writeError(replyID, jsonrpc2.InvalidRequest, "invalid request: "+cause.Error())
}

// topLevelIDAndMethod reads the raw "id" member of a JSON object and
// whether it has a "method" member, looking only at the object's own
// members: nested values are skipped by their brackets, however deep, and
// never decoded. ok is false when the body is not an object whose members
// could be walked up to the end or to the first error after them.
func topLevelIDAndMethod(body []byte) (id json.RawMessage, method, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false, false
	}
	i++
	for {
		i = skipSpace(body, i)
		if i < len(body) && body[i] == '}' {
			return id, method, true
		}
		keyEnd, good := skipString(body, i)
		if !good {
			return id, method, id != nil
		}
		var key string
		if json.Unmarshal(body[i:keyEnd], &key) != nil {
			return id, method, id != nil
		}
		i = skipSpace(body, keyEnd)
		if i >= len(body) || body[i] != ':' {
			return id, method, id != nil
		}
		// A "method" member makes a request whatever its value, even one
		// cut off: the truncated {"id":99,"method": is answered, not
		// taken for a broken response.
		method = method || key == "method"
		i = skipSpace(body, i+1)
		valEnd, good := skipValue(body, i)
		if !good {
			return id, method, id != nil
		}
		if key == "id" {
			id = json.RawMessage(bytes.TrimSpace(body[i:valEnd]))
		}
		i = skipSpace(body, valEnd)
		if i < len(body) && body[i] == ',' {
			i++
			continue
		}
		if i < len(body) && body[i] == '}' {
			return id, method, true
		}
		return id, method, id != nil
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the JSON string starting at b[i].
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return i, false
}

// skipValue returns the index after the JSON value starting at b[i]:
// strings by their quotes, arrays and objects by counting brackets
// outside strings, scalars up to the next delimiter.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return end, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	}
	start := i
	for i < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[i])) {
		i++
	}
	return i, i > start
}

// validID reports whether raw is a JSON string or integer, the id forms
// JSON-RPC allows.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// writeError writes an error response that jsonrpc2 cannot build itself
// (its IDs cannot be null).
func (s *frameStream) writeError(id json.RawMessage, code jsonrpc2.Code, msg string) {
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc2.Error  `json:"error"`
	}{"2.0", id, jsonrpc2.Error{Code: code, Message: msg}})
	if err != nil {
		s.log.Error("encoding error response", zap.Error(err))
		return
	}
	if _, err := s.writeFrame(data); err != nil {
		s.log.Warn("writing error response", zap.Error(err))
	}
}

// Write frames and writes msg. It deliberately ignores ctx: a reply to a
// cancelled request must still be sent.
func (s *frameStream) Write(_ context.Context, msg jsonrpc2.Message) (int64, error) {
	m, ok := msg.(json.Marshaler)
	if !ok {
		return 0, fmt.Errorf("message %T cannot be encoded", msg)
	}
	data, err := m.MarshalJSON()
	if err != nil {
		return 0, fmt.Errorf("encoding message: %w", err)
	}
	return s.writeFrame(data)
}

func (s *frameStream) writeFrame(data []byte) (int64, error) {
	buf := make([]byte, 0, len(data)+32)
	buf = append(buf, "Content-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(data)), 10)
	buf = append(buf, "\r\n\r\n"...)
	buf = append(buf, data...)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n, err := s.out.Write(buf)
	if err != nil {
		return int64(n), fmt.Errorf("writing message: %w", err)
	}
	return int64(n), nil
}

// Close closes the underlying connection, which ends a pending Read.
func (s *frameStream) Close() error { return s.closer.Close() }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// wireMessage is any JSON-RPC message as it arrives.
type wireMessage struct {
	JSONRPC string
	ID      json.RawMessage
	Method  json.RawMessage
	Params  json.RawMessage
	Result  json.RawMessage
	Error   *jsonrpc2.Error
}

// unmarshalWire decodes the members of a message by their exact names.
// encoding/json matches a struct's fields case-insensitively, so that
// {"id":1,"method":"m","METHOD":null} would decode as a response (and the
// request go unanswered) and {"id":1,…,"ID":2} be answered as request 2;
// JSON-RPC's member names are case-sensitive, and topLevelIDAndMethod,
// which names the request of an undecodable body, reads them so.
func unmarshalWire(body []byte, m *wireMessage) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return err
	}
	if v, ok := members["jsonrpc"]; ok {
		if err := json.Unmarshal(v, &m.JSONRPC); err != nil {
			return err
		}
	}
	m.ID, m.Method, m.Params, m.Result = members["id"], members["method"], members["params"], members["result"]
	if v, ok := members["error"]; ok {
		if err := json.Unmarshal(v, &m.Error); err != nil {
			return err
		}
	}
	return nil
}

// errInvalidMessage reports JSON that is not a JSON-RPC 2.0 message.
var errInvalidMessage = errors.New("not a JSON-RPC 2.0 message")

// decodeMessage decodes one message as jsonrpc2.DecodeMessage does, with
// the same rules (version "2.0" when given, string method, int32 or string
// id), at a fraction of its cost: the stock decoder allocates about 32 KiB
// per message.
func decodeMessage(body []byte) (jsonrpc2.Message, error) {
	var m wireMessage
	if err := unmarshalWire(body, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidMessage, err)
	}
	if m.JSONRPC != "" && m.JSONRPC != "2.0" {
		return nil, fmt.Errorf("%w: version %q", errInvalidMessage, m.JSONRPC)
	}
	var id *jsonrpc2.ID
	if string(m.ID) == "null" && len(m.Method) > 0 && string(m.Method) != "null" {
		// A member "id" makes a request, not a notification; LSP's ids
		// are integers or strings. Answered (with id null) rather than
		// run as a notification whose sender waits for a reply.
		return nil, fmt.Errorf("%w: id null: an LSP request's id is an integer or a string", errInvalidMessage)
	}
	if len(m.ID) > 0 && string(m.ID) != "null" {
		parsed, ok := parseWireID(m.ID)
		if !ok {
			return nil, fmt.Errorf("%w: id %s", errInvalidMessage, truncate(string(m.ID), 40))
		}
		id = &parsed
	}
	var method string
	if len(m.Method) > 0 && string(m.Method) != "null" {
		if err := json.Unmarshal(m.Method, &method); err != nil {
			return nil, fmt.Errorf("%w: method %s", errInvalidMessage, truncate(string(m.Method), 40))
		}
	}
	if method == "" {
		if id == nil {
			return nil, fmt.Errorf("%w: neither method nor id", errInvalidMessage)
		}
		var err error
		if m.Error != nil {
			err = m.Error
		}
		var result any
		if len(m.Result) > 0 {
			result = m.Result
		}
		resp, rerr := jsonrpc2.NewResponse(*id, result, err)
		if rerr != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidMessage, rerr)
		}
		return resp, nil
	}
	var params any
	if len(m.Params) > 0 {
		params = m.Params
	}
	if id == nil {
		n, err := jsonrpc2.NewNotification(method, params)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidMessage, err)
		}
		return n, nil
	}
	c, err := jsonrpc2.NewCall(*id, method, params)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidMessage, err)
	}
	return c, nil
}

// parseWireID reads a JSON-RPC id the way jsonrpc2 stores it: an integer
// in int32 range, or a string.
func parseWireID(raw json.RawMessage) (jsonrpc2.ID, bool) {
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.NewStringID(s), true
	}
	n, err := strconv.ParseInt(string(raw), 10, 32)
	if err != nil {
		return jsonrpc2.ID{}, false
	}
	return jsonrpc2.NewNumberID(int32(n)), true
}
