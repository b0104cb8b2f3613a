package pyindex

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The Debian package python3-torch (1.13) installs a real torch here.
const (
	debianSite   = "/usr/lib/python3/dist-packages"
	debianPython = "/usr/bin/python3"
)

var debianNames = []string{
	"torch.nn.Linear",
	"torch.nn.functional.relu",
	"torch.utils.checkpoint.checkpoint",
	"torch.Tensor",
	"torch.optim.AdamW",
	"torch.cuda.is_available",
	"torch.nn.Linear.forward",
	"torch.nn.Module.to",
}

func requireDebianTorch(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(debianSite, "torch", "__init__.py")); err != nil {
		t.Skip("Debian's python3-torch is not installed")
	}
	if _, err := os.Stat(debianPython); err != nil {
		t.Skip("no " + debianPython)
	}
}

// pythonLocations asks the real interpreter where each object's source is:
// file and the 1-based line inspect reports (a decorator line for
// decorated functions).
func pythonLocations(t *testing.T, names []string) map[string]struct {
	File string
	Line int
} {
	t.Helper()
	script := `
import importlib, inspect, json, sys
out = {}
for q in sys.argv[1:]:
    parts = q.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
            break
        except ImportError:
            pass
    for p in parts[i:]:
        obj = getattr(obj, p)
    obj = inspect.unwrap(obj)
    if inspect.isclass(obj):
        # inspect trusts __module__, which torch rewrites ("torch.Tensor"):
        # take the file of a method defined in the class body instead and
        # let the caller search it from the top.
        codes = [f.__code__ for f in vars(obj).values()
                 if hasattr(f, "__code__") and f.__qualname__.startswith(obj.__name__ + ".")]
        out[q] = {"File": codes[0].co_filename, "Line": 1}
    else:
        out[q] = {"File": inspect.getsourcefile(obj), "Line": inspect.getsourcelines(obj)[1]}
print(json.dumps(out))
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPython, append([]string{"-c", script}, names...)...)
	cmd.Dir = t.TempDir() // keep the fixture's torch off sys.path
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	var locs map[string]struct {
		File string
		Line int
	}
	if err := json.Unmarshal(out, &locs); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	return locs
}

func TestDebianTorch(t *testing.T) {
	requireDebianTorch(t)
	if testing.Short() {
		t.Skip("imports the real torch")
	}
	locs := pythonLocations(t, debianNames)
	ix, err := Open(debianSite, "", WithPackages("torch"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, q := range debianNames {
		t.Run(q, func(t *testing.T) {
			loc, ok := locs[q]
			if !ok {
				t.Fatalf("python did not locate %s", q)
			}
			r, err := ix.Resolve(q)
			if err != nil {
				t.Fatal(err)
			}
			wantPath, _ := filepath.EvalSymlinks(loc.File)
			gotPath, _ := filepath.EvalSymlinks(r.Symbol.Path)
			if gotPath != wantPath {
				t.Fatalf("%s in %s, python says %s", q, gotPath, wantPath)
			}
			// inspect's line may be a decorator's; the name follows it.
			name := lastName(q)
			data, _ := os.ReadFile(wantPath)
			lines := strings.Split(string(data), "\n")
			re := regexp.MustCompile(`^\s*(?:async\s+)?(?:def|class)\s+(` + regexp.QuoteMeta(name) + `)\b`)
			want := -1
			for i := loc.Line - 1; i < len(lines); i++ {
				if m := re.FindStringSubmatchIndex(lines[i]); m != nil {
					want = i
					if r.Symbol.Col != m[2] {
						t.Errorf("column %d, want %d", r.Symbol.Col, m[2])
					}
					break
				}
			}
			if r.Symbol.Line != want {
				t.Errorf("%s at line %d, want %d (inspect: %d, 1-based)", q, r.Symbol.Line, want, loc.Line)
			}
		})
	}
}

// TestDebianTorchBuild builds the whole index of the real torch, checks it
// survives a cache round trip, and logs time and heap.
func TestDebianTorchBuild(t *testing.T) {
	requireDebianTorch(t)
	if testing.Short() {
		t.Skip("parses all of torch")
	}
	cache := filepath.Join(t.TempDir(), "torch.idx")
	start := time.Now()
	ix, err := Open(debianSite, cache, WithPackages("torch"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	info, _ := os.Stat(cache)
	t.Logf("built %d files (%d modules) in %v; heap after GC %.1f MB; cache %d KB",
		ix.Stats().Files, ix.Stats().Modules, elapsed, float64(ms.HeapAlloc)/(1<<20), info.Size()>>10)

	// Every module's names resolve to something (no panics, no cycles
	// reported as definitions).
	var want []Resolution
	for _, q := range debianNames {
		r, err := ix.Resolve(q)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	loaded, err := Open(debianSite, cache, WithPackages("torch"))
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Stats().FromCache {
		t.Fatal("cache of the torch index not used")
	}
	for i, q := range debianNames {
		r, err := loaded.Resolve(q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r, want[i]) {
			t.Errorf("%s differs after loading the cache", q)
		}
	}
	mods := ix.ModuleNames()
	if len(mods) < 1000 {
		t.Errorf("only %d modules", len(mods))
	}
	resolved := 0
	for _, m := range mods {
		ms, err := ix.Members(m)
		if err != nil {
			t.Errorf("members of %s: %v", m, err)
		}
		resolved += len(ms)
	}
	t.Logf("%d module members resolved", resolved)
}
