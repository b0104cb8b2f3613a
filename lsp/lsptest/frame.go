package lsptest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The client side's one LSP base-protocol codec: the fake editor, the test
// peers that stand in for a server, and cmd/lspbench all frame with it.
// Unlike the server's stream (lsp/stream.go), it does not resynchronise:
// a server's framing must be exact, and a bad frame ends the connection.

// ReadFrame reads one Content-Length framed message body. Header names
// are matched case-insensitively and bare "\n" line ends are accepted, as
// real servers write both. A clean end of input before a header returns
// io.EOF itself.
func ReadFrame(r *bufio.Reader) ([]byte, error) {
	length := -1
	for first := true; ; first = false {
		line, err := r.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && (!first || len(line) > 0) {
				return nil, fmt.Errorf("message header: %w", io.ErrUnexpectedEOF)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, fmt.Errorf("malformed header: line longer than %d bytes", r.Size())
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, fmt.Errorf("malformed header %q", line)
		}
		if bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")) {
			n, err := strconv.Atoi(string(bytes.TrimSpace(value)))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad Content-Length %q", bytes.TrimSpace(value))
			}
			length = n
		}
	}
	if length < 0 {
		return nil, errors.New("message without Content-Length")
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("message body of %d bytes: %w", length, err)
	}
	return body, nil
}

// AppendFrame appends body, framed with its Content-Length header, to dst.
func AppendFrame(dst, body []byte) []byte {
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}
