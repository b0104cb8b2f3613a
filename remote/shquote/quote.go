// Package shquote quotes argv for POSIX shells, and builds the command line
// an SSH server's login shell runs to reach an interpreter through exec hops
// such as `pct exec 200 --` or `docker exec -i NAME`.
package shquote

import "strings"

// Quote returns s as a single word for a POSIX shell. Words made only of
// characters no shell treats specially are returned as they are, for
// readable command lines; everything else is single-quoted, and each
// single quote inside becomes: close quote, backslash-escaped quote,
// reopen quote. The empty string becomes a pair of single quotes.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isSafe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2 + 3*strings.Count(s, "'"))
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			b.WriteString(`'\''`)
			continue
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// Join quotes each element of argv and joins them with spaces, so that a
// POSIX shell splits the result back into exactly argv.
func Join(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Quote(a))
	}
	return b.String()
}

// isSafe reports whether s needs no quoting. '=' is excluded so that a
// leading word is never read as a variable assignment, and '~' so that it
// is never expanded.
func isSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_' || c == '/' || c == '.' || c == ',' || c == ':' || c == '@' || c == '+' || c == '%' || c == '-':
		default:
			return false
		}
	}
	return true
}
