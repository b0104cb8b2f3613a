package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// findOne returns the single file named name under root.
// findOne finds the one file called name in the mirrors under root (the
// on-demand tree's copies of a first answer's files are not a mirror's).
func findOne(t *testing.T, root, name string) string {
	t.Helper()
	var found []string
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() && info.Name() == "ondemand" {
			return filepath.SkipDir
		}
		if err == nil && info.Name() == name {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("want one %s under %s, found %v", name, root, found)
	}
	return found[0]
}

// TestDamagedCacheIsRebuilt writes a cache with one session, damages it
// as a crash or a stray cleanup would, and checks that the next session
// detects the damage, rebuilds, answers correctly and never crashes.
func TestDamagedCacheIsRebuilt(t *testing.T) {
	t.Parallel()
	site := filepath.Join(repoRoot(t), "testdata", "site")
	tests := []struct {
		name   string
		damage func(t *testing.T, cache string)
		// mirror is set when the damage must make the mirror be fetched
		// again; otherwise only the index is rebuilt.
		mirror bool
	}{
		{"index.bin bytes flipped", func(t *testing.T, cache string) {
			p := findOne(t, cache, "index.bin")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(data) / 3; i < len(data); i += len(data) / 7 {
				data[i] ^= 0x5a
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"index.bin truncated", func(t *testing.T, cache string) {
			if err := os.Truncate(findOne(t, cache, "index.bin"), 20); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"mirror file deleted", func(t *testing.T, cache string) {
			if err := os.Remove(findOne(t, cache, "adamw.py")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"mirror file truncated", func(t *testing.T, cache string) {
			if err := os.Truncate(findOne(t, cache, "adamw.py"), 5); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"manifest.json truncated", func(t *testing.T, cache string) {
			if err := os.Truncate(findOne(t, cache, "manifest.json"), 7); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb := lsptest.NewSandbox(t)
			settings := targetSettings(t, debianPython, map[string]string{"PYTHONPATH": site})

			define := func(env *lsptest.Env) {
				t.Helper()
				uri := env.OpenFile("train.py")
				locs := env.Definition(uri, env.At(uri, "AdamW(model", 0))
				if len(locs) != 1 {
					t.Fatalf("definition: %v", locs)
				}
				u, err := url.Parse(locs[0].URI)
				if err != nil {
					t.Fatal(err)
				}
				path := u.Path
				if !strings.HasSuffix(path, "/site/torch/optim/adamw.py") || locs[0].Range.Start.Line != 3 {
					t.Fatalf("definition = %s:%d, want …/site/torch/optim/adamw.py:3", path, locs[0].Range.Start.Line)
				}
				data, err := os.ReadFile(path)
				if err != nil || !bytes.Contains(data, []byte("class AdamW")) {
					t.Fatalf("the definition's file is not the original: %v", err)
				}
			}
			// awaitFile waits, bounded, until the file named name in the
			// cache satisfies ok.
			awaitFile := func(name string, ok func([]byte) bool) []byte {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var data []byte
				err := await.Changed(ctx, sb.Cache, func() bool {
					p := findOneOrEmpty(sb.Cache, name)
					if p == "" {
						return false
					}
					data, _ = os.ReadFile(p)
					return ok(data)
				})
				if err != nil {
					t.Fatalf("%s never became right (%v); last %d bytes", name, err, len(data))
				}
				return data
			}
			nonEmpty := func(b []byte) bool { return len(b) > 0 }

			first := start(t, sessionOptions{sandbox: &sb, settings: settings})
			define(first)
			goodIndex := awaitFile("index.bin", nonEmpty)
			goodManifest := awaitFile("manifest.json", nonEmpty)
			first.Shutdown()

			tt.damage(t, sb.Cache)

			second := start(t, sessionOptions{sandbox: &sb, settings: settings})
			define(second)
			if tt.mirror {
				// A new mirror: a new manifest (its creation time differs)
				// and an index written for it.
				awaitFile("manifest.json", func(b []byte) bool {
					var m struct{ Files int }
					return json.Unmarshal(b, &m) == nil && m.Files > 0 && !bytes.Equal(b, goodManifest)
				})
				awaitFile("index.bin", func(b []byte) bool { return len(b) > len(goodIndex)/2 })
				src, _ := os.ReadFile(filepath.Join(site, "torch", "optim", "adamw.py"))
				awaitFile("adamw.py", func(b []byte) bool { return bytes.Equal(b, src) })
			} else {
				// The same mirror: the rebuilt index is byte for byte the
				// first one.
				awaitFile("index.bin", func(b []byte) bool { return bytes.Equal(b, goodIndex) })
			}
			second.Shutdown()
		})
	}
}

func findOneOrEmpty(root, name string) string {
	var found string
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() && info.Name() == "ondemand" {
			return filepath.SkipDir
		}
		if err == nil && info.Name() == name {
			found = p
		}
		return nil
	})
	return found
}
