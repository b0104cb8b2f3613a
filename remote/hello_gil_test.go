package remote

import (
	"os/exec"
	"strings"
	"testing"
)

// The hello's GIL facts are the interpreter's own: what sysconfig and
// sys._is_gil_enabled say there, read by the real helper.
func TestHelloGILFacts(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(systemPython, "-c",
		`import sys, sysconfig; p = getattr(sys, "_is_gil_enabled", None); print(sysconfig.get_config_var("Py_GIL_DISABLED") == 1, "none" if p is None else p())`).Output()
	if err != nil {
		t.Fatal(err)
	}
	local := strings.Fields(string(out))
	hello := startTestHelper(t).Hello()
	enabled := "none"
	if hello.GILEnabled != nil {
		enabled = map[bool]string{true: "True", false: "False"}[*hello.GILEnabled]
	}
	if got := []string{map[bool]string{true: "True", false: "False"}[hello.GILDisabled], enabled}; strings.Join(got, " ") != strings.Join(local, " ") {
		t.Errorf("hello says built without the GIL %s, GIL on %s; %s says %v", got[0], got[1], systemPython, local)
	}

	// Interpreters built without the GIL, as their sysconfig and sys say:
	// free-threaded unless the GIL was turned back on (PYTHON_GIL=1).
	for _, tc := range []struct {
		name, gilOn string
		want        bool
	}{
		{"gil off", "False", true},
		{"gil turned back on", "True", false},
		{"no _is_gil_enabled", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			patch := "import sysconfig as _sc\n_real_get = _sc.get_config_var\n" +
				"_sc.get_config_var = lambda *n: 1 if n == (\"Py_GIL_DISABLED\",) else _real_get(*n)\n"
			if tc.gilOn != "" {
				patch += "sys._is_gil_enabled = lambda: " + tc.gilOn + "\n"
			} else {
				patch += "if hasattr(sys, \"_is_gil_enabled\"):\n    del sys._is_gil_enabled\n"
			}
			h := startTestHelperWith(t, hostileSpec(t, "torchlsp_helper", patch)).Hello()
			if !h.GILDisabled {
				t.Fatalf("hello %+v: want gil_disabled", h)
			}
			if (h.GILEnabled == nil) != (tc.gilOn == "") || h.GILEnabled != nil && *h.GILEnabled != (tc.gilOn == "True") {
				t.Errorf("gil_enabled = %v, want %q", h.GILEnabled, tc.gilOn)
			}
			if h.FreeThreaded() != tc.want {
				t.Errorf("FreeThreaded() = %v, want %v", h.FreeThreaded(), tc.want)
			}
		})
	}
}
