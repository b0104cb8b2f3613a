package diagnose

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/torchlsp/torchlsp/server/internal/torchtree"
)

// siteFiles reads files of the mirrored torch tree on demand, each once
// per check.
type siteFiles struct {
	dir   string
	lines map[string][]string
	found map[string]int // find's answers, by its arguments: each site asks again
}

func newSiteFiles(dir string) *siteFiles {
	return &siteFiles{dir: dir, lines: map[string][]string{}, found: map[string]int{}}
}

// file returns the lines of rel (slash separated, relative to the site
// dir), or nil when there is no site dir or the file cannot be read.
func (s *siteFiles) file(rel string) []string {
	if s.dir == "" {
		return nil
	}
	if l, ok := s.lines[rel]; ok {
		return l
	}
	var lines []string
	// A mirror's file, read as the cache's files are: no link at its
	// name, never blocking, a regular file of at most the mirror's
	// per-file limit (torchtree.MaxFileBytes).
	if b, err := torchtree.ReadFile(filepath.Join(s.dir, filepath.FromSlash(rel))); err == nil {
		lines = strings.Split(string(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))), "\n")
	}
	s.lines[rel] = lines
	return lines
}

// find returns the 0-based line of the first line of rel at or after from
// that contains every one of subs, or -1.
func (s *siteFiles) find(rel string, from int, subs ...string) int {
	key := fmt.Sprintf("%s\x00%d\x00%s", rel, from, strings.Join(subs, "\x00"))
	if i, ok := s.found[key]; ok {
		return i
	}
	i := s.scan(rel, from, subs)
	s.found[key] = i
	return i
}

func (s *siteFiles) scan(rel string, from int, subs []string) int {
	lines := s.file(rel)
	for i := max(from, 0); i < len(lines); i++ {
		ok := true
		for _, sub := range subs {
			if !strings.Contains(lines[i], sub) {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// findStatement returns the first line at or after from in rel that is a
// statement starting with keyword (not a comment or a string that names
// it) and contains every sub, or -1.
func (s *siteFiles) findStatement(rel string, from int, keyword string, subs ...string) int {
	lines := s.file(rel)
	for i := max(from, 0); i < len(lines); i++ {
		i = s.find(rel, i, subs...)
		if i < 0 {
			return -1
		}
		code := strings.TrimLeft(lines[i], " \t")
		if rest, ok := strings.CutPrefix(code, keyword); ok && rest != "" && (rest[0] == ' ' || rest[0] == '(') {
			return i
		}
	}
	return -1
}

// topLevelDef returns the line of rel's module-level `def name(` and the
// line that ends its body (the next statement at column 0, or the number
// of lines), or -1, -1.
func (s *siteFiles) topLevelDef(rel, name string) (def, end int) {
	lines := s.file(rel)
	for from := 0; ; from = def + 1 {
		def = s.find(rel, from, "def "+name+"(")
		if def < 0 {
			return -1, -1
		}
		if strings.HasPrefix(lines[def], "def ") {
			break
		}
	}
	for end = def + 1; end < len(lines); end++ {
		l := lines[end]
		if l != "" && l[0] != ' ' && l[0] != '\t' && l[0] != '#' && l[0] != ')' {
			break
		}
	}
	return def, end
}

// text returns line i of rel, trimmed, or "".
func (s *siteFiles) text(rel string, i int) string {
	lines := s.file(rel)
	if i < 0 || i >= len(lines) {
		return ""
	}
	return strings.TrimSpace(lines[i])
}
