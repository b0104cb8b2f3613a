package remote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAcrossPythons runs the helper and the mirror script on every
// interpreter version pyenv has here. The promise is 3.9 and later, held in
// CI by test/hops, whose Docker hop runs Debian 11's Python 3.9; 3.8 is
// tried where pyenv has it.
func TestAcrossPythons(t *testing.T) {
	home, _ := os.UserHomeDir()
	versions := []string{"3.8.18", "3.9.18", "3.10.13", "3.12.1", "3.13.0"}
	ran := 0
	var bounds string // boundsSite, made once
	for _, v := range versions {
		python := filepath.Join(home, ".pyenv", "versions", v, "bin", "python3")
		if _, err := os.Stat(python); err != nil {
			continue
		}
		ran++
		if bounds == "" {
			bounds = boundsSite(t)
		}
		t.Run(v, func(t *testing.T) {
			spec := fixtureSpec(t)
			spec.Python = python
			target := NewLocal(spec)
			defer target.Close()
			c := NewClient(target, spec)
			defer c.Close()
			ctx := testContext(t)
			hello, err := c.Hello(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if hello.Python != v {
				t.Errorf("python = %s, want %s", hello.Python, v)
			}
			info, err := c.PackageInfo(ctx, "fixturepkg")
			if err != nil || info.Version != "0.3.1" || info.FilesCount != 5 {
				t.Fatalf("package info %+v, %v", info, err)
			}
			fixture := filepath.Join(info.Location, "__init__.py")
			for name, def := range map[string]string{"fixturepkg.decorated": "def decorated", "fixturepkg.Widget": "class Widget"} {
				got, err := c.Inspect(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				if got.Line != lineOf(t, fixture, def) {
					t.Errorf("%s at line %d, want %d", name, got.Line, lineOf(t, fixture, def))
				}
			}
			cfg, err := c.EvalConfig(ctx, "fixturepkg.newconfig")
			if err != nil || cfg.Source != "get_config_copy" || len(cfg.Values) != 5 {
				t.Errorf("config %+v, %v", cfg, err)
			}
			for _, comp := range []Compression{CompressNone, CompressGzip} {
				m, err := mirror(ctx, target, spec, info, cacheDir(t), comp, nil)
				if err != nil || m.Manifest.Files != 5 {
					t.Errorf("%s mirror: %v", comp, err)
				}
			}
			stdlib, err := c.StdlibModules(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := "stdlib_module_names"
			if strings.HasPrefix(v, "3.8.") || strings.HasPrefix(v, "3.9.") {
				want = "scan" // no sys.stdlib_module_names before 3.10
			}
			if stdlib.Source != want {
				t.Errorf("standard library from %s, want %s", stdlib.Source, want)
			}
			checkStdlib(t, stdlib)
			checkLinkRule(t, python)
			if v == versions[0] || v == versions[len(versions)-1] {
				checkSiteBounds(t, python, bounds) // the oldest and the newest: a few seconds each
			}
			if t.Failed() {
				t.Log(strings.Join(c.StderrTail(), "\n"))
			}
		})
	}
	if ran == 0 {
		t.Skip("no pyenv interpreters")
	}
}
