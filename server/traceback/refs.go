// Package traceback finds the places in source files that a text names:
// Python traceback frames, faulthandler dumps, `path:line[:col]`,
// torch's TORCH_LOGS lines (graph breaks, recompiles, guard failures) and
// the short paths Dynamo writes, pytest's and torch._dynamo.explain's
// formats. It works on plain text and knows nothing of targets or
// mirrors: a path is reported as written, and the caller decides what it
// maps to. Pseudo-files (`<frozen runpy>`, `<string>`, fx's
// `<eval_with_key>.N`) are reported but marked, so that they are never
// taken for files.
package traceback

import (
	"strings"
)

// Format says how a text wrote a reference.
type Format uint8

const (
	// FormatFrame is a Python traceback frame, `File "PATH", line N, in
	// FUNC`; TorchScript's `File "PATH", line N` too.
	FormatFrame Format = iota + 1
	// FormatFaulthandler is faulthandler's `File "PATH", line N in FUNC`.
	FormatFaulthandler
	// FormatFrameSummary is `<FrameSummary file PATH, line N in FUNC>`, as
	// torch._dynamo.explain prints a user stack.
	FormatFrameSummary
	// FormatColon is `PATH:N` or `PATH:N:C`: warnings, pytest, Dynamo's
	// "in /path/x.py:6", linters, torchlsp's own output.
	FormatColon
	// FormatLogPrefix is the path in a TORCH_LOGS line's prefix,
	// `torch/_dynamo/guards.py:4758]`: relative to an entry of sys.path.
	FormatLogPrefix
	// FormatShort is torch's short frame, `_dynamo/output_graph.py:964 in
	// init_ambient_guards` (torch.utils._traceback.format_frame): relative
	// to the torch package's directory, or to the one above it.
	FormatShort
)

func (f Format) String() string {
	switch f {
	case FormatFrame:
		return "frame"
	case FormatFaulthandler:
		return "faulthandler"
	case FormatFrameSummary:
		return "framesummary"
	case FormatColon:
		return "colon"
	case FormatLogPrefix:
		return "logprefix"
	case FormatShort:
		return "short"
	}
	return "unknown"
}

// Ref is one place a text names: a file and a line in it.
type Ref struct {
	Line       int    // 0-based line of the text that holds it
	Start, End int    // byte offsets in that line of what links: the path through the line number
	Path       string // as written
	FileLine   int    // 1-based line in the file
	Column     int    // 1-based column in the file; 0 when not given
	Func       string // the function, where the format names it
	Format     Format
}

// Pseudo reports whether the ref names no file: `<frozen runpy>`,
// `<string>`, `<stdin>`, fx's `<eval_with_key>.0`, `???`.
func (r Ref) Pseudo() bool { return IsPseudo(r.Path) }

// IsPseudo reports whether a path a traceback names is a pseudo-file.
func IsPseudo(p string) bool {
	return p == "" || p[0] == '<' || p == "???"
}

// Limits on what a line may hold for a reference to be taken from it.
const (
	maxLineNumber = 1 << 24 // larger "line numbers" are not lines
	maxPathBytes  = 4096
)

// ScanLine appends the references line holds to dst; lineNo is recorded
// in each.
func ScanLine(line string, lineNo int, dst []Ref) []Ref { return scanLine(line, lineNo, dst, 0) }

// scanLine is ScanLine that stops once dst holds more than max
// references (0: no bound): a line of a log can be 64 MiB of frames, and
// the references past the caller's bound are never kept.
func scanLine(line string, lineNo int, dst []Ref, max int) []Ref {
	hasFile := strings.Contains(line, `File "`)
	hasPy := strings.Contains(line, ".py")
	if !hasFile && !hasPy {
		return dst
	}
	first := len(dst)
	if hasFile {
		dst = scanFileFrames(line, lineNo, dst, max)
	}
	if hasPy {
		if strings.Contains(line, "<FrameSummary file ") {
			dst = scanFrameSummaries(line, lineNo, dst, max)
		}
		dst = scanColons(line, lineNo, dst, first, max)
	}
	return dst
}

// scanFileFrames finds `File "PATH", line N[, in FUNC| in FUNC]`, anywhere
// in the line (an exception's message may embed one).
func scanFileFrames(line string, lineNo int, dst []Ref, max int) []Ref {
	const opener = `File "`
	for from := 0; from < len(line) && !full(dst, max); {
		i := strings.Index(line[from:], opener)
		if i < 0 {
			break
		}
		start := from + i + len(opener)
		from = start
		q := strings.IndexByte(line[start:], '"')
		if q <= 0 || q > maxPathBytes {
			continue
		}
		path := line[start : start+q]
		rest := line[start+q+1:]
		if !strings.HasPrefix(rest, ", line ") {
			continue
		}
		n, digits := leadingInt(rest[len(", line "):])
		if digits == 0 || n <= 0 {
			continue
		}
		end := start + q + 1 + len(", line ") + digits
		ref := Ref{Line: lineNo, Start: start, End: end, Path: path, FileLine: n, Format: FormatFrame}
		after := line[end:]
		switch {
		case strings.HasPrefix(after, ", in "):
			ref.Func = ident(after[len(", in "):])
		case strings.HasPrefix(after, " in "):
			ref.Format = FormatFaulthandler
			ref.Func = ident(after[len(" in "):])
		}
		dst = append(dst, ref)
		from = end
	}
	return dst
}

// scanFrameSummaries finds `<FrameSummary file PATH, line N in FUNC>`.
func scanFrameSummaries(line string, lineNo int, dst []Ref, max int) []Ref {
	const opener = "<FrameSummary file "
	for from := 0; from < len(line) && !full(dst, max); {
		i := strings.Index(line[from:], opener)
		if i < 0 {
			break
		}
		start := from + i + len(opener)
		from = start
		c := strings.Index(line[start:], ", line ")
		if c <= 0 || c > maxPathBytes {
			continue
		}
		n, digits := leadingInt(line[start+c+len(", line "):])
		if digits == 0 || n <= 0 {
			continue
		}
		end := start + c + len(", line ") + digits
		ref := Ref{Line: lineNo, Start: start, End: end, Path: line[start : start+c], FileLine: n, Format: FormatFrameSummary}
		if after := line[end:]; strings.HasPrefix(after, " in ") {
			ref.Func = ident(after[len(" in "):])
		}
		dst = append(dst, ref)
		from = end
	}
	return dst
}

// scanColons finds `PATH.py:N[:C]` and `PATH.pyi:N[:C]` outside the spans
// of the file refs found before (dst[first:]); a pseudo-file's name may
// hold one (`<eval_with_key>.0 from /tmp/x.py:6 in forward`), and it is
// taken.
func scanColons(line string, lineNo int, dst []Ref, first, max int) []Ref {
	covered := dst[first:]
	for from := 0; from < len(line) && !full(dst, max); {
		i := strings.Index(line[from:], ".py")
		if i < 0 {
			break
		}
		dot := from + i
		from = dot + 3
		colon := dot + 3
		if colon < len(line) && line[colon] == 'i' {
			colon++
		}
		if colon+1 >= len(line) || line[colon] != ':' || !isDigit(line[colon+1]) {
			continue
		}
		start := dot
		for start > 0 && !isPathStop(line[start-1]) {
			start--
		}
		if start == dot || dot-start > maxPathBytes || inside(covered, start) {
			continue
		}
		n, digits := leadingInt(line[colon+1:])
		if digits == 0 || n <= 0 {
			continue
		}
		end := colon + 1 + digits
		ref := Ref{Line: lineNo, Start: start, End: end, Path: line[start:colon], FileLine: n, Format: FormatColon}
		if end+1 < len(line) && line[end] == ':' && isDigit(line[end+1]) {
			if c, d := leadingInt(line[end+1:]); d > 0 {
				ref.Column = c
				end += 1 + d
				ref.End = end
			}
		}
		after := line[end:]
		switch {
		case strings.HasPrefix(after, "]") && glogPrefixLen(line) >= end:
			ref.Format = FormatLogPrefix
		case strings.HasPrefix(after, " in "):
			ref.Func = ident(after[len(" in "):])
			if !strings.HasPrefix(ref.Path, "/") {
				ref.Format = FormatShort
			}
		case strings.HasPrefix(after, ": in "):
			ref.Func = ident(after[len(": in "):])
		case strings.HasPrefix(after, ", in "):
			ref.Func = ident(after[len(", in "):])
		}
		dst = append(dst, ref)
		from = end
	}
	return dst
}

// full says dst holds more than max references (max 0: no bound).
func full(dst []Ref, max int) bool { return max > 0 && len(dst) > max }

// inside reports whether offset lies in the span of a ref that names a
// file (pseudo-files' names are searched).
func inside(refs []Ref, offset int) bool {
	for _, r := range refs {
		if !r.Pseudo() && offset >= r.Start && offset < r.End {
			return true
		}
	}
	return false
}

// isPathStop reports whether c ends a path written without quotes.
func isPathStop(c byte) bool {
	switch c {
	case ' ', '\t', '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', '=', ',', ';', '|', ':', '*':
		return true
	}
	return c < ' '
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// leadingInt reads the decimal number s starts with, and how many bytes
// it took; numbers over maxLineNumber are refused (0 bytes).
func leadingInt(s string) (n, digits int) {
	for digits < len(s) && isDigit(s[digits]) {
		n = n*10 + int(s[digits]-'0')
		digits++
		if n > maxLineNumber {
			return 0, 0
		}
	}
	return n, digits
}

// ident reads the function name s starts with: a Python identifier, or
// the `<module>`-like names tracebacks print.
func ident(s string) string {
	end := 0
	for end < len(s) && end < 256 {
		c := s[end]
		if c == ' ' || c == ',' || c == '(' || c == ')' || c == '"' || c == '\t' || c == '\r' || (c == '>' && (end == 0 || s[0] != '<')) {
			break
		}
		end++
		if c == '>' {
			break
		}
	}
	return s[:end]
}
