package lsptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// NPMDir is where scripts/setup.sh --test installs the npm language
// servers (pyright, basedpyright): TORCHLSP_PYRIGHT_DIR, else
// /var/cache/torchlsp-pyright.
func NPMDir() string {
	if d := os.Getenv("TORCHLSP_PYRIGHT_DIR"); d != "" {
		return d
	}
	return "/var/cache/torchlsp-pyright"
}

// NPMServer returns the command line that starts the npm package pkg's
// language server on stdio (node and its langserver.index.js), or why it
// cannot: node or the package is not installed.
func NPMServer(pkg string) ([]string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not installed (scripts/setup.sh --test installs it): %w", err)
	}
	js := filepath.Join(NPMDir(), "node_modules", pkg, "langserver.index.js")
	if _, err := os.Stat(js); err != nil {
		return nil, fmt.Errorf("%s is not installed (scripts/setup.sh --test installs it): %w", pkg, err)
	}
	return []string{node, js, "--stdio"}, nil
}
