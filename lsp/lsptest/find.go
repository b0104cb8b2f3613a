package lsptest

import (
	"fmt"
	"strings"
	"unicode/utf16"
)

// Find locates the n-th (0-based) occurrence of needle in text and returns
// the LSP position (0-based line, UTF-16 column) of the byte offset off
// within it, so tests can aim at a name without hard-coding columns.
func Find(text, needle string, n, off int) (line, character uint32, err error) {
	idx, from := -1, 0
	for i := 0; i <= n; i++ {
		j := strings.Index(text[from:], needle)
		if j < 0 {
			return 0, 0, fmt.Errorf("occurrence %d of %q not found", n, needle)
		}
		idx = from + j
		from = idx + 1
	}
	idx += off
	if idx < 0 || idx > len(text) {
		return 0, 0, fmt.Errorf("offset %d of %q is outside the text", off, needle)
	}
	start := strings.LastIndex(text[:idx], "\n") + 1
	return uint32(strings.Count(text[:idx], "\n")), uint32(len(utf16.Encode([]rune(text[start:idx])))), nil
}
