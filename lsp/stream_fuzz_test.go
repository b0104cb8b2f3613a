package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"testing"

	"go.lsp.dev/jsonrpc2"
	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// FuzzFrameStream feeds arbitrary bytes to the LSP framing and checks that
// reading always ends (at EOF, never with another error and never in a
// loop), that it never returns more messages than the input has bytes, and
// that everything it writes back is a well-formed frame holding a JSON-RPC
// error reply. The decoding of one body is FuzzDecodeMessage's job.
func FuzzFrameStream(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	good := frameBody(`{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///w/a.py"},"position":{"line":1,"character":2}}}`)
	for _, s := range []string{
		good,
		good + good,
		msg("initialized") + "\r\n" + msg("exit"),
		"Content-Length: 5\r\n\r\n{}{}}" + good,
		"content-length:   2\nContent-Type: x\n\n{}",
		"Content-Length: -1\r\n\r\n" + good,
		"Content-Length: 99999999999999999999\r\n\r\n",
		"garbage\r\n\r\n" + good,
		"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}" + good,
		"Content-Length: 30\r\n\r\n" + `{"jsonrpc":"2.0","id":[1],"method":1}`,
		"Content-Lengt" + good,
		"\xff\xfeContent-Length: 2\r\n\r\n[]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		deadline.Start(t, input)
		conn := &bufConn{in: bytes.NewReader(input)}
		s := newFrameStream(conn, zap.NewNop())
		s.maxBody = 1 << 16
		reads := 0
		for {
			m, _, err := s.Read(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Read: %v (want only io.EOF from an in-memory stream)", err)
			}
			if m == nil {
				t.Fatal("Read returned neither a message nor an error")
			}
			reads++
			if reads > len(input) {
				t.Fatalf("%d messages from %d bytes: the reader is looping", reads, len(input))
			}
		}
		checkErrorReplies(t, conn.out.Bytes())
	})
}

// checkErrorReplies parses out as a sequence of LSP frames, each a JSON-RPC
// error reply with a string, integer or null id.
func checkErrorReplies(t *testing.T, out []byte) {
	t.Helper()
	for len(out) > 0 {
		head, rest, ok := bytes.Cut(out, []byte("\r\n\r\n"))
		if !ok {
			t.Fatalf("reply without a header end: %q", out)
		}
		const prefix = "Content-Length: "
		if !bytes.HasPrefix(head, []byte(prefix)) {
			t.Fatalf("reply header %q", head)
		}
		n, err := strconv.Atoi(string(head[len(prefix):]))
		if err != nil || n < 0 || n > len(rest) {
			t.Fatalf("reply header %q with %d bytes left", head, len(rest))
		}
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code    jsonrpc2.Code `json:"code"`
				Message string        `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rest[:n], &r); err != nil {
			t.Fatalf("reply body %q: %v", rest[:n], err)
		}
		if r.JSONRPC != "2.0" || r.Error == nil || (string(r.ID) != "null" && !validID(r.ID)) {
			t.Fatalf("reply %q is not a JSON-RPC error reply", rest[:n])
		}
		out = rest[n:]
	}
}
