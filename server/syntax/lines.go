package syntax

import (
	"bytes"
	"fmt"
	"sort"
)

// Pos is a place in a text: 0-based line, and 0-based column counted in
// UTF-8 bytes within the line (as tree-sitter counts). Lines end at "\n";
// a "\r" before it belongs to the line ending, not to the line.
type Pos struct {
	Line, Col int
}

// Span is a half-open stretch of a text.
type Span struct {
	Start, End Pos
}

// String formats p as line:col, both 0-based.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// String formats s as line:col-line:col.
func (s Span) String() string { return s.Start.String() + "-" + s.End.String() }

// Less orders positions.
func (p Pos) Less(q Pos) bool { return p.Line < q.Line || p.Line == q.Line && p.Col < q.Col }

// Contains reports whether p lies in s, its end included (a cursor just
// after a name is on it).
func (s Span) Contains(p Pos) bool { return !p.Less(s.Start) && !s.End.Less(p) }

// Lines holds the start offset of every line of a text. Offsets are 32
// bits, as tree-sitter's are (MaxSource): a text of short lines costs 4
// bytes a line, not 8 (1.3 million lines, 5 MB).
type Lines []uint32

// NewLines indexes the lines of src.
func NewLines(src []byte) Lines {
	li := make(Lines, 1, 1+bytes.Count(src, []byte{'\n'}))
	for off := 0; ; {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return li
		}
		off += i + 1
		li = append(li, uint32(off))
	}
}

// Bounds returns the start and end (before "\r\n" or "\n") of line.
func (li Lines) Bounds(src []byte, line int) (start, end int) {
	start = int(li[line])
	end = len(src)
	if line+1 < len(li) {
		end = int(li[line+1]) - 1
	}
	if end > start && src[end-1] == '\r' {
		end--
	}
	return start, end
}

// Line returns line i of src without its ending, or "" past the end.
func (li Lines) Line(src []byte, i int) string {
	if i < 0 || i >= len(li) {
		return ""
	}
	s, e := li.Bounds(src, i)
	return string(src[s:e])
}

// Offset converts p to a byte offset; ok is false when p is outside the
// text (a column past the end of the line included).
func (li Lines) Offset(src []byte, p Pos) (int, bool) {
	if p.Line < 0 || p.Line >= len(li) || p.Col < 0 {
		return 0, false
	}
	start, end := li.Bounds(src, p.Line)
	if p.Col > end-start {
		return 0, false
	}
	return start + p.Col, true
}

// Pos converts a byte offset to a position.
func (li Lines) Pos(off int) Pos {
	line := sort.Search(len(li), func(i int) bool { return int(li[i]) > off }) - 1
	return Pos{Line: line, Col: off - int(li[line])}
}

// Range is the Range of src[start:end], for Parser.ParseRanges.
func (li Lines) Range(start, end int) Range {
	s, e := li.Pos(start), li.Pos(end)
	return Range{Start: start, End: end, StartRow: s.Line, StartCol: s.Col, EndRow: e.Line, EndCol: e.Col}
}
