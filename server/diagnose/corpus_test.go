package diagnose

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The corpus: public scripts, kept out of the repository (the machine
// that runs the tests need not reach their hosts). testdata/corpus/
// manifest.tsv names each one, where it came from, the digest of the
// text the results were measured on, and the codes it must get on torch
// 2.11; TORCHLSP_CORPUS_DIR is the directory holding the texts
// (quiet/ and field/). Without it, or without the torch 2.11 tree, the
// test is skipped.

type corpusEntry struct {
	file, set, source, sha string
	want                   []string // codes on torch 2.11, "TL011"...; none for a quiet script
	line                   int
}

func readManifest(t *testing.T) []corpusEntry {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "corpus", "manifest.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 6 {
			t.Fatalf("manifest.tsv:%d: %d columns, want 6 (set, file, source, sha256, codes, verdict)", n, len(cols))
		}
		e := corpusEntry{set: cols[0], file: cols[1], source: cols[2], sha: cols[3], line: n}
		if cols[4] != "-" {
			e.want = strings.Split(cols[4], ",")
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every script of the corpus gets on torch 2.11 exactly the codes the
// manifest says (each once per line it names); the quiet set, public
// training and inference scripts, gets none.
func TestCorpus(t *testing.T) {
	t.Parallel()
	entries := readManifest(t)
	dir := os.Getenv("TORCHLSP_CORPUS_DIR")
	if dir == "" {
		t.Skip("TORCHLSP_CORPUS_DIR not set")
	}
	s := torch211(t)
	quiet := 0
	for _, e := range entries {
		t.Run(e.set+"/"+e.file, func(t *testing.T) {
			src := readFile(t, filepath.Join(dir, e.set, e.file))
			sum := sha256.Sum256(src)
			if got := hex.EncodeToString(sum[:]); got != e.sha {
				t.Fatalf("%s is not the text the manifest records (sha256 %s, manifest line %d says %s)", e.file, got, e.line, e.sha)
			}
			var got []string
			for _, d := range check(s, src) {
				got = append(got, codeOf(d.Code))
			}
			sort.Strings(got)
			want := slices.Clone(e.want)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("codes %v, the manifest says %v (line %d)\n%s", got, want, e.line, render(check(s, src)))
			}
		})
		if e.set == "quiet" {
			quiet++
		}
	}
	if quiet < 10 {
		t.Errorf("the quiet set has %d scripts, want at least 10", quiet)
	}
}
