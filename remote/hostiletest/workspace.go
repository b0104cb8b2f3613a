package hostiletest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// packages are the names ShadowingWorkspace writes as packages (a
// directory with __init__.py) rather than as modules: the interpreter's
// start-up imports (encodings), packages torchlsp's programs import, and
// the package a hover asks about.
var packages = map[string]bool{
	"encodings": true, "collections": true, "importlib": true, "json": true, "email": true,
	"concurrent": true, "torch": true, "fixturepkg": true, "numpy": true,
}

// ShadowingWorkspace fills dir with modules that shadow every module of
// python's standard library (sys.stdlib_module_names, Python 3.10 and
// later), sitecustomize and usercustomize, and the packages torch,
// fixturepkg and numpy. Each one, if imported, appends its name and a
// newline to the file marker and goes on (an import of it then yields an
// empty module). It returns the names written.
func ShadowingWorkspace(t testing.TB, dir, python, marker string) []string {
	t.Helper()
	out, err := exec.Command(python, "-I", "-c", "import sys; print('\\n'.join(sorted(sys.stdlib_module_names)))").Output()
	if err != nil {
		t.Fatalf("%s: list the standard library: %v", python, err)
	}
	names := strings.Fields(string(out))
	names = append(names, "sitecustomize", "usercustomize", "torch", "fixturepkg", "numpy")
	for _, name := range names {
		path := filepath.Join(dir, name+".py")
		if packages[name] {
			if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
				t.Fatal(err)
			}
			path = filepath.Join(dir, name, "__init__.py")
		}
		if err := os.WriteFile(path, []byte(markerLine(marker, name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// HostileUserBase makes a user base (for PYTHONUSERBASE) whose
// site-packages holds a .pth file and a usercustomize module that append
// "pth" and "usercustomize" to marker when the interpreter reads them.
func HostileUserBase(t testing.TB, dir, python, marker string) string {
	t.Helper()
	out, err := exec.Command(python, "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Fatalf("%s: version: %v", python, err)
	}
	site := filepath.Join(dir, "lib", "python"+strings.TrimSpace(string(out)), "site-packages")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	pth := "import builtins; " + strings.ReplaceAll(markerLine(marker, "pth"), "\n", "; ") + "\n"
	for name, text := range map[string]string{"hostile.pth": pth, "usercustomize.py": markerLine(marker, "usercustomize")} {
		if err := os.WriteFile(filepath.Join(site, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// markerLine is Python that appends name to marker using builtins only.
func markerLine(marker, name string) string {
	return fmt.Sprintf("open(%s, 'a').write(%s)\n", strconv.Quote(marker), strconv.Quote(name+"\n"))
}

// Imported reads the names marker holds, or none when it does not exist.
func Imported(t testing.TB, marker string) []string {
	t.Helper()
	data, err := os.ReadFile(marker)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}
