package pybuf

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// systemPython is Debian's interpreter; its ast module is the reference.
const systemPython = "/usr/bin/python3"

// torchSources is Debian's python3-torch, real third-party code to check
// the analysis against.
const torchSources = "/usr/lib/python3/dist-packages/torch"

// astImports lists, with Python's own parser, the import bindings of each
// file: local name, qualified name ("" for relative), line of the name.
const astImports = `
import ast, json, sys
out = {}
for path in sys.argv[1:]:
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (SyntaxError, UnicodeDecodeError, ValueError):
        continue
    rows = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    rows.append([a.asname, a.name])
                else:
                    first = a.name.split(".")[0]
                    rows.append([first, first])
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for a in node.names:
                name = a.asname or a.name
                if node.level:
                    rows.append([name, ""])
                elif a.name == "*":
                    rows.append(["*", node.module])
                else:
                    rows.append([name, node.module + "." + a.name])
    out[path] = sorted(rows)
json.dump(out, sys.stdout)
`

// TestImportsMatchPythonAST compares Imports with Python's ast module on
// every file of the installed torch.
func TestImportsMatchPythonAST(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the whole torch tree")
	}
	if _, err := os.Stat(systemPython); err != nil {
		t.Skipf("no %s: %v", systemPython, err)
	}
	var files []string
	err := filepath.WalkDir(torchSources, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ".py" {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Skipf("no torch sources at %s: %v", torchSources, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, systemPython, append([]string{"-c", astImports}, files...)...)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("python ast: %v", err)
	}
	var want map[string][][2]string
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	checked, bindings := 0, 0
	for _, path := range files {
		rows, ok := want[path]
		if !ok {
			continue // Python could not parse it either
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b := p.Parse(src)
		var got [][2]string
		for _, imp := range b.Imports() {
			got = append(got, [2]string{imp.Name, imp.Qualname})
		}
		if err := sameRows(got, rows); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		checked++
		bindings += len(rows)
	}
	t.Logf("%d files, %d import bindings agree with Python's ast", checked, bindings)
	if checked < 100 {
		t.Errorf("only %d files checked", checked)
	}
}

func sameRows(got, want [][2]string) error {
	count := map[[2]string]int{}
	for _, r := range want {
		count[r]++
	}
	for _, r := range got {
		count[r]--
	}
	for r, n := range count {
		if n > 0 {
			return fmt.Errorf("missing %v", r)
		}
		if n < 0 {
			return fmt.Errorf("extra %v", r)
		}
	}
	return nil
}

// TestRefsOnTorchSources resolves every identifier of the installed torch
// sources: nothing may panic, and every answer must name the identifier's
// own text as its last part.
func TestRefsOnTorchSources(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the whole torch tree")
	}
	files, _ := filepath.Glob(filepath.Join(torchSources, "*", "*.py"))
	if len(files) == 0 {
		t.Skipf("no torch sources at %s", torchSources)
	}
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	refs := 0
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b := p.Parse(src)
		for _, r := range b.Refs() {
			refs++
			if r.AfterDot || r.Qualname == "" {
				t.Fatalf("%s: bad ref %+v", path, r)
			}
			start, _ := b.lines.Offset(src, r.Span.Start)
			end, _ := b.lines.Offset(src, r.Span.End)
			if text := string(src[start:end]); r.Kind == KindAttribute && !strings.HasSuffix(r.Qualname, "."+text) {
				t.Errorf("%s:%v: %q resolves to %q", path, r.Span, text, r.Qualname)
			}
		}
	}
	t.Logf("%d files, %d refs", len(files), refs)
}
