package gates

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
	"github.com/torchlsp/torchlsp/server/syntax"
)

func TestTopLevelPieces(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // first line of each piece
	}{
		{"simple", "a = 1\nb = 2\n", []string{"a = 1", "b = 2"}},
		{"decorator stays", "@dec\ndef f():\n    pass\nx = 1\n", []string{"@dec", "x = 1"}},
		{"else stays", "if a:\n    b = 1\nelse:\n    b = 2\nc = 3\n", []string{"if a:", "c = 3"}},
		{"try stays", "try:\n    x\nexcept E:\n    y\nfinally:\n    z\nw\n", []string{"try:", "w"}},
		{"triple string", "s = \"\"\"\nnot_a_statement = 1\n\"\"\"\nt = 2\n", []string{"s = \"\"\"", "t = 2"}},
		{"brackets", "x = (\n1,\n)\ny = [\n]\n", []string{"x = (", "y = ["}},
		{"continuation", "x = 1 + \\\n2\ny = 3\n", []string{"x = 1 + \\", "y = 3"}},
		{"comment with quote", "# it's\nx = 1\n", []string{"# it's", "x = 1"}},
		{"escaped quote", "s = 'a\\'b'\nt = 1\n", []string{"s = 'a\\'b'", "t = 1"}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(tt.src)
			var got []string
			end := 0
			for _, p := range topLevelPieces(b) {
				if p.start != end {
					t.Fatalf("gap or overlap at %d (piece starts %d)", end, p.start)
				}
				end = p.end
				got = append(got, strings.SplitN(string(b[p.start:p.end]), "\n", 2)[0])
				if want := strings.Count(string(b[:p.start]), "\n"); p.line != want {
					t.Errorf("piece at %d: line %d, want %d", p.start, p.line, want)
				}
			}
			if end != len(b) {
				t.Errorf("pieces end at %d of %d", end, len(b))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("pieces = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestContainsWord(t *testing.T) {
	tests := []struct {
		text, word string
		want       bool
	}{
		{"from . import config", "config", true},
		{"qconfig = 1", "config", false},
		{"config_list = 1", "config", false},
		{"x.config.y", "config", true},
		{"qconfig; config", "config", true},
		{"config", "config", true},
		{"", "config", false},
	}
	for _, tt := range tests {
		if got := containsWord([]byte(tt.text), tt.word); got != tt.want {
			t.Errorf("containsWord(%q, %q) = %v", tt.text, tt.word, got)
		}
	}
}

// fuzzIndex is a small flag index shaped like inductor's.
func fuzzIndex() *flagIndex {
	return newFlagIndex([]*Module{{
		Name:       "torch._inductor.config",
		Flags:      []*Flag{{Key: "debug"}, {Key: "triton.cudagraph_trees"}},
		SubConfigs: []string{"triton"},
	}})
}

// maxFuzzSource is the largest source the fuzz targets scan. An input
// of FuzzScanSites costs up to three parses (two when the parser gives
// up), and a parse of n bytes may take
// syntax.CPULimit(n) (0.13 s at 16 KiB) when tree-sitter's error recovery
// is quadratic on it: larger inputs would come near the time fuzzdeadline
// gives an input on that bound alone, and slow the fuzzing of the rest.
const maxFuzzSource = 16 << 10

// fuzzParser is the one parser of a fuzz target's inputs: an input
// measures the scanner, not making a parser.
func fuzzParser(f *testing.F) *syntax.Parser {
	p, err := syntax.NewParser()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(p.Close)
	return p
}

// Broken, truncated and random sources never crash the scanner, and the
// piece-wise scan always agrees with the whole-file scan.
func FuzzScanSites(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	for _, name := range []string{"compile_fx.py", "broken.py", "output_code.py", "config.py"} {
		b, err := os.ReadFile(filepath.Join(fixtureSite, "torch", "_inductor", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte("from torch._inductor import config\nif config.debug:\n    '''\nx = 1\n"))
	f.Add([]byte("import torch\nf\"{config.debug}\"\nconfig = 1\n"))
	f.Add([]byte("\x00\xff config ((( '''"))
	ix := fuzzIndex()
	p := fuzzParser(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		deadline.Start(t, b)
		if len(b) > maxFuzzSource {
			t.Skipf("%d bytes, over %d", len(b), maxFuzzSource)
		}
		const name = "torch/_inductor/fuzz.py"
		pieces := scanSites(p, ix, name, b, true)
		// Agreement is promised for real Python: UTF-8 that parses. With a
		// syntax error in a skipped piece the whole-file parse recovers
		// differently, and a stray non-UTF-8 byte can glue onto a name.
		if !utf8.Valid(b) {
			scanSites(p, ix, name, b, false)
			return
		}
		tr := p.Parse(b)
		if tr.GaveUp() {
			return // the whole-file scan parses b and gives up the same way
		}
		whole := scanSites(p, ix, name, b, false)
		if tr.HasError() || !splitterAgrees(b, tr) {
			return
		}
		sortSites(pieces)
		sortSites(whole)
		if !reflect.DeepEqual(pieces, whole) {
			t.Errorf("piece-wise sites %v != whole-file sites %v", pieces, whole)
		}
	})
}

func FuzzConfigModule(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	b, err := os.ReadFile(filepath.Join(fixtureSite, "torch", "_inductor", "config.py"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/3])
	f.Add([]byte("import sys\nclass a:\n  @x\n  class b: pass\ninstall_config_module(sys.modules[__name__])\n"))
	p := fuzzParser(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		deadline.Start(t, b)
		if len(b) > maxFuzzSource {
			t.Skipf("%d bytes, over %d", len(b), maxFuzzSource)
		}
		parseConfigModule(p, b, "torch/x/config.py", "torch.x.config")
		parseModes(p, b)
	})
}

// sortSites orders each flag's sites by position, as Scan does.
func sortSites(m map[string][]Site) {
	for _, v := range m {
		sort.Slice(v, func(i, j int) bool {
			if v[i].Line != v[j].Line {
				return v[i].Line < v[j].Line
			}
			return v[i].Col < v[j].Col
		})
	}
}

// splitterAgrees reports whether topLevelPieces starts a piece exactly where
// tree-sitter starts a top-level statement. Tree-sitter accepts some text
// Python rejects (an import continued on the next line without brackets);
// there the two may disagree, and piece-wise results are not promised.
func splitterAgrees(b []byte, t *syntax.Tree) bool {
	starts := map[int]bool{}
	if t.Root() < 0 {
		return false
	}
	for c := range t.Children(t.Root()) {
		if t.Kind(c) != syntax.KindComment {
			starts[t.Start(c)] = true
		}
	}
	for _, pc := range topLevelPieces(b) {
		j := pc.start
		for j < pc.end && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r' || b[j] == '#') {
			if b[j] == '#' {
				for j < pc.end && b[j] != '\n' {
					j++
				}
				continue
			}
			j++
		}
		if j == pc.end {
			continue // only blank lines and comments
		}
		if !starts[j] {
			return false
		}
		delete(starts, j)
	}
	return len(starts) == 0
}

// A statement on which the parser gives up (syntax.CPULimit) costs the
// piece-wise scan one parse, not a second of the whole file, which would
// give up too: the sites of the statements parsed before it are kept.
func TestScanKeepsSitesWhenTheParserGivesUp(t *testing.T) {
	t.Parallel()
	p, err := syntax.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// cfg is found in the first round, c2 in the second, and only the
	// third parses the statement that makes tree-sitter quadratic.
	src := []byte("import torch._inductor.config as cfg\ncfg.debug = True\nc2 = cfg\ny = c2" +
		strings.Repeat(".", 32000) + "\n")
	if tree := p.Parse(src); !tree.GaveUp() {
		t.Fatalf("the parser did not give up on %d bytes of dots", len(src))
	}
	sites := scanSites(p, fuzzIndex(), "torch/_inductor/x.py", src, true)
	if got := sites["torch._inductor.config.debug"]; len(got) != 1 || got[0].Line != 1 {
		t.Errorf("sites of config.debug = %+v, want the write on line 1", got)
	}
}
