package server_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering checks the import rules of docs/ARCHITECTURE.md on the
// packages as built: the engine (server/...) reaches neither SSH nor
// JSON-RPC nor the LSP library, the targets' model (server/session) does
// not reach the engine above it, and the one syntax layer, server/syntax,
// is the only package that imports tree-sitter.
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
