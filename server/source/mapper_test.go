package source

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// mixed has every kind of line end and characters of 1, 2, 3 and 4 UTF-8
// bytes (the last a UTF-16 surrogate pair).
const mixed = "hello\nwörld\r\n😀x\r€ last"

func TestMapperFromUTF16(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		line, chr uint32
		want      Position
		wantErr   bool
	}{
		{"start", mixed, 0, 0, Position{Line: 0, Column: 0}, false},
		{"ascii end", mixed, 0, 5, Position{Line: 0, Column: 5}, false},
		{"past LF line end clamps", mixed, 0, 99, Position{Line: 0, Column: 5}, false},
		{"before 2-byte char", mixed, 1, 1, Position{Line: 1, Column: 1}, false},
		{"after 2-byte char", mixed, 1, 2, Position{Line: 1, Column: 3}, false},
		{"past CRLF line end clamps before CR", mixed, 1, 50, Position{Line: 1, Column: 6}, false},
		{"inside surrogate pair rounds down", mixed, 2, 1, Position{Line: 2, Column: 0}, false},
		{"after surrogate pair", mixed, 2, 2, Position{Line: 2, Column: 4}, false},
		{"after emoji and x", mixed, 2, 3, Position{Line: 2, Column: 5}, false},
		{"past lone-CR line end", mixed, 2, 4, Position{Line: 2, Column: 5}, false},
		{"after 3-byte char", mixed, 3, 1, Position{Line: 3, Column: 3}, false},
		{"last line end", mixed, 3, 6, Position{Line: 3, Column: 8}, false},
		{"line past EOF", mixed, 4, 0, Position{}, true},
		{"empty text", "", 0, 3, Position{Line: 0, Column: 0}, false},
		{"empty text line 1", "", 1, 0, Position{}, true},
		{"trailing newline makes an empty line", "a\n", 1, 0, Position{Line: 1, Column: 0}, false},
		{"docstring", "    \"\"\"Größe – 数据 𝔘 done\"\"\"", 0, 22, Position{Line: 0, Column: 32}, false},
		{"CR CR is two line ends", "a\r\rb", 2, 1, Position{Line: 2, Column: 1}, false},
		{"invalid UTF-8 counts per byte", "a\xffb", 0, 2, Position{Line: 0, Column: 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewMapper(tt.text).FromUTF16(UTF16{Line: tt.line, Character: tt.chr})
			if tt.wantErr {
				if !errors.Is(err, ErrLineOutOfRange) {
					t.Fatalf("FromUTF16(%d:%d) error = %v, want ErrLineOutOfRange", tt.line, tt.chr, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("FromUTF16(%d:%d) = %+v, %v; want %+v", tt.line, tt.chr, got, err, tt.want)
			}
		})
	}
}

func TestMapperToUTF16(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		pos     Position
		want    UTF16
		wantErr bool
	}{
		{"start", mixed, Position{Line: 0, Column: 0}, UTF16{Line: 0, Character: 0}, false},
		{"after ö", mixed, Position{Line: 1, Column: 3}, UTF16{Line: 1, Character: 2}, false},
		{"inside ö rounds down", mixed, Position{Line: 1, Column: 2}, UTF16{Line: 1, Character: 1}, false},
		{"inside emoji rounds down", mixed, Position{Line: 2, Column: 3}, UTF16{Line: 2, Character: 0}, false},
		{"after emoji", mixed, Position{Line: 2, Column: 4}, UTF16{Line: 2, Character: 2}, false},
		{"past end clamps", mixed, Position{Line: 3, Column: 100}, UTF16{Line: 3, Character: 6}, false},
		{"negative column clamps", mixed, Position{Line: 3, Column: -4}, UTF16{Line: 3, Character: 0}, false},
		{"line past EOF", mixed, Position{Line: 4}, UTF16{}, true},
		{"negative line", mixed, Position{Line: -1}, UTF16{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewMapper(tt.text).ToUTF16(tt.pos)
			if tt.wantErr {
				if !errors.Is(err, ErrLineOutOfRange) {
					t.Fatalf("ToUTF16(%+v) error = %v, want ErrLineOutOfRange", tt.pos, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ToUTF16(%+v) = %+v, %v; want %+v", tt.pos, got, err, tt.want)
			}
		})
	}
}

func TestMapperCharColumns(t *testing.T) {
	m := NewMapper(mixed)
	tests := []struct {
		line, col int
		want      Position
	}{
		{1, 1, Position{Line: 0, Column: 0}},
		{2, 3, Position{Line: 1, Column: 3}},  // after "wö"
		{3, 2, Position{Line: 2, Column: 4}},  // after the emoji: one character
		{3, 99, Position{Line: 2, Column: 5}}, // clamped
		{4, 2, Position{Line: 3, Column: 3}},
	}
	for _, tt := range tests {
		got, err := m.FromCharColumn(tt.line, tt.col)
		if err != nil || got != tt.want {
			t.Errorf("FromCharColumn(%d, %d) = %+v, %v; want %+v", tt.line, tt.col, got, err, tt.want)
			continue
		}
		if tt.col == 99 {
			continue
		}
		line, col, err := m.ToCharColumn(got)
		if err != nil || line != tt.line || col != tt.col {
			t.Errorf("ToCharColumn(%+v) = %d:%d, %v; want %d:%d", got, line, col, err, tt.line, tt.col)
		}
	}
	for _, bad := range [][2]int{{0, 1}, {5, 1}, {1, 0}} {
		if _, err := m.FromCharColumn(bad[0], bad[1]); err == nil {
			t.Errorf("FromCharColumn(%d, %d) succeeded, want an error", bad[0], bad[1])
		}
	}
}

func TestMapperOffsets(t *testing.T) {
	m := NewMapper(mixed)
	for offset := 0; offset <= len(mixed); offset++ {
		p := m.PositionAt(offset)
		got, err := m.Offset(p)
		if err != nil {
			t.Fatalf("Offset(PositionAt(%d) = %+v): %v", offset, p, err)
		}
		// Offsets inside a line break or a character map back to the
		// line's end or the character's start: never forward, and to a
		// position that maps to itself.
		if got > offset || m.PositionAt(got) != p {
			t.Errorf("Offset(PositionAt(%d) = %+v) = %d", offset, p, got)
		}
	}
	if got := m.PositionAt(len(mixed) + 10); got != (Position{Line: 3, Column: 8}) {
		t.Errorf("PositionAt(past end) = %+v", got)
	}
	if m.LineCount() != 4 {
		t.Errorf("LineCount = %d, want 4", m.LineCount())
	}
}

func rng(l1, c1, l2, c2 uint32) *UTF16Range {
	return &UTF16Range{Start: UTF16{Line: l1, Character: c1}, End: UTF16{Line: l2, Character: c2}}
}

func TestApplyChanges(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		changes []Change
		want    string
		wantErr bool
	}{
		{"insert at start", "abc", []Change{{Range: rng(0, 0, 0, 0), Text: "x"}}, "xabc", false},
		{"full replace", "abc", []Change{{Text: "new"}}, "new", false},
		{"replace across lines", "one\ntwo\nthree", []Change{{Range: rng(0, 1, 2, 2), Text: "-"}}, "o-ree", false},
		{"after non-ASCII", "# Größe\nx", []Change{{Range: rng(0, 5, 0, 5), Text: "n"}}, "# Grönße\nx", false},
		{"replace emoji", "a😀b", []Change{{Range: rng(0, 1, 0, 3), Text: "🐍"}}, "a🐍b", false},
		{"typing sequence", "def f():\n    pass\n", []Change{
			{Range: rng(1, 4, 1, 8), Text: "return"},
			{Range: rng(1, 10, 1, 10), Text: " 1"},
			{Range: rng(0, 4, 0, 5), Text: "größe"},
		}, "def größe():\n    return 1\n", false},
		{"CRLF preserved", "a\r\nb\r\n", []Change{{Range: rng(1, 0, 1, 1), Text: "c"}}, "a\r\nc\r\n", false},
		{"delete line break", "a\r\nb", []Change{{Range: rng(0, 1, 1, 0), Text: ""}}, "ab", false},
		{"end of document as next line", "a\nb", []Change{{Range: rng(1, 1, 2, 0), Text: "c"}}, "a\nbc", false},
		{"clamped character", "ab\ncd", []Change{{Range: rng(0, 9, 0, 9), Text: "!"}}, "ab!\ncd", false},
		{"start past EOF", "a", []Change{{Range: rng(3, 0, 3, 0), Text: "x"}}, "", true},
		{"end before start", "abc", []Change{{Range: rng(0, 2, 0, 1), Text: "x"}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ApplyChanges(tt.text, tt.changes)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ApplyChanges = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ApplyChanges = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// refLines splits text at LSP line ends, the slow obvious way.
func refLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

// refUTF16ToByte is the obvious conversion: walk the characters of line,
// adding each one's UTF-16 width.
func refUTF16ToByte(line string, char int) int {
	units, b := 0, 0
	for b < len(line) {
		r, size := utf8.DecodeRuneInString(line[b:])
		w := len(utf16Encode(r))
		if units+w > char {
			break
		}
		units += w
		b += size
	}
	return b
}

func utf16Encode(r rune) []uint16 {
	if r >= 0x10000 {
		return []uint16{0, 0}
	}
	return []uint16{0}
}

func FuzzMapper(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	f.Add(mixed, uint32(2), uint32(1))
	f.Add("a\r\n\rb", uint32(1), uint32(0))
	f.Add("\xf0\x9f\x98", uint32(0), uint32(2))
	f.Add("    \"\"\"Größe – 数据 𝔘\"\"\"\n", uint32(0), uint32(12))
	f.Fuzz(func(t *testing.T, text string, line, char uint32) {
		deadline.Start(t, text, line, char)
		m := NewMapper(text)
		lines := refLines(text)
		if m.LineCount() != len(lines) {
			t.Fatalf("LineCount = %d, want %d", m.LineCount(), len(lines))
		}
		pos, err := m.FromUTF16(UTF16{Line: line, Character: char})
		if int(line) >= len(lines) {
			if err == nil {
				t.Fatalf("FromUTF16(%d:%d) past EOF succeeded", line, char)
			}
			return
		}
		if err != nil {
			t.Fatalf("FromUTF16(%d:%d): %v", line, char, err)
		}
		if want := refUTF16ToByte(lines[line], int(char)); pos.Column != want {
			t.Fatalf("FromUTF16(%d:%d) column = %d, want %d (line %q)", line, char, pos.Column, want, lines[line])
		}
		back, err := m.ToUTF16(pos)
		if err != nil || back.Line != line || back.Character > char {
			t.Fatalf("ToUTF16(%+v) = %+v, %v; want line %d, character <= %d", pos, back, err, line, char)
		}
		again, err := m.FromUTF16(back)
		if err != nil || again != pos {
			t.Fatalf("FromUTF16(ToUTF16(%+v)) = %+v, %v", pos, again, err)
		}
		l1, c1, err := m.ToCharColumn(pos)
		if err != nil {
			t.Fatal(err)
		}
		if p2, err := m.FromCharColumn(l1, c1); err != nil || p2 != pos {
			t.Fatalf("FromCharColumn(ToCharColumn(%+v)) = %+v, %v", pos, p2, err)
		}
		// An edit at pos inserts exactly there.
		edited, err := ApplyChanges(text, []Change{{Range: &UTF16Range{Start: back, End: back}, Text: "§"}})
		if err != nil {
			t.Fatalf("ApplyChanges at %+v: %v", back, err)
		}
		off, _ := m.Offset(pos)
		if want := text[:off] + "§" + text[off:]; edited != want {
			t.Fatalf("ApplyChanges at %+v = %q, want %q", back, edited, want)
		}
	})
}

func BenchmarkNewMapper(b *testing.B) {
	text := strings.Repeat("    x = torch.zeros(3)  # Größe 😀\n", 3000)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		NewMapper(text)
	}
}

func BenchmarkFromUTF16(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"ascii", "    x = torch.zeros(3)  # plain comment here\n"},
		{"unicode", "    x = torch.zeros(3)  # Größe 😀 数据 here\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := NewMapper(strings.Repeat(bc.line, 3000))
			p := UTF16{Line: 1500, Character: 30}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.FromUTF16(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkApplyChange(b *testing.B) {
	text := strings.Repeat("    x = torch.zeros(3)  # Größe 😀\n", 3000)
	changes := []Change{{Range: rng(1500, 8, 1500, 8), Text: "y"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ApplyChanges(text, changes); err != nil {
			b.Fatal(err)
		}
	}
}
