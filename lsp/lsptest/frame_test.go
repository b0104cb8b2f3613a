package lsptest

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

func frame(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

func TestReadFrame(t *testing.T) {
	t.Parallel()
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
		{"cut in the header", "Content-Length: 2\r\n", "", "unexpected EOF"},
		{"eof", "", "", "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFrame(bufio.NewReader(strings.NewReader(tt.in)))
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

// TestReadFrameEOF: only a clean end between messages is io.EOF itself,
// so a reader can tell a closed connection from a cut message.
func TestReadFrameEOF(t *testing.T) {
	t.Parallel()
	r := bufio.NewReader(strings.NewReader(frame("{}")))
	if _, err := ReadFrame(r); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFrame(r); err != io.EOF {
		t.Errorf("after the last message: %v, want io.EOF", err)
	}
	_, err := ReadFrame(bufio.NewReader(strings.NewReader("Content-Length: 5\r\n\r\n{}")))
	if err == io.EOF || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut body: %v, want a wrapped io.ErrUnexpectedEOF", err)
	}
}

func TestAppendFrame(t *testing.T) {
	t.Parallel()
	got := string(AppendFrame([]byte("x"), []byte(`{"é":1}`)))
	if want := "xContent-Length: 8\r\n\r\n" + `{"é":1}`; got != want {
		t.Errorf("AppendFrame = %q, want %q (the length counts bytes)", got, want)
	}
	body, err := ReadFrame(bufio.NewReader(strings.NewReader(got[1:])))
	if err != nil || string(body) != `{"é":1}` {
		t.Errorf("round trip = %q, %v", body, err)
	}
}

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
		if _, err := ReadFrame(r); err != nil {
			b.Fatal(err)
		}
	}
}
