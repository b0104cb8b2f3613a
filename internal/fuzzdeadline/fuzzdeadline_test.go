package fuzzdeadline

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A slow input ends the fuzz worker, and the fuzzing coordinator records
// it as a failing input, with a report of where it was: an input that
// computes past the CPU limit, and one that blocks past the clock's.
func TestSlowInputIsRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and fuzzes a target: not with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests, unlike a defer
	bin := filepath.Join(t.TempDir(), "spin.test")
	if out, err := exec.CommandContext(ctx, "go", "test", "-c", "-fuzz", "^FuzzSpin$", "-o", bin, "./testdata/spin").CombinedOutput(); err != nil {
		t.Fatalf("go test -c ./testdata/spin: %v\n%s", err, out)
	}
	for _, tc := range []struct{ spin, where string }{
		{"cpu", "spin.spinForever"},
		{"sleep", "time.Sleep"},
	} {
		t.Run(tc.spin, func(t *testing.T) {
			t.Parallel()
			dir, report := t.TempDir(), t.TempDir()
			cmd := exec.CommandContext(ctx, bin, "-test.run=^$", "-test.fuzz=^FuzzSpin$", "-test.fuzztime=2m",
				"-test.parallel=1", "-test.fuzzcachedir="+filepath.Join(dir, "cache"))
			cmd.Dir = dir // where the coordinator writes testdata/fuzz/FuzzSpin
			cmd.Env = append(os.Environ(), "SPIN="+tc.spin, EnvLimit+"=200ms", EnvReport+"="+report)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("fuzzing passed with inputs that never end:\n%s", out)
			}
			if !strings.Contains(string(out), "exit status 124") {
				t.Errorf("the output does not give the worker's exit status 124:\n%s", out)
			}
			m := regexp.MustCompile(`Failing input written to (testdata/fuzz/FuzzSpin/\w+)`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("no failing input written:\n%s", out)
			}
			input, err := os.ReadFile(filepath.Join(dir, string(m[1])))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(input), `"fast"`) {
				t.Errorf("the input written is the fast seed, not the slow input:\n%s", input)
			}
			overruns, _ := filepath.Glob(filepath.Join(report, "overrun-*"))
			if len(overruns) != 1 {
				t.Fatalf("reports %q, want one overrun-<pid>", overruns)
			}
			text, err := os.ReadFile(overruns[0])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(text), "FuzzSpin: an input has run") || !strings.Contains(string(text), tc.where) {
				t.Errorf("the report does not say the input ran past its limit in %s:\n%s", tc.where, text)
			}
			// The report quotes the input as the corpus file does.
			value := strings.TrimSpace(strings.TrimPrefix(string(input), "go test fuzz v1\n"))
			if !strings.Contains(string(text), "The input:\n\t"+value+"\n") {
				t.Errorf("the report does not quote the input %s:\n%s", value, text)
			}
		})
	}
}

// Every fuzz target of the module starts its inputs' deadline first thing
// in its fuzz function: d := fuzzdeadline.New(f) before f.Fuzz, and
// d.Start(t, its other arguments) as the fuzz function's first statement.
func TestEveryFuzzTargetHasADeadline(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root at %s: %v", root, err)
	}
	targets := 0
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == "node_modules" || strings.HasPrefix(e.Name(), ".")) {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") || fn.Body == nil {
				continue
			}
			f := fuzzParam(fn)
			if f == "" {
				continue
			}
			targets++
			rel, _ := filepath.Rel(root, path)
			if problem := checkTarget(fn, f); problem != "" {
				t.Errorf("%s:%d: %s %s", rel, fset.Position(fn.Pos()).Line, fn.Name.Name, problem)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if targets == 0 {
		t.Fatal("found no fuzz target")
	}
	t.Logf("%d fuzz targets", targets)
}

// fuzzParam is the name of fn's *testing.F parameter, or "" when fn is
// not a fuzz target.
func fuzzParam(fn *ast.FuncDecl) string {
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) != 1 {
		return ""
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok || !isSelector(star.X, "testing", "F") {
		return ""
	}
	return params[0].Names[0].Name
}

// checkTarget says what fn lacks, or "".
func checkTarget(fn *ast.FuncDecl, f string) string {
	deadline := ""
	var fuzz *ast.FuncLit
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Lhs) == 1 && len(n.Rhs) == 1 {
				if call, ok := n.Rhs[0].(*ast.CallExpr); ok && isSelector(call.Fun, "fuzzdeadline", "New") && len(call.Args) == 1 && isIdent(call.Args[0], f) {
					if id, ok := n.Lhs[0].(*ast.Ident); ok {
						deadline = id.Name
					}
				}
			}
		case *ast.CallExpr:
			if isSelector(n.Fun, f, "Fuzz") && len(n.Args) == 1 {
				fuzz, _ = n.Args[0].(*ast.FuncLit)
			}
		}
		return true
	})
	switch {
	case deadline == "":
		return "makes no deadline: add `deadline := fuzzdeadline.New(" + f + ")` before " + f + ".Fuzz"
	case fuzz == nil:
		return "passes " + f + ".Fuzz no function literal"
	}
	params := fuzz.Type.Params.List
	if len(params) == 0 || len(params[0].Names) == 0 || len(fuzz.Body.List) == 0 {
		return "has an empty fuzz function"
	}
	var args []string
	for _, p := range params {
		for _, n := range p.Names {
			args = append(args, n.Name)
		}
	}
	if stmt, ok := fuzz.Body.List[0].(*ast.ExprStmt); ok {
		if call, ok := stmt.X.(*ast.CallExpr); ok && isSelector(call.Fun, deadline, "Start") && len(call.Args) == len(args) {
			same := true
			for i, a := range call.Args {
				same = same && isIdent(a, args[i])
			}
			if same {
				return ""
			}
		}
	}
	return "does not start with `" + deadline + ".Start(" + strings.Join(args, ", ") + ")` in its fuzz function"
}

func isSelector(e ast.Expr, x, sel string) bool {
	s, ok := e.(*ast.SelectorExpr)
	return ok && s.Sel.Name == sel && isIdent(s.X, x)
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
