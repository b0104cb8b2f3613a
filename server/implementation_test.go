package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
)

// implDoc is the user's file the implementation tests ask about.
const implDoc = `import torch
import torch.nn.functional as F
import numpy as np

x = torch.randn(3)
y = torch.add(x, x)
z = y.mul(x)
w = F.relu(z)
items = [1, 2]
items.append(3)
q = np.add(1, 2)
`

// startImplEngine starts an engine on a real local target: Debian's
// interpreter importing the registration fixture as its torch.
func startImplEngine(t *testing.T) (*Engine, *Snapshot) {
	t.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		t.Skipf("%s is missing", benchPython)
	}
	site, err := filepath.Abs(filepath.Join("opimpl", "testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dirs := config.Dirs{Config: filepath.Join(root, "config"), Cache: filepath.Join(root, "cache"), State: filepath.Join(root, "state")}
	eng := New(Options{Dirs: dirs})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings, err := json.Marshal(map[string]any{"defaultTarget": "fixture", "targets": map[string]any{
		"fixture": map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := eng.Initialize(ctx, InitializeParams{InitializationOptions: settings}); err != nil {
		t.Fatal(err)
	}
	uri := "file://" + filepath.Join(root, "train.py")
	doc := eng.DidOpen(context.Background(), uri, "", 1, implDoc)
	return eng, doc
}

// implPos finds the byte position of word inside the first line holding
// needle.
func implPos(t *testing.T, text, needle, word string) Position {
	t.Helper()
	at := strings.Index(text, needle)
	if at < 0 {
		t.Fatalf("%q not in the document", needle)
	}
	off := at + strings.Index(needle, word) + 1
	line := strings.Count(text[:off], "\n")
	return Position{Line: line, Column: off - (strings.LastIndexByte(text[:off], '\n') + 1)}
}

func TestImplementation(t *testing.T) {
	eng, doc := startImplEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tests := []struct {
		name          string
		needle, word  string
		want          []string // rel:line (1-based) of each location, in order
		labels        []string
		wantTargetDir bool
	}{
		{"module function", "torch.add(x", "add", []string{"torch/_refs/__init__.py:58", "torch/_inductor/lowering.py:54"}, []string{"decomposition, ref", "lowering"}, true},
		{"tensor method on an unknown receiver", "y.mul(x)", "mul", []string{"torch/_inductor/lowering.py:49"}, []string{"lowering"}, true},
		{"alias of torch.nn.functional", "F.relu(z)", "relu", []string{"torch/_refs/nn/functional/__init__.py:7"}, []string{"decomposition, ref"}, true},
		{"no registrations", "torch.randn(3)", "randn", nil, nil, false},
		{"the torch module", "import torch\n", "torch", nil, nil, false},
		{"a list method", "items.append(3)", "append", nil, nil, false},
		{"another package", "np.add(1, 2)", "add", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pos := implPos(t, implDoc, tt.needle, tt.word)
			items, err := eng.Implementations(ctx, doc, pos)
			if err != nil {
				t.Fatal(err)
			}
			var got, labels []string
			for _, it := range items {
				rel := it.Path[strings.Index(it.Path, "/site/")+len("/site/"):]
				got = append(got, rel+":"+itoa(it.Range.Start.Line+1))
				labels = append(labels, strings.Join(it.Labels, ", "))
				if !strings.HasPrefix(it.Path, eng.opts.Dirs.Cache) {
					t.Errorf("%s is not in the mirror under %s", it.Path, eng.opts.Dirs.Cache)
				}
				site, _ := filepath.Abs(filepath.Join("opimpl", "testdata", "site"))
				if it.TargetPath != filepath.Join(site, rel) {
					t.Errorf("target path %s, want %s", it.TargetPath, filepath.Join(site, rel))
				}
				line := readLine(t, it.Path, it.Range.Start.Line)
				if span := line[it.Range.Start.Column:it.Range.End.Column]; !strings.Contains(span, "register") && !strings.Contains(span, "_reference") {
					t.Errorf("%s: range %q is not the registering callee of %q", rel, span, line)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") || strings.Join(labels, "|") != strings.Join(tt.labels, "|") {
				t.Errorf("got %v %v, want %v %v", got, labels, tt.want, tt.labels)
			}
		})
	}
}

func TestHoverCompilerStack(t *testing.T) {
	eng, doc := startImplEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitMirror(ctx, t, eng, "torch") // the compiler stack comes from the complete mirror
	h, err := eng.Hover(ctx, doc, implPos(t, implDoc, "torch.add(x", "add"))
	if err != nil || h == nil {
		t.Fatalf("hover = %v, %v", h, err)
	}
	for _, want := range []string{
		"Adds other, scaled by alpha, to input.",
		"**Compiler stack** in torch 9.9.0+fixture:",
		"`aten.add`: decomposition, ref [`torch/_refs/__init__.py:58`](file://",
		"/site/torch/_refs/__init__.py#L58)",
		" · lowering [`torch/_inductor/lowering.py:54`](",
	} {
		if !strings.Contains(h.Markdown, want) {
			t.Errorf("hover lacks %q:\n%s", want, h.Markdown)
		}
	}
	// A name with no registrations gets no section.
	h, err = eng.Hover(ctx, doc, implPos(t, implDoc, "torch.randn(3)", "randn"))
	if err != nil || h == nil {
		t.Fatalf("hover = %v, %v", h, err)
	}
	if strings.Contains(h.Markdown, "Compiler stack") {
		t.Errorf("hover of torch.randn has a compiler-stack section:\n%s", h.Markdown)
	}
	// The table is cached next to the mirror.
	s, err := eng.session("")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ps.Mirror().Root, "opimpl.bin")); err != nil {
		t.Errorf("no op table cached next to the mirror: %v", err)
	}
}

func readLine(t *testing.T, path string, line int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if line >= len(lines) {
		t.Fatalf("%s has no line %d", path, line)
	}
	return lines[line]
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
