package server_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The walk the project was born from, inside the real torch 2.11 sources
// as the editor mirrored them: from compile_fx.py's
// "if config.triton.cudagraph_trees:" (a relative import, a nested config
// class, its flag), to the cudagraph_trees function imported inside the
// function, to get_obj and get_container called in their own module.
func TestDefinitionInTorch211Mirror(t *testing.T) {
	t.Parallel()
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	if site == "" {
		t.Skip("TORCHLSP_TORCH211_SITE is unset: it names a site dir holding the torch 2.11 sources")
	}
	if _, err := os.Stat(debianPython); err != nil {
		t.Skip("no " + debianPython)
	}
	settings, err := json.Marshal(map[string]any{
		"defaultTarget": "h200",
		"targets":       map[string]any{"h200": map[string]any{"python": debianPython, "env": map[string]string{"PYTHONPATH": site}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, settings, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	tests := []struct {
		file, anchor, line, name string // the name on the first line matching line after anchor
		wantFile, wantLine       string // the answer's file, and a pattern its line matches
	}{
		{"torch/_inductor/compile_fx.py", `as new_cudagraphify_impl`, `if config\.triton\.cudagraph_trees:`, "config",
			"torch/_inductor/config.py", `^# mypy|^"""|^import|^from|^$`},
		{"torch/_inductor/compile_fx.py", `as new_cudagraphify_impl`, `if config\.triton\.cudagraph_trees:`, "triton",
			"torch/_inductor/config.py", `^class triton:`},
		{"torch/_inductor/compile_fx.py", `as new_cudagraphify_impl`, `if config\.triton\.cudagraph_trees:`, "cudagraph_trees",
			"torch/_inductor/config.py", `^    cudagraph_trees = True`},
		{"torch/_inductor/compile_fx.py", `if config\.triton\.cudagraph_trees:`, `^\s+new_cudagraphify_impl,$`, "new_cudagraphify_impl",
			"torch/_inductor/cudagraph_trees.py", `^def cudagraphify_impl\(`},
		{"torch/_inductor/cudagraph_trees.py", `^def get_container\(`, `get_obj\(local, "tree_manager_containers"\)`, "get_obj",
			"torch/_inductor/cudagraph_trees.py", `^def get_obj\(`},
		{"torch/_inductor/cudagraph_trees.py", `^def get_manager\(`, `get_container\(device_index\)`, "get_container",
			"torch/_inductor/cudagraph_trees.py", `^def get_container\(`},
		{"torch/_inductor/cudagraph_trees.py", `^def get_obj\(`, `torch\._C\._is_key_in_tls`, "_is_key_in_tls",
			"torch/_C/__init__.pyi", `def _is_key_in_tls\(`},
	}
	opened := map[string]string{} // file → URI
	for _, tt := range tests {
		uri, ok := opened[tt.file]
		if !ok {
			p, err := mirrorPath(ctx, eng, tt.file)
			if err != nil {
				t.Fatalf("the mirrored %s: %v", tt.file, err)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			uri = (&url.URL{Scheme: "file", Path: p}).String()
			openDoc(eng, uri, string(data))
			opened[tt.file] = uri
		}
		text := fileText(t, filepath.Join(site, tt.file))
		at, ok := findAfter(text, tt.anchor, tt.line, tt.name)
		if !ok {
			t.Fatalf("%s: no %q after %q holding %s", tt.file, tt.line, tt.anchor, tt.name)
		}
		locs, err := definitionAt(ctx, eng, uri, at)
		if err != nil || len(locs) != 1 {
			t.Errorf("%s:%d:%d %s: definition = %+v, %v; want one", tt.file, at.Line+1, at.Col+1, tt.name, locs, err)
			continue
		}
		got := locs[0]
		rel, ok := strings.CutPrefix(got.TargetPath, site+"/")
		if !ok || rel != tt.wantFile {
			t.Errorf("%s:%d %s: definition in %s (target %s), want %s", tt.file, at.Line+1, tt.name, got.Path, got.TargetPath, tt.wantFile)
			continue
		}
		line := strings.Split(fileText(t, got.Path), "\n")[got.Range.Start.Line]
		if !regexp.MustCompile(tt.wantLine).MatchString(line) {
			t.Errorf("%s:%d %s: definition at %s:%d %q, want a line matching %q", tt.file, at.Line+1, tt.name, rel, got.Range.Start.Line+1, line, tt.wantLine)
		}
		h, err := hoverAt(ctx, eng, uri, at)
		if err != nil || h == nil || !strings.Contains(h.Markdown, tt.wantFile) {
			t.Errorf("%s:%d %s: hover %+v, %v; want one naming %s", tt.file, at.Line+1, tt.name, h, err, tt.wantFile)
		}
	}
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// findAfter finds, on the first line matching line after the first line
// matching anchor, the identifier name.
func findAfter(text, anchor, line, name string) (pos, bool) {
	a, l := regexp.MustCompile(anchor), regexp.MustCompile(line)
	ident := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	seen := false
	for i, s := range strings.Split(text, "\n") {
		if !seen {
			seen = a.MatchString(s)
			continue
		}
		if l.MatchString(s) {
			if m := ident.FindStringIndex(s); m != nil {
				return pos{Line: i, Col: m[0]}, true
			}
		}
	}
	return pos{}, false
}
