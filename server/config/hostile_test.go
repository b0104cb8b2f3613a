package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

const goodTOML = "default = \"w\"\n[targets.w]\npython = \"/usr/bin/python3\"\n"

// plant replaces path with something hostile.
type plant func(t *testing.T, path string)

func symlinkTo(dst string) plant {
	return func(t *testing.T, path string) {
		if err := os.Symlink(dst, path); err != nil {
			t.Fatal(err)
		}
	}
}

func fifo(t *testing.T, path string) {
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func directory(t *testing.T, path string) {
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func huge(t *testing.T, path string) {
	// Sparse: 1 GiB that costs no disk.
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
}

// loadBounded runs LoadWorkspace with a deadline and reports the bytes
// allocated meanwhile.
func loadBounded(t *testing.T, ws string, store *TrustStore) (Layer, WorkspaceStatus, uint64) {
	t.Helper()
	type result struct {
		layer Layer
		st    WorkspaceStatus
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan result, 1)
	go func() {
		l, st := LoadWorkspace(ws, store)
		done <- result{l, st}
	}()
	select {
	case r := <-done:
		runtime.ReadMemStats(&after)
		return r.layer, r.st, after.TotalAlloc - before.TotalAlloc
	case <-time.After(10 * time.Second):
		t.Fatal("LoadWorkspace still running after 10s: it blocked on the file")
	}
	return Layer{}, WorkspaceStatus{}, 0
}

// A hostile repository's torchlsp.toml (a link to a device or to the
// server's own stdin, a pipe, a directory, a huge file) is refused with a
// message, at once and without reading it, whether the user trusted an
// earlier file at that path or not. Not parallel: it measures allocation.
func TestHostileWorkspaceFile(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good.toml")
	if err := os.WriteFile(good, []byte(goodTOML), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		plant plant
		want  string
	}{
		{"link to /dev/zero", symlinkTo("/dev/zero"), "is a symbolic link"},
		{"link to /dev/stdin", symlinkTo("/dev/stdin"), "is a symbolic link"},
		{"link to a good file elsewhere", symlinkTo(good), "is a symbolic link"},
		{"named pipe", fifo, "is a named pipe, not a regular file"},
		{"directory", directory, "is a directory, not a regular file"},
		{"1 GiB file", huge, "over the 1048576-byte limit"},
	}
	for _, tt := range tests {
		for _, trusted := range []bool{false, true} {
			name := tt.name
			if trusted {
				name += " where a trusted file was"
			}
			t.Run(name, func(t *testing.T) {
				ws := t.TempDir()
				store := NewTrustStore(Dirs{State: t.TempDir()})
				path := filepath.Join(ws, WorkspaceFile)
				if trusted {
					if err := os.WriteFile(path, []byte(goodTOML), 0o644); err != nil {
						t.Fatal(err)
					}
					if _, err := store.Trust(path); err != nil {
						t.Fatal(err)
					}
					if err := os.Remove(path); err != nil {
						t.Fatal(err)
					}
				}
				tt.plant(t, path)
				layer, st, alloc := loadBounded(t, ws, store)
				if layer.File.Default != "" || len(layer.File.Targets) > 0 {
					t.Errorf("layer used: %+v", layer)
				}
				if st.State == Trusted {
					t.Errorf("state %v", st.State)
				}
				if !trusted && tt.name == "1 GiB file" {
					// Never trusted: not even opened, so only the
					// untrusted message.
					if st.Err != nil || !strings.Contains(st.Message(), "is not trusted") {
						t.Errorf("status %+v, message %q", st, st.Message())
					}
				} else if st.Err == nil || !strings.Contains(st.Message(), tt.want) {
					t.Errorf("message %q, want it to contain %q", st.Message(), tt.want)
				}
				if alloc > 1<<20 {
					t.Errorf("allocated %d bytes looking at it", alloc)
				}
				if _, err := store.Trust(path); err == nil {
					t.Error("`torchlsp trust` accepted it")
				}
			})
		}
	}
}

// The user's own config.toml may be a link (dotfile managers), but what
// it names must be a small regular file.
func TestUserConfigFile(t *testing.T) {
	t.Parallel()
	good := filepath.Join(t.TempDir(), "real.toml")
	if err := os.WriteFile(good, []byte(goodTOML), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		plant plant
		want  string // error substring; empty for success
	}{
		{"link to a regular file", symlinkTo(good), ""},
		{"link to /dev/zero", symlinkTo("/dev/zero"), "is a character device"},
		{"named pipe", fifo, "is a named pipe"},
		{"1 GiB file", huge, "over the 1048576-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := Dirs{Config: t.TempDir()}
			tt.plant(t, d.UserFile())
			done := make(chan struct{})
			var layer Layer
			var err error
			go func() {
				defer close(done)
				layer, err = LoadUser(d)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("LoadUser blocked")
			}
			if tt.want == "" {
				if err != nil || layer.File.Default != "w" {
					t.Errorf("LoadUser = %+v, %v", layer, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
