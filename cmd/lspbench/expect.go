package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// where is one entry of a facts file: the file and first source line
// (decorators included, as inspect.getsourcelines reports it) of an object.
type where struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Error string `json:"error,omitempty"`
}

// expectation is where the definition of one symbol is, in the tree the
// servers read.
type expectation struct {
	Symbol string `json:"symbol"`
	// Rel is the file relative to the site directory, such as
	// "torch/nn/modules/linear.py"; answers are compared by this suffix.
	Rel string `json:"rel"`
	// Start is the first line (decorators included), Def the def or class
	// line, End the last line of the body; all 1-based.
	Start int `json:"start"`
	Def   int `json:"def"`
	End   int `json:"end"`
	// Name is the symbol's last component.
	Name string `json:"name"`
}

// inspectScript prints, for each dotted name in argv, where the object's
// source starts, as {"name": {"file": ..., "line": ...}} or {"error": ...}.
const inspectScript = `
import importlib, inspect, json, sys
out = {}
for name in sys.argv[1:]:
    try:
        parts = name.split(".")
        obj = None
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for attr in parts[i:]:
                obj = getattr(obj, attr)
            break
        if obj is None:
            raise ImportError(name)
        obj = inspect.unwrap(obj)
        _, line = inspect.getsourcelines(obj)
        out[name] = {"file": inspect.getsourcefile(obj), "line": line}
    except Exception as e:
        out[name] = {"error": repr(e)}
json.dump(out, sys.stdout)
`

// whereFromPython asks a real interpreter where each symbol is defined.
func whereFromPython(ctx context.Context, python string, env []string, symbols []string) (map[string]where, error) {
	cmd := exec.CommandContext(ctx, python, append([]string{"-c", inspectScript}, symbols...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: inspecting symbols: %w: %s", python, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var m map[string]where
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("%s: decoding inspect output: %w", python, err)
	}
	return m, nil
}

// whereFromFacts reads the "where" map of a facts file gathered on a
// target whose torch cannot be imported here.
func whereFromFacts(path string) (map[string]where, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("facts: %w", err)
	}
	var facts struct {
		Where map[string]where `json:"where"`
	}
	if err := json.Unmarshal(data, &facts); err != nil {
		return nil, fmt.Errorf("facts %s: %w", path, err)
	}
	if len(facts.Where) == 0 {
		return nil, fmt.Errorf("facts %s: no \"where\" entries", path)
	}
	return facts.Where, nil
}

// siteRel returns path relative to its site directory: the part after the
// last site-packages/ or dist-packages/, or after the last component named
// top when neither is present (a tree unpacked elsewhere).
func siteRel(path, top string) (string, bool) {
	path = filepath.ToSlash(path)
	best := -1
	for _, marker := range []string{"/site-packages/", "/dist-packages/"} {
		if i := strings.LastIndex(path, marker); i >= 0 && i+len(marker) > best {
			best = i + len(marker)
		}
	}
	if best >= 0 {
		return path[best:], true
	}
	if i := strings.LastIndex(path, "/"+top+"/"); i >= 0 {
		return path[i+1:], true
	}
	return "", false
}

// buildExpectations turns facts into expectations, reading each file in
// tree (the directory holding the torch package) to find the def line and
// the end of the body. Symbols without a usable fact are left out.
func buildExpectations(facts map[string]where, tree string) (map[string]expectation, []string) {
	out := make(map[string]expectation)
	var skipped []string
	names := make([]string, 0, len(facts))
	for n := range facts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		w := facts[name]
		if w.Error != "" || w.File == "" || w.Line <= 0 {
			skipped = append(skipped, fmt.Sprintf("%s (%s)", name, firstNonEmpty(w.Error, "no location")))
			continue
		}
		top, _, _ := strings.Cut(name, ".")
		rel, ok := siteRel(w.File, top)
		if !ok {
			skipped = append(skipped, fmt.Sprintf("%s (file %s is outside a site directory)", name, w.File))
			continue
		}
		local := w.File
		if tree != "" {
			local = filepath.Join(tree, filepath.FromSlash(rel))
		}
		lines, err := readLines(local)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s (%v)", name, err))
			continue
		}
		def, end, err := defSpan(lines, w.Line)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s (%s:%d: %v)", name, local, w.Line, err))
			continue
		}
		out[name] = expectation{Symbol: name, Rel: rel, Start: w.Line, Def: def, End: end, Name: name[strings.LastIndex(name, ".")+1:]}
	}
	return out, skipped
}

var defLine = regexp.MustCompile(`^\s*(async\s+)?(def|class)\s`)

// defSpan finds, from the 1-based start line, the def or class line (past
// decorators) and the last line of the indented body.
func defSpan(lines []string, start int) (def, end int, err error) {
	if start > len(lines) {
		return 0, 0, fmt.Errorf("line %d past the end (%d lines)", start, len(lines))
	}
	def = -1
	for i := start - 1; i < len(lines) && i < start-1+64; i++ {
		if defLine.MatchString(lines[i]) {
			def = i + 1
			break
		}
	}
	if def < 0 {
		return 0, 0, fmt.Errorf("no def or class line within 64 lines")
	}
	indent := indentOf(lines[def-1])
	end = def
	for i := def; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			continue
		}
		if indentOf(l) <= indent {
			break
		}
		end = i + 1
	}
	return def, end, nil
}

func indentOf(s string) int {
	n := 0
	for _, r := range s {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 8 - n%8
		default:
			return n
		}
	}
	return n
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// verdict is how one definition answer compares with its expectation.
type verdict struct {
	Strict  bool   `json:"strict"`
	Lenient bool   `json:"lenient"`
	Got     string `json:"got"` // path:line of the first location, or "none"
}

// judge compares the locations a server answered with exp. Strict: the
// first location is the object's .py file at a line between its first
// decorator and its def line. Lenient: any location that is strict, inside
// the object's body, or a line of the module's .py or .pyi that declares
// the name (an overload or a stub).
func judge(exp expectation, locs []location) verdict {
	if len(locs) == 0 {
		return verdict{Got: "none"}
	}
	v := verdict{Got: fmt.Sprintf("%s:%d", locs[0].Path, locs[0].Line)}
	stub := strings.TrimSuffix(exp.Rel, ".py") + ".pyi"
	declares := regexp.MustCompile(`^\s*((async\s+)?def|class)\s+` + regexp.QuoteMeta(exp.Name) + `\b|^\s*` + regexp.QuoteMeta(exp.Name) + `\s*[:=]`)
	for i, l := range locs {
		inPy := strings.HasSuffix(l.Path, "/"+exp.Rel)
		strict := inPy && l.Line >= exp.Start && l.Line <= exp.Def
		if i == 0 {
			v.Strict = strict
		}
		if strict || (inPy && l.Line >= exp.Start && l.Line <= exp.End) {
			v.Lenient = true
			continue
		}
		if inPy || strings.HasSuffix(l.Path, "/"+stub) {
			if text, ok := lineAt(l.Path, l.Line); ok && declares.MatchString(text) {
				v.Lenient = true
			}
		}
	}
	return v
}

func lineAt(path string, line int) (string, bool) {
	lines, err := readLines(path)
	if err != nil || line < 1 || line > len(lines) {
		return "", false
	}
	return lines[line-1], true
}
