package diagnose

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

// Every spelling of a flag reference in testdata/refs/spellings.py.
func TestFlagRefs(t *testing.T) {
	s := fixture(t)
	src := readFile(t, filepath.Join("testdata/refs", "spellings.py"))
	refs := FlagRefs(pybuf.Parse(src), s.cat)
	type want struct {
		spelling Spelling
		key      string
		span     string // 1-based line:col-line:col
		write    bool
		value    string
	}
	wants := []want{
		{SpellAttribute, "triton.cudagraph_trees", "7:24-7:46", true, "False"},
		{SpellAttribute, "triton.cudagraphs", "8:17-8:34", true, "True"},
		{SpellAttribute, "triton.cudagraphs", "9:9-9:19", false, ""},
		{SpellAttribute, "max_autotune", "9:28-9:40", false, ""},
		{SpellAttribute, "triton.cudagraph_trees_history_recording", "10:8-10:48", true, "False"},
		{SpellOptionsKey, "triton.cudagraphs", "11:43-11:60", true, "False"},
		{SpellOptionsKey, "max_autotune", "11:71-11:83", true, "True"},
		{SpellPatchString, "triton.cudagraph_trees", "12:20-12:42", true, "True"},
		{SpellPatchDict, "max_autotune", "14:21-14:33", true, "False"},
		{SpellPatchKwarg, "max_autotune", "18:15-18:27", true, "True"},
		{SpellEnvVar, "triton.cudagraphs", "23:13-23:37", true, `"1"`},
		{SpellEnvVar, "max_autotune", "24:24-24:50", false, ""},
		{SpellEnvVar, "fx_graph_cache", "25:24-25:52", true, `"0"`},
		{SpellEnvVar, "triton.cudagraphs", "26:12-26:36", true, `"0"`},
		{SpellGetattr, "debug", "27:18-27:23", true, "True"},
		{SpellGetattr, "triton.cudagraph_trees", "28:19-28:34", false, ""},
		{SpellGetattr, "max_autotune", "28:55-28:67", false, ""},
		{SpellEnvVar, "triton.cudagraphs", "34:25-34:49", true, `"1"`},
	}
	var got []want
	for _, r := range refs {
		if r.Flag == nil {
			t.Errorf("unknown flag %s at %s", r.Key, spanString(r.Span))
			continue
		}
		if r.Flag.Key != r.Key || r.Module != "torch._inductor.config" {
			t.Errorf("ref %s.%s names flag %s", r.Module, r.Key, r.Flag.FullKey())
		}
		got = append(got, want{r.Spelling, r.Key, spanString(r.Span), r.Write, r.Value})
	}
	if fmt.Sprint(got) != fmt.Sprint(wants) {
		t.Errorf("FlagRefs:\n got %v\nwant %v", got, wants)
		for i := range max(len(got), len(wants)) {
			var g, w want
			if i < len(got) {
				g = got[i]
			}
			if i < len(wants) {
				w = wants[i]
			}
			if g != w {
				t.Errorf("#%d got %+v want %+v", i, g, w)
			}
		}
	}
	// The text under each span is the key (or its written tail) or the
	// environment variable.
	lines := splitLines(src)
	for _, r := range refs {
		text := lines[r.Span.Start.Line][r.Span.Start.Col:r.Span.End.Col]
		want := r.Key[len(r.KeyPrefix):]
		if r.Spelling == SpellEnvVar {
			want = r.EnvVar
		}
		if text != want {
			t.Errorf("%s %s: span text %q, want %q", r.Spelling, r.Key, text, want)
		}
	}
}

func splitLines(src []byte) []string {
	var out []string
	start := 0
	for i, c := range src {
		if c == '\n' {
			out = append(out, string(src[start:i]))
			start = i + 1
		}
	}
	return append(out, string(src[start:]))
}

func TestFlagAt(t *testing.T) {
	s := fixture(t)
	src := readFile(t, filepath.Join("testdata/refs", "spellings.py"))
	buf := pybuf.Parse(src)
	for _, tc := range []struct {
		line, col int // 1-based
		key       string
	}{
		{7, 40, "triton.cudagraph_trees"},  // on the attribute
		{7, 46, "triton.cudagraph_trees"},  // just past it
		{9, 12, "triton.cudagraphs"},       // t.cudagraphs
		{11, 50, "triton.cudagraphs"},      // inside the options key
		{12, 25, "triton.cudagraph_trees"}, // patch string
		{23, 20, "triton.cudagraphs"},      // env var name
		{28, 20, "triton.cudagraph_trees"}, // getattr
		{7, 3, ""},                         // "torch", not a flag
		{29, 3, ""},                        // config rebound to a dict
		{30, 30, ""},                       // os.environ.get("HOME")
	} {
		r, ok := FlagAt(FlagRefs(buf, s.cat), pybuf.Pos{Line: tc.line - 1, Col: tc.col - 1})
		if tc.key == "" {
			if ok {
				t.Errorf("%d:%d: got %s, want nothing", tc.line, tc.col, r.Key)
			}
			continue
		}
		if !ok || r.Key != tc.key {
			t.Errorf("%d:%d: got %q (%v), want %q", tc.line, tc.col, r.Key, ok, tc.key)
		}
	}
}
