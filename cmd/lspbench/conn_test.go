package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

func frame(body string) string {
	return "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name, in, want, wantErr string
	}{
		{"plain", frame(`{"a":1}`), `{"a":1}`, ""},
		{"extra header, any case", "content-type: x\r\ncontent-length: 2\r\n\r\n{}", "{}", ""},
		{"bare newlines", "Content-Length: 2\n\n{}", "{}", ""},
		{"no length", "X: 1\r\n\r\n{}", "", "without Content-Length"},
		{"bad length", "Content-Length: -3\r\n\r\n", "", "bad Content-Length"},
		{"malformed header", "garbage\r\n\r\n", "", "malformed header"},
		{"short body", "Content-Length: 10\r\n\r\n{}", "", "message body"},
		{"eof", "", "", "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readFrame(bufio.NewReader(strings.NewReader(tt.in)))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// peer is the server end of a pipe: for each request it first asks the
// client for the "python.analysis" section, then answers with what it got.
func peer(t *testing.T, r io.Reader, w io.Writer) {
	br := bufio.NewReader(r)
	write := func(m map[string]any) {
		b, _ := json.Marshal(m)
		io.WriteString(w, frame(string(b)))
	}
	for {
		body, err := readFrame(br)
		if err != nil {
			return
		}
		var req message
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("peer: %v", err)
			return
		}
		if req.ID == nil {
			continue // a notification
		}
		switch req.Method {
		case "":
			continue // the client's answer to our request is read below
		case "fail":
			write(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32000, "message": "boom"}})
			continue
		}
		write(map[string]any{"jsonrpc": "2.0", "id": "srv-1", "method": "workspace/configuration",
			"params": map[string]any{"items": []map[string]string{{"section": "python.analysis"}, {"section": "absent"}}}})
		write(map[string]any{"jsonrpc": "2.0", "method": "window/logMessage", "params": map[string]any{"message": "hi"}})
		var answer message
		for answer.Method != "" || answer.ID == nil {
			b, err := readFrame(br)
			if err != nil {
				return
			}
			answer = message{}
			json.Unmarshal(b, &answer)
		}
		write(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": answer.Result})
	}
}

func TestConnRoundTrip(t *testing.T) {
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	go peer(t, serverR, serverW)
	notified := make(chan string, 4)
	c := newConn(clientR, clientW,
		settingsHandler(json.RawMessage(`{"python":{"analysis":{"extraPaths":["/x"]}}}`), "file:///ws"),
		func(method string, _ json.RawMessage) { notified <- method })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	got, d, err := c.call(ctx, "textDocument/hover", map[string]int{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"extraPaths":["/x"]},null]`; string(got) != want {
		t.Errorf("result = %s, want %s", got, want)
	}
	if d <= 0 {
		t.Errorf("latency = %v, want > 0", d)
	}
	if m := <-notified; m != "window/logMessage" {
		t.Errorf("notification %q", m)
	}
	if _, _, err := c.call(ctx, "fail", nil); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("fail: err = %v, want the server's error", err)
	}
	serverW.Close()
	<-c.closed()
	if _, _, err := c.call(ctx, "after", nil); err == nil {
		t.Error("call after the server closed succeeded")
	}
}

func TestConnCallContext(t *testing.T) {
	clientR, _ := io.Pipe()
	var sink bytes.Buffer
	c := newConn(clientR, &lockedWriter{w: &sink}, settingsHandler(nil, ""), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := c.call(ctx, "never/answered", nil); err == nil {
		t.Fatal("call without an answer succeeded")
	}
	if !strings.Contains(sink.String(), `"$/cancelRequest"`) {
		t.Errorf("no cancel request sent: %q", sink.String())
	}
}

type lockedWriter struct{ w io.Writer }

func (l *lockedWriter) Write(p []byte) (int, error) { return l.w.Write(p) }

func BenchmarkReadFrame(b *testing.B) {
	body := `{"jsonrpc":"2.0","id":7,"result":{"uri":"file:///usr/lib/python3/dist-packages/torch/nn/modules/linear.py","range":{"start":{"line":47,"character":6},"end":{"line":47,"character":12}}}}`
	in := strings.Repeat(frame(body), 1000)
	b.ReportAllocs()
	b.SetBytes(int64(len(in) / 1000))
	r := bufio.NewReader(strings.NewReader(in))
	for i := 0; b.Loop(); i++ {
		if i%1000 == 0 {
			r.Reset(strings.NewReader(in))
		}
		if _, err := readFrame(r); err != nil {
			b.Fatal(err)
		}
	}
}
