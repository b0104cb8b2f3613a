package traceback

import (
	"strings"
)

// Stack is one call stack a text prints: a Python traceback, one
// thread's faulthandler dump, Dynamo's "from user code:" stack, autograd's
// "Traceback of forward call that caused the error:".
type Stack struct {
	Header int   // 0-based line of its header
	Frames []Ref // in the order printed; pseudo-files included
	// MostRecentFirst is set for dumps that print the innermost call first
	// (faulthandler's "(most recent call first):").
	MostRecentFirst bool
	// Exception is the line after a Python traceback that names the
	// exception ("AssertionError", "RuntimeError: mat1 and mat2 …"), and
	// ExceptionLine its 0-based line; "" and -1 when none follows.
	Exception     string
	ExceptionLine int
	python        bool // a Python traceback: it ends at its exception line
}

// Innermost returns the frames, innermost call first.
func (s Stack) Innermost() []Ref {
	out := make([]Ref, len(s.Frames))
	copy(out, s.Frames)
	if !s.MostRecentFirst {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// Result is what Parse found in a text.
type Result struct {
	Refs     []Ref     // every reference, in text order
	Stacks   []Stack   // the stacks, in text order
	Versions []Version // what the text says of the versions that wrote it
	// Truncated is set when the text held more references than the limit
	// Parse was given; the rest are not in Refs or Stacks.
	Truncated bool
}

// Parse reads a whole text: its references, how they group into stacks,
// and its version statements. maxRefs bounds the references kept (0: no
// bound); the caller bounds the text.
func Parse(text string, maxRefs int) Result {
	var (
		res   Result
		cur   *Stack
		lines int
	)
	closeStack := func() {
		if cur != nil && len(cur.Frames) > 0 {
			res.Stacks = append(res.Stacks, *cur)
		}
		cur = nil
	}
	forLines(text, func(lineNo int, line string) bool {
		lines++
		first := len(res.Refs)
		res.Refs = scanLine(line, lineNo, res.Refs, maxRefs)
		if maxRefs > 0 && len(res.Refs) > maxRefs {
			res.Refs = res.Refs[:maxRefs]
			res.Truncated = true
			return false
		}
		res.Versions = appendVersions(res.Versions, line, lineNo)
		b := body(line)
		t := strings.TrimRight(strings.TrimLeft(b, " \t"), " \t\r")
		indent := len(b) - len(strings.TrimLeft(b, " \t"))
		if kind := header(t); kind != noHeader {
			closeStack()
			cur = &Stack{Header: lineNo, MostRecentFirst: kind == headerFirst, python: kind == headerPython, ExceptionLine: -1}
			return true
		}
		if cur == nil {
			return true
		}
		frameText := strings.TrimLeft(strings.TrimPrefix(t, "- "), " ")
		if strings.HasPrefix(frameText, `File "`) || strings.HasPrefix(frameText, "<FrameSummary file ") {
			for _, r := range res.Refs[first:] {
				if r.Format == FormatFrame || r.Format == FormatFaulthandler || r.Format == FormatFrameSummary {
					cur.Frames = append(cur.Frames, r)
					break
				}
			}
			return true
		}
		switch {
		case t == "":
			closeStack()
		case indent == 0 && cur.python:
			cur.Exception, cur.ExceptionLine = t, lineNo
			closeStack()
		case indent == 0:
			closeStack()
		}
		return true
	})
	closeStack()
	return res
}

type headerKind int

const (
	noHeader     headerKind = iota
	headerPython            // "Traceback (most recent call last):": ends at the exception line
	headerLast              // another stack printed innermost call last
	headerFirst             // innermost call first
)

// header says whether a line (its body, trimmed) starts a stack.
func header(t string) headerKind {
	switch {
	case strings.HasSuffix(t, "(most recent call last):"):
		return headerPython
	case strings.HasSuffix(t, "(most recent call first):"):
		return headerFirst
	case t == "from user code:", strings.HasSuffix(t, "from user code at:"), t == "User code traceback:",
		strings.HasSuffix(t, "User stack trace:"), strings.HasSuffix(t, "Traceback of forward call that caused the error:"):
		return headerLast
	}
	return noHeader
}

// Refs returns the references of text, whose first line is line firstLine
// of a larger document, up to max of them (0: no bound), and whether
// there were more.
func Refs(text string, firstLine, max int) ([]Ref, bool) {
	var refs []Ref
	more := false
	forLines(text, func(lineNo int, line string) bool {
		refs = scanLine(line, firstLine+lineNo, refs, max)
		if max > 0 && len(refs) > max {
			refs, more = refs[:max], true
			return false
		}
		return true
	})
	return refs, more
}

// forLines calls fn with each line of text (without its line break: "\n",
// "\r\n" or a lone "\r", as LSP counts lines) until fn returns false.
func forLines(text string, fn func(lineNo int, line string) bool) {
	for n := 0; len(text) > 0 || n == 0; n++ {
		end := strings.IndexAny(text, "\r\n")
		if end < 0 {
			fn(n, text)
			return
		}
		line := text[:end]
		next := end + 1
		if text[end] == '\r' && next < len(text) && text[next] == '\n' {
			next++
		}
		if !fn(n, line) {
			return
		}
		text = text[next:]
		if text == "" {
			return
		}
	}
}
