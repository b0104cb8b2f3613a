// Package source holds the open documents as immutable, versioned
// snapshots: the text, its position mapper, and the analyses computed from
// it (the parse, the buffer's imports and names, the config-flag
// references), each computed at most once per version. A request takes one
// snapshot and works on it alone, so it never mixes two versions.
//
// Positions convert here and nowhere else: UTF-16 code units (what LSP
// sends), UTF-8 byte columns (what the engine works in) and the 1-based
// character columns the command line shows.
package source

// Position is a place in a text document: 0-based line, and 0-based column
// counted in UTF-8 bytes within the line.
type Position struct {
	Line   int
	Column int
}

// Range is a half-open span of a document.
type Range struct {
	Start, End Position
}

// UTF16 is a position as LSP counts it: 0-based line, and 0-based column in
// UTF-16 code units.
type UTF16 struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

// UTF16Range is a range in UTF-16 positions.
type UTF16Range struct {
	Start UTF16 `json:"start"`
	End   UTF16 `json:"end"`
}
