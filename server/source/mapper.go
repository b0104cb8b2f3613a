package source

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrLineOutOfRange reports a position whose line lies past the end of the
// document. LSP asks servers to reject such positions rather than clamp them.
var ErrLineOutOfRange = errors.New("line out of range")

// Mapper converts positions within one version of a document's text between
// LSP positions (0-based line, UTF-16 code units), engine positions
// (0-based line, UTF-8 byte column), byte offsets, and the 1-based
// line:character columns shown on the command line.
//
// Lines end at "\n", "\r\n" or a lone "\r", as LSP specifies. Columns past
// the end of a line are clamped to it; a column inside a multi-byte
// character or a surrogate pair is moved back to the character's start.
// A Mapper is immutable and safe for concurrent use.
type Mapper struct {
	text  string
	lines []uint32 // byte offset at which each line starts; lines[0] == 0 (4 bytes a line: every text mapped is far under 4 GiB)
	ascii bool     // every byte < 0x80: all column systems coincide
}

// NewMapper indexes text. It costs one pass over the text.
func NewMapper(text string) *Mapper {
	m := &Mapper{text: text, lines: make([]uint32, 1, 1+strings.Count(text, "\n")), ascii: true}
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\n':
			m.lines = append(m.lines, uint32(i+1))
		case c == '\r':
			if i+1 < len(text) && text[i+1] == '\n' {
				i++
			}
			m.lines = append(m.lines, uint32(i+1))
		case c >= utf8.RuneSelf:
			m.ascii = false
		}
	}
	return m
}

// Text returns the text the Mapper indexes.
func (m *Mapper) Text() string { return m.text }

// LineCount returns the number of lines; text ending in a line break has an
// empty last line after it.
func (m *Mapper) LineCount() int { return len(m.lines) }

// lineBounds returns the byte offsets of line's content, without its line
// break.
func (m *Mapper) lineBounds(line int) (start, end int) {
	start = int(m.lines[line])
	if line+1 == len(m.lines) {
		return start, len(m.text)
	}
	end = int(m.lines[line+1])
	if end > start && m.text[end-1] == '\n' {
		end--
	}
	if end > start && m.text[end-1] == '\r' {
		end--
	}
	return start, end
}

func (m *Mapper) checkLine(line int) error {
	if line < 0 || line >= len(m.lines) {
		return fmt.Errorf("%w: line %d, document has %d lines", ErrLineOutOfRange, line, len(m.lines))
	}
	return nil
}

// FromUTF16 converts a UTF-16 position to a byte-column position.
func (m *Mapper) FromUTF16(p UTF16) (Position, error) {
	line := int(p.Line)
	if err := m.checkLine(line); err != nil {
		return Position{}, err
	}
	start, end := m.lineBounds(line)
	return Position{Line: line, Column: utf16ToByte(m.text[start:end], int(p.Character), m.ascii)}, nil
}

// ToUTF16 converts a byte-column position to a UTF-16 position.
func (m *Mapper) ToUTF16(p Position) (UTF16, error) {
	if err := m.checkLine(p.Line); err != nil {
		return UTF16{}, err
	}
	start, end := m.lineBounds(p.Line)
	return UTF16{Line: uint32(p.Line), Character: uint32(byteToUTF16(m.text[start:end], p.Column, m.ascii))}, nil
}

// FromUTF16Range converts a UTF-16 range to a byte-column range.
func (m *Mapper) FromUTF16Range(r UTF16Range) (Range, error) {
	start, err := m.FromUTF16(r.Start)
	if err != nil {
		return Range{}, fmt.Errorf("range start: %w", err)
	}
	end, err := m.FromUTF16(r.End)
	if err != nil {
		return Range{}, fmt.Errorf("range end: %w", err)
	}
	return Range{Start: start, End: end}, nil
}

// ToUTF16Range converts a byte-column range to a UTF-16 range.
func (m *Mapper) ToUTF16Range(r Range) (UTF16Range, error) {
	start, err := m.ToUTF16(r.Start)
	if err != nil {
		return UTF16Range{}, fmt.Errorf("range start: %w", err)
	}
	end, err := m.ToUTF16(r.End)
	if err != nil {
		return UTF16Range{}, fmt.Errorf("range end: %w", err)
	}
	return UTF16Range{Start: start, End: end}, nil
}

// Offset converts a byte-column position to a byte offset in the text.
func (m *Mapper) Offset(p Position) (int, error) {
	if err := m.checkLine(p.Line); err != nil {
		return 0, err
	}
	start, end := m.lineBounds(p.Line)
	return start + clampToRune(m.text[start:end], p.Column), nil
}

// utf16Offset converts a UTF-16 position to a byte offset. When atEOFLine is
// set, the line just past the last one (character 0) names the end of the
// text: some clients express "to the end of the document" that way in
// edits.
func (m *Mapper) utf16Offset(p UTF16, atEOFLine bool) (int, error) {
	if atEOFLine && int(p.Line) == len(m.lines) {
		return len(m.text), nil
	}
	pos, err := m.FromUTF16(p)
	if err != nil {
		return 0, err
	}
	return int(m.lines[pos.Line]) + pos.Column, nil
}

// PositionAt converts a byte offset to a byte-column position. Offsets
// outside the text are clamped to it, offsets inside a line break to the
// line's end, and offsets inside a character to its start.
func (m *Mapper) PositionAt(offset int) Position {
	offset = max(0, min(offset, len(m.text)))
	// The last line starting at or before offset.
	lo, hi := 0, len(m.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if int(m.lines[mid]) <= offset {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	start, end := m.lineBounds(lo)
	return Position{Line: lo, Column: clampToRune(m.text[start:end], offset-start)}
}

// FromCharColumn converts a 1-based line and 1-based column counted in
// characters (Unicode code points), as the command line shows them, to a
// byte-column position. Columns past the end of the line are clamped.
func (m *Mapper) FromCharColumn(line, col int) (Position, error) {
	if col < 1 {
		return Position{}, fmt.Errorf("column %d: columns start at 1", col)
	}
	if line < 1 || line > len(m.lines) {
		// Said in the same 1-based numbers the caller used.
		return Position{}, fmt.Errorf("%w: line %d, the text has %d", ErrLineOutOfRange, line, len(m.lines))
	}
	start, end := m.lineBounds(line - 1)
	s := m.text[start:end]
	chars := col - 1
	if m.ascii {
		return Position{Line: line - 1, Column: min(chars, len(s))}, nil
	}
	i := 0
	for n := 0; n < chars && i < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return Position{Line: line - 1, Column: i}, nil
}

// ToCharColumn converts a byte-column position to a 1-based line and
// 1-based character column.
func (m *Mapper) ToCharColumn(p Position) (line, col int, err error) {
	if err := m.checkLine(p.Line); err != nil {
		return 0, 0, err
	}
	start, end := m.lineBounds(p.Line)
	s := m.text[start:end]
	b := clampToRune(s, p.Column)
	if m.ascii {
		return p.Line + 1, b + 1, nil
	}
	return p.Line + 1, utf8.RuneCountInString(s[:b]) + 1, nil
}

// utf16ToByte returns the byte offset within line of the UTF-16 column col,
// clamped to the line and moved back to the start of a character that col
// splits.
func utf16ToByte(line string, col int, ascii bool) int {
	if col <= 0 {
		return 0
	}
	if ascii {
		return min(col, len(line))
	}
	units := 0
	for i, r := range line {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > col {
			return i
		}
		units += w
	}
	return len(line)
}

// byteToUTF16 returns the UTF-16 column of byte offset b within line,
// clamped to the line and moved back to the start of a character it splits.
func byteToUTF16(line string, b int, ascii bool) int {
	b = clampToRune(line, b)
	if ascii {
		return b
	}
	units := 0
	for _, r := range line[:b] {
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	return units
}

// clampToRune clamps b to [0, len(s)] and moves it back to the start of the
// UTF-8 sequence it points into.
func clampToRune(s string, b int) int {
	if b <= 0 {
		return 0
	}
	if b >= len(s) {
		return len(s)
	}
	// Step back over at most three continuation bytes to a start byte, and
	// keep it only if the sequence it starts really covers b; bytes of an
	// invalid sequence count as one character each, as in a range loop.
	for back := b - 1; back >= 0 && back >= b-(utf8.UTFMax-1); back-- {
		if utf8.RuneStart(s[back]) {
			if _, size := utf8.DecodeRuneInString(s[back:]); back+size > b {
				return back
			}
			break
		}
	}
	return b
}

// Change is one edit of a document, as LSP sends it in didChange.
// A nil Range replaces the whole text.
type Change struct {
	Range *UTF16Range `json:"range,omitempty"`
	Text  string      `json:"text"`
}

// ApplyChanges applies LSP content changes in order to text and returns the
// new text. Each change's range is interpreted against the text as left by
// the changes before it.
func ApplyChanges(text string, changes []Change) (string, error) {
	for i, c := range changes {
		if c.Range == nil {
			text = c.Text
			continue
		}
		m := NewMapper(text)
		start, err := m.utf16Offset(c.Range.Start, true)
		if err != nil {
			return "", fmt.Errorf("change %d: start: %w", i, err)
		}
		end, err := m.utf16Offset(c.Range.End, true)
		if err != nil {
			return "", fmt.Errorf("change %d: end: %w", i, err)
		}
		if end < start {
			return "", fmt.Errorf("change %d: end %v before start %v", i, c.Range.End, c.Range.Start)
		}
		var b strings.Builder
		b.Grow(start + len(c.Text) + len(text) - end)
		b.WriteString(text[:start])
		b.WriteString(c.Text)
		b.WriteString(text[end:])
		text = b.String()
	}
	return text, nil
}
