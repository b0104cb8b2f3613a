package faults

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/internal/await"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// smallDisk mounts a tmpfs of the given size (e.g. "2m") and unmounts it
// when the test ends. It skips the test where mounting is not allowed.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a size-limited directory needs a tmpfs mount, which needs root")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s): the disk-full faults need one", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			_ = exec.Command("umount", "-l", dir).Run()
			t.Logf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// usedBytes is what a file system holds now.
func usedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// TestDiskFullDuringMirror gives the cache 2 MiB, far less than Debian's
// torch: mirroring fails, the user is told that the disk is full, the
// partial copy is removed, and the server keeps answering (from the few
// files an on-demand answer needs, never from a mirror).
func TestDiskFullDuringMirror(t *testing.T) {
	t.Parallel()
	needPython(t)
	if out, err := exec.Command(debianPython, "-c", "import importlib.util as u; assert u.find_spec('torch')").CombinedOutput(); err != nil {
		t.Skipf("Debian's python3-torch is not installed: %s", out)
	}
	cache := smallDisk(t, "2m")
	sb := lsptest.NewSandbox(t)
	sb.Cache = cache
	env := start(t, sessionOptions{sandbox: &sb, settings: targetSettings(t, debianPython, nil)})
	env.Timeout = 120 * time.Second
	uri := env.OpenFile("train.py")
	pos := env.At(uri, "nn.Linear(4, 4)", 3)
	ctx := env.Ctx()
	env.AwaitMessage("no space left on device")
	for range 2 { // the second request retries the mirror, and fails alike
		p, err := env.Editor.StartHover(uri, pos.Line, pos.Character)
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatalf("hover not answered: %v", err)
		}
		if m := findOneOrEmpty(cache, "manifest.json"); r.Error == nil && string(r.Result) != "null" && m != "" {
			t.Fatalf("hover answered while a mirror that cannot exist (%s) stands: %s", m, r.Result)
		}
	}
	// Nothing half-written stays to fill the disk.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := await.Changed(ctx, cache, func() bool {
		return usedBytes(t, cache)-onDemandBytes(t, cache) <= 64<<10
	}); err != nil {
		var left []string
		_ = filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				left = append(left, p)
			}
			return nil
		})
		t.Fatalf("%d bytes left in the cache after the failed mirror (%v): %.10q", usedBytes(t, cache), err, left)
	}
	env.Shutdown()
}

// TestDiskFullDuringIndexWrite builds an index whose cache file cannot be
// written: Build reports the failure, every query is still answered from
// memory, no temporary file is left, and the next Open of the directory
// (the disk still full) rebuilds rather than trusting anything.
func TestDiskFullDuringIndexWrite(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, "1m")
	// Fill the disk to the last byte.
	filler, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := filler.Write(chunk); err != nil {
			if !strings.Contains(err.Error(), "no space") {
				t.Fatal(err)
			}
			break
		}
	}
	for {
		if _, err := filler.Write(chunk[:1]); err != nil {
			break
		}
	}
	filler.Close()

	site := filepath.Join(repoRoot(t), "testdata", "site")
	cacheFile := filepath.Join(disk, "index.bin")
	for round := range 2 {
		ix, err := pyindex.Open(site, cacheFile)
		if err != nil {
			t.Fatalf("round %d: open: %v", round, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = ix.Build(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("round %d: Build = %v, want the disk-full error", round, err)
		}
		res, err := ix.Resolve("torch.nn.Linear")
		if err != nil || res.Symbol.File != "torch/nn/modules/linear.py" {
			t.Fatalf("round %d: Resolve after the failed write = %+v, %v", round, res.Symbol, err)
		}
		entries, _ := os.ReadDir(disk)
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("round %d: the disk holds %v, want only the filler", round, names)
		}
	}
}

// dirBytes is the size of the regular files under dir (0 when it is
// missing): the on-demand tree's few files are not a partial mirror.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += (info.Size() + 4095) / 4096 * 4096
		}
		return nil
	})
	return n
}

// onDemandBytes is what the on-demand trees under cache hold: the files a
// first answer read, where the package's mirror will be (a version's
// directory without a manifest; a mirror being written is a ".tmp-" one).
func onDemandBytes(t *testing.T, cache string) int64 {
	t.Helper()
	var n int64
	_ = filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
		if err != nil || !info.IsDir() || info.Name() != "site" {
			return nil
		}
		parent := filepath.Dir(p)
		if strings.HasPrefix(filepath.Base(parent), ".") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(parent, "manifest.json")); err != nil {
			n += dirBytes(t, p)
		}
		return filepath.SkipDir
	})
	return n
}
