package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// escapeTerminal returns s with everything a terminal would act on
// instead of showing written as a visible escape: C0 and C1 control
// characters and DEL as \u00XX (ESC starts the sequences that retitle,
// clear or move the cursor; \r rewrites the line), the bidirectional
// controls that reorder what is shown (\u202e), and bytes that are not
// UTF-8 as \xNN. The \u escapes are JSON's own, so JSON output stays
// valid and decodes to the same text. With lines, \n and \t are kept:
// the text is several lines; without, s is one name or line and a line
// break in it is escaped too, so that it cannot fake a line of output.
//
// Names from a workspace or a target (file names, package names, paths,
// lines a run printed) pass through it before the command line prints
// them; the command line's stdout and stderr also pass through it as a
// whole (termWriter).
func escapeTerminal(s string, lines bool) string {
	if !needsEscape(s, lines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// rawBase64 is a file name's bytes in base64 when they are not UTF-8, for
// the JSON outputs: JSON strings hold only Unicode, so such a name's
// string field shows U+FFFD where the bytes were, and this field, beside
// it, keeps the name exactly. It is "" (and omitted) for UTF-8 names.
func rawBase64(name string) string {
	if utf8.ValidString(name) {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(name))
}

// termName escapes a name, or one line, for the terminal.
func termName(s string) string { return escapeTerminal(s, false) }

func needsEscape(s string, lines bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && !(lines && (c == '\n' || c == '\t')) || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports the characters a terminal acts on or that reorder
// the text around them: C0 and C1 controls, DEL, the bidirectional
// embeddings, overrides, isolates and marks, and the Unicode line and
// paragraph separators.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// termWriter escapes, as text of several lines, everything written to a
// terminal-bound stream. A UTF-8 sequence split across two writes is held
// back until it is whole (or until Flush).
type termWriter struct {
	mu      sync.Mutex // guards pending and orders writes to w
	w       io.Writer
	pending []byte // the start of an incomplete UTF-8 sequence
}

func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	buf := append(t.pending, p...)
	cut := len(buf)
	for i := len(buf) - 1; i >= 0 && i > len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	t.pending = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(t.w, escapeTerminal(string(buf[:cut]), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back, escaped.
func (t *termWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, escapeTerminal(string(t.pending), true))
	t.pending = nil
	return err
}
