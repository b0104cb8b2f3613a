package traceback

import "strings"

// Version is what a text says about the version of a package that wrote
// it: `torch 2.11.0+cu130` (torchlsp's reports, `pip list`), `torch==2.11.0`
// (`pip freeze`), `PyTorch version: 2.11.0+cu130`
// (torch.utils.collect_env), `torch: 1.13.0`.
type Version struct {
	Line    int    // 0-based line of the text
	Package string // "torch"
	Version string // "2.11.0+cu130"
}

// Versions returns the version statements of text, whose first line is
// line firstLine of a larger document.
func Versions(text string, firstLine int) []Version {
	var out []Version
	forLines(text, func(lineNo int, line string) bool {
		out = appendVersions(out, line, firstLine+lineNo)
		return true
	})
	return out
}

// appendVersions appends the torch version statements of one line.
func appendVersions(dst []Version, line string, lineNo int) []Version {
	for from := 0; from < len(line); {
		i := strings.Index(line[from:], "orch")
		if i < 0 {
			break
		}
		at := from + i
		from = at + 4
		if at == 0 || (line[at-1] != 't' && line[at-1] != 'T') {
			continue
		}
		start := at - 1
		if start >= 2 && strings.EqualFold(line[start-2:start], "py") {
			start -= 2
		}
		if start > 0 && isWordByte(line[start-1]) {
			continue
		}
		if v, ok := versionAfter(line[from:]); ok {
			dst = append(dst, Version{Line: lineNo, Package: "torch", Version: v})
		}
	}
	return dst
}

// versionAfter reads what follows a package's name: an optional
// " version", a separator (" ", ": ", "==", "="), then a version.
func versionAfter(s string) (string, bool) {
	if len(s) > 8 && strings.EqualFold(s[:8], " version") {
		s = s[8:]
	}
	sep := 0
	for sep < len(s) && sep < 4 && (s[sep] == ' ' || s[sep] == ':' || s[sep] == '=') {
		sep++
	}
	if sep == 0 {
		return "", false
	}
	s = s[sep:]
	s = strings.TrimPrefix(s, "v")
	// N.N, then anything a version holds: digits, letters, ".", "+", "-".
	major, d1 := leadingInt(s)
	_ = major
	if d1 == 0 || d1+1 >= len(s) || s[d1] != '.' || !isDigit(s[d1+1]) {
		return "", false
	}
	end := d1 + 1
	for end < len(s) && end < 64 && (isWordByte(s[end]) || s[end] == '.' || s[end] == '+' || s[end] == '-') {
		end++
	}
	return strings.TrimRight(s[:end], ".-"), true
}

func isWordByte(c byte) bool {
	return c == '_' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// SameVersion reports whether two versions of a package name the same
// source: equal, or equal but for a local build tag that one of them
// leaves out ("2.11.0" and "2.11.0+cu130").
func SameVersion(a, b string) bool {
	if a == b {
		return true
	}
	pa, la, _ := strings.Cut(a, "+")
	pb, lb, _ := strings.Cut(b, "+")
	return pa == pb && (la == "" || lb == "")
}
