// Package torchsites names the torch trees that tests needing a real torch
// run against: Debian's python3-torch, and torch 2.11's sources when
// TORCHLSP_TORCH211_SITE names a directory holding them.
package torchsites

import (
	"os"
	"testing"
)

// Tree is one torch to test against. Site goes on the target's PYTHONPATH;
// "" is Debian's installed torch.
type Tree struct {
	Name string
	Site string
}

// Trees lists the trees there are, saying which is not tried.
func Trees(t testing.TB) []Tree {
	trees := []Tree{{Name: "debian"}}
	if site := os.Getenv("TORCHLSP_TORCH211_SITE"); site != "" {
		trees = append(trees, Tree{Name: "torch211", Site: site})
	} else {
		t.Log("TORCHLSP_TORCH211_SITE is unset: the torch 2.11 tree is not tried")
	}
	return trees
}
