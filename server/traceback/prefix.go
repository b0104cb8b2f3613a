package traceback

import "strings"

// glogPrefixLen returns the offset just past the `path:N]` of a TORCH_LOGS
// line's prefix, or -1 when line has none. torch's formatter writes
// `[rank0]:` (distributed runs only), then the level letter, `MMDD
// HH:MM:SS.ffffff`, the process id and `path:line]`, as in
//
//	W1201 23:05:33.428000 565 torch/_dynamo/variables/tensor.py:1379] [0/0] Graph break …
func glogPrefixLen(line string) int {
	s := skipRank(line)
	// "W1201 23:05:33.428000 565 "
	if len(s) < len("W0101 00:00:00 0 x:1]") || !strings.ContainsRune("VIWEC", rune(s[0])) {
		return -1
	}
	for i := 1; i <= 4; i++ {
		if !isDigit(s[i]) {
			return -1
		}
	}
	if s[5] != ' ' || !isDigit(s[6]) || !isDigit(s[7]) || s[8] != ':' {
		return -1
	}
	sp := strings.IndexByte(s[6:], ' ')
	if sp < 0 {
		return -1
	}
	rest := s[6+sp+1:] // "565 torch/…:1379] …"
	pid, digits := leadingInt(rest)
	if digits == 0 || pid < 0 || len(rest) <= digits || rest[digits] != ' ' {
		return -1
	}
	rest = rest[digits+1:]
	close := strings.IndexByte(rest, ']')
	if close < 0 {
		return -1
	}
	colon := strings.LastIndexByte(rest[:close], ':')
	if colon < 0 || colon+1 == close {
		return -1
	}
	if _, d := leadingInt(rest[colon+1 : close]); d != close-colon-1 {
		return -1
	}
	return len(line) - len(rest) + close + 1
}

// skipRank returns line without a torchrun `[rankN]:` prefix.
func skipRank(line string) string {
	if !strings.HasPrefix(line, "[rank") {
		return line
	}
	end := strings.Index(line, "]:")
	if end < 0 {
		return line
	}
	if _, d := leadingInt(line[len("[rank"):end]); d == 0 || d != end-len("[rank") {
		return line
	}
	return strings.TrimPrefix(line[end+2:], " ")
}

// body returns what a line says without the prefixes loggers put before
// it: a torchrun `[rankN]:`, a TORCH_LOGS prefix with its `[0/1]` frame id
// and `[__artifact]` tags. The stack structure is read from the body.
func body(line string) string {
	if n := glogPrefixLen(line); n >= 0 {
		rest := line[n:]
		for {
			t := strings.TrimPrefix(rest, " ")
			if !strings.HasPrefix(t, "[") {
				break
			}
			end := strings.IndexByte(t, ']')
			if end < 0 {
				break
			}
			rest = t[end+1:]
		}
		return strings.TrimPrefix(rest, " ")
	}
	return skipRank(line)
}
