package server_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLayering checks the import rules of docs/ARCHITECTURE.md on the
// packages as built: the engine (server/...) reaches neither SSH nor
// JSON-RPC nor the LSP library, the targets' model (server/session) does
// not reach the engine above it, the one syntax layer, server/syntax,
// is the only package that imports tree-sitter, and the features keep
// the facade's boundaries (features).
func TestLayering(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	list := func(args ...string) []string {
		out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	for _, dep := range list("-deps", "github.com/torchlsp/torchlsp/server/...") {
		for _, banned := range []string{"golang.org/x/crypto/ssh", "go.lsp.dev/", "github.com/torchlsp/torchlsp/lsp", "github.com/torchlsp/torchlsp/remote/sshtarget"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("the engine depends on %s", dep)
			}
		}
	}
	const engine = "github.com/torchlsp/torchlsp/server"
	for _, dep := range list("-deps", engine+"/session") {
		if dep == engine || strings.HasPrefix(dep, "go.lsp.dev/") || strings.HasPrefix(dep, "github.com/torchlsp/torchlsp/lsp") {
			t.Errorf("server/session depends on %s: the engine uses the session, not the other way", dep)
		}
	}
	for _, line := range list("-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/torchlsp/torchlsp/...") {
		pkg, imports, _ := strings.Cut(line, " ")
		if strings.HasPrefix(pkg, "github.com/torchlsp/torchlsp/server/syntax") {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, "github.com/tree-sitter/") {
				t.Errorf("%s imports %s: parse through server/syntax", pkg, imp)
			}
		}
	}
}

// The feature packages under the facade (package server). Each imports
// the vocabulary (server/api), the targets' model (server/session), the
// documents (server/source) and the analysis packages below them, never
// another feature and never the facade; the facade imports each of them.
var features = []string{"checks", "doctor", "links", "navigation", "runs", "site"}

// TestFeatureBoundaries holds those rules on the packages as built, and
// keeps server/api below every feature: it imports only the documents and
// the buffer's spans.
func TestFeatureBoundaries(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	const root = "github.com/torchlsp/torchlsp/server"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", root+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imps, _ := strings.Cut(line, " ")
		imports[pkg] = strings.Fields(imps)
	}
	isFeature := map[string]bool{}
	for _, f := range features {
		isFeature[root+"/"+f] = true
		if _, ok := imports[root+"/"+f]; !ok {
			t.Errorf("feature %s is not a package of %s", f, root)
		}
		if !slices.Contains(imports[root], root+"/"+f) {
			t.Errorf("the facade does not import feature %s", f)
		}
	}
	for pkg, imps := range imports {
		if !isFeature[pkg] {
			continue
		}
		for _, imp := range imps {
			switch {
			case imp == root:
				t.Errorf("feature %s imports the facade %s", pkg, imp)
			case isFeature[imp]:
				t.Errorf("feature %s imports feature %s: features know each other only through the facade", pkg, imp)
			}
		}
	}
	for _, imp := range imports[root+"/api"] {
		if strings.HasPrefix(imp, "github.com/torchlsp/") && imp != root+"/source" && imp != root+"/pybuf" {
			t.Errorf("server/api imports %s: the vocabulary stays below every feature", imp)
		}
	}
}
