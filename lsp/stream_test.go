package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// bufConn is an in-memory connection: reads come from in, writes go to out.
type bufConn struct {
	in  io.Reader
	out bytes.Buffer
}

func (c *bufConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *bufConn) Write(p []byte) (int, error) { return c.out.Write(p) }
func (c *bufConn) Close() error                { return nil }

// readAll reads messages until EOF and returns their methods and the
// error replies written meanwhile.
func readAll(t *testing.T, input string, maxBody int64) (methods []string, replies []string) {
	t.Helper()
	conn := &bufConn{in: strings.NewReader(input)}
	s := newFrameStream(conn, zap.NewNop())
	if maxBody > 0 {
		s.maxBody = maxBody
	}
	for {
		msg, _, err := s.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if req, ok := msg.(jsonrpc2.Request); ok {
			methods = append(methods, req.Method())
		} else {
			methods = append(methods, "response")
		}
	}
	out := conn.out.String()
	for out != "" {
		_, rest, _ := strings.Cut(out, "\r\n\r\n")
		var r struct {
			ID    json.RawMessage
			Error struct{ Code int }
		}
		dec := json.NewDecoder(strings.NewReader(rest))
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("bad reply in %q: %v", out, err)
		}
		replies = append(replies, string(r.ID)+":"+itoa(r.Error.Code))
		out = rest[dec.InputOffset():]
	}
	return methods, replies
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func msg(method string) string {
	return frameBody(`{"jsonrpc":"2.0","method":"` + method + `"}`)
}

func frameBody(body string) string {
	return "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
}

func TestFrameStream(t *testing.T) {
	tests := []struct {
		name        string
		input       string
		maxBody     int64
		wantMethods []string
		wantReplies []string
	}{
		{"two messages", msg("a") + msg("b"), 0, []string{"a", "b"}, nil},
		{"header case and extra headers", strings.Replace(msg("a"), "Content-Length", "content-length", 1) +
			"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" + msg("b"), 0, []string{"a", "b"}, nil},
		{"bare LF line ends", strings.ReplaceAll(msg("a"), "\r\n", "\n") + msg("b"), 0, []string{"a", "b"}, nil},
		{"stray blank lines between messages", msg("a") + "\r\n\r\n" + msg("b"), 0, []string{"a", "b"}, nil},
		{"garbage then resync", "hello world\r\n" + msg("a"), 0, []string{"a"}, []string{"null:-32700"}},
		{"bad length then resync", "Content-Length: x\r\n\r\n{\"a\":1}" + msg("a"), 0, []string{"a"}, []string{"null:-32700"}},
		{"resync on lower-case header", "junk:\r\n\r\nbody" + strings.ToLower(msg("a")[:16]) + msg("a")[16:], 0, []string{"a"}, []string{"null:-32700"}},
		{"oversized body skipped", msg("much-too-long") + msg("a"), 32, []string{"a"}, []string{"null:-32700"}},
		{"invalid request keeps id", frameBody(`{"jsonrpc":"2.0","id":4,"method":5}`) + msg("a"), 0, []string{"a"}, []string{"4:-32600"}},
		{"response passes through", frameBody(`{"jsonrpc":"2.0","id":4,"result":7}`) + msg("a"), 0, []string{"response", "a"}, nil},
		{"malformed response is dropped", frameBody(`{"jsonrpc":"2.0","id":4,"error":7}`) + msg("a"), 0, []string{"a"}, nil},
		{"truncated body", "Content-Length: 99\r\n\r\n{}", 0, nil, nil},
		{"garbage line at EOF", "no frame here\n", 0, nil, []string{"null:-32700"}},
		{"partial line at EOF", "no frame", 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			methods, replies := readAll(t, tt.input, tt.maxBody)
			if strings.Join(methods, ",") != strings.Join(tt.wantMethods, ",") {
				t.Errorf("methods = %q, want %q", methods, tt.wantMethods)
			}
			if strings.Join(replies, ",") != strings.Join(tt.wantReplies, ",") {
				t.Errorf("replies = %q, want %q", replies, tt.wantReplies)
			}
		})
	}
}

func BenchmarkFrameRead(b *testing.B) {
	body := `{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///w/a.py"},"position":{"line":10,"character":4}}}`
	frame := "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	input := strings.Repeat(frame, 1000)
	b.ReportAllocs()
	b.SetBytes(int64(len(input)))
	for b.Loop() {
		s := newFrameStream(&bufConn{in: strings.NewReader(input)}, zap.NewNop())
		for range 1000 {
			if _, _, err := s.Read(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// FuzzDecodeMessage checks decodeMessage against jsonrpc2.DecodeMessage:
// what both accept must decode alike, and neither may panic.
func FuzzDecodeMessage(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"a":1}}`,
		`{"jsonrpc":"2.0","method":"exit"}`,
		`{"jsonrpc":"2.0","id":"x","result":null}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"1.0","id":1,"method":"m"}`,
		`{"id":2147483648,"method":"m"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		deadline.Start(t, body)
		got, err := decodeMessage(body)
		want, werr := jsonrpc2.DecodeMessage(body)
		if err != nil || werr != nil || caseVariantMembers(body) {
			return
		}
		switch w := want.(type) {
		case *jsonrpc2.Call:
			g, ok := got.(*jsonrpc2.Call)
			if !ok || g.ID() != w.ID() || g.Method() != w.Method() || !jsonEqual(g.Params(), w.Params()) {
				t.Fatalf("decodeMessage(%s) = %#v, want %#v", body, got, want)
			}
		case *jsonrpc2.Notification:
			g, ok := got.(*jsonrpc2.Notification)
			if !ok || g.Method() != w.Method() || !jsonEqual(g.Params(), w.Params()) {
				t.Fatalf("decodeMessage(%s) = %#v, want %#v", body, got, want)
			}
		case *jsonrpc2.Response:
			g, ok := got.(*jsonrpc2.Response)
			if !ok || g.ID() != w.ID() || !jsonEqual(g.Result(), w.Result()) || (g.Err() == nil) != (w.Err() == nil) {
				t.Fatalf("decodeMessage(%s) = %#v, want %#v", body, got, want)
			}
		}
	})
}

// caseVariantMembers reports whether body has a member whose name is one
// of JSON-RPC's only by case ("ID", "Method"): the stock decoder takes it
// for the member, decodeMessage does not.
func caseVariantMembers(body []byte) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return false
	}
	for k := range members {
		for _, name := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
			if k != name && strings.EqualFold(k, name) {
				return true
			}
		}
	}
	return false
}

// jsonEqual compares JSON values, treating absent as null.
func jsonEqual(a, b []byte) bool {
	norm := func(x []byte) string {
		if len(bytes.TrimSpace(x)) == 0 {
			return "null"
		}
		// Numbers stay as written: 12E22222 overflows a float64, and two
		// spellings of one document must still compare equal.
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return "invalid:" + string(x)
		}
		out, _ := json.Marshal(v)
		return string(out)
	}
	return norm(a) == norm(b)
}

// The id of a body the decoder refuses is read from the object's own
// members, however deep its params nest.
func TestTopLevelIDAndMethod(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":[`, 20000) + strings.Repeat(`]}`, 20000)
	for _, tt := range []struct {
		body, id   string
		method, ok bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"x"}`, "7", true, true},
		{`{"params":` + deep + `,"id":"s","method":"x"}`, `"s"`, true, true},
		{`{"method":"x","params":{"s":"}{][\"","n":[1,{"id":9}]},"id":3}`, "3", true, true},
		{`{"id":5,"result":` + deep + `}`, "5", false, true},
		{`{"method":"x","id":4,"params":{"a":}}`, "4", true, true},
		{`{"method":"x","params":{"a":},"id":4}`, "4", true, true}, // brackets are counted, not parsed
		{`[1,2]`, "", false, false},
		{`{"id": null ,"method":"x"}`, "null", true, true},
		{``, "", false, false},
		// Brackets of the wrong kind end the walk after the id was read:
		// the id still names the message (a response stays unanswered).
		{`{"id":5,"result":[}]}`, "5", false, true},
		{`{"id":6,"method":"x","params":[}]}`, "6", true, true},
		{`{"jsonrpc":"2.0","id":99,"method":`, "99", true, true}, // a request cut off after its method key
	} {
		id, method, ok := topLevelIDAndMethod([]byte(tt.body))
		if string(id) != tt.id || method != tt.method || ok != tt.ok {
			t.Errorf("%.60s: id %q method %v ok %v; want %q %v %v", tt.body, id, method, ok, tt.id, tt.method, tt.ok)
		}
	}
}

// JSON-RPC's member names are case-sensitive: a member that differs from
// "id" or "method" only by case is not one, so a request is never turned
// into a response (left unanswered) or answered under another id.
func TestDecodeMessageExactMemberNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		body string
		want string // "call ID METHOD", "notification METHOD", "response ID"
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"shutdown","METHOD":null}`, "call 1 shutdown"},
		{`{"jsonrpc":"2.0","id":1,"method":"shutdown","ID":"zz"}`, "call 1 shutdown"},
		{`{"jsonrpc":"2.0","method":"exit","Id":3}`, "notification exit"},
		{`{"jsonrpc":"2.0","id":4,"result":null,"Method":"x"}`, "response 4"},
		{`{"jsonrpc":"2.0","id":5,"method":"m","Jsonrpc":"1.0"}`, "call 5 m"},
	} {
		msg, err := decodeMessage([]byte(tt.body))
		if err != nil {
			t.Errorf("%s: %v", tt.body, err)
			continue
		}
		var got string
		switch m := msg.(type) {
		case *jsonrpc2.Call:
			got = fmt.Sprintf("call %v %s", m.ID(), m.Method())
		case *jsonrpc2.Notification:
			got = "notification " + m.Method()
		case *jsonrpc2.Response:
			got = fmt.Sprintf("response %v", m.ID())
		}
		if got != tt.want {
			t.Errorf("%s: decoded as %q, want %q", tt.body, got, tt.want)
		}
	}
}
