package diagnose

import (
	"strings"
	"testing"
)

// A target whose Python is built without the GIL is a fact of its
// interpreter, not of its torch: these trees are the plain ones, checked
// as a free-threaded target's. refuse-ft's torch.compile refuses every
// such build, as torch 2.6's does (`elif
// sysconfig.get_config_var("Py_GIL_DISABLED") == 1:` and a RuntimeError).
const (
	refuseAnchor = "    if mode is not None and options is not None:\n"
	refuse26     = "    import sysconfig\n\n    if sys.version_info >= (3, 14):\n        raise RuntimeError(\"torch.compile is not supported on Python 3.14+\")\n" +
		"    elif sysconfig.get_config_var(\"Py_GIL_DISABLED\") == 1:\n        raise RuntimeError(\n            \"torch.compile is not supported on Python built with GIL disabled\"\n        )\n\n"
)

func init() {
	siteMakers["fixture-ft"] = func(t *testing.T) site {
		s := fixture(t)
		s.freeThreaded = true
		return s
	}
	siteMakers["refuse-ft"] = func(t *testing.T) site {
		s := patchedSite(t, "refuse-ft", fixtureSite, fileTorchInit, refuseAnchor, refuse26+refuseAnchor)
		s.freeThreaded = true
		return s
	}
	siteMakers["torch211-ft"] = func(t *testing.T) site {
		s := torch211(t)
		s.freeThreaded = true
		return s
	}
}

// freeThreadedCheck finds torch.compile's test of the build: torch 2.11's
// refuses only Pythons before 3.13.3; the 2.6 shape refuses every such
// build; the plain fixture has none.
func TestFreeThreadedCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		site       func(t *testing.T) site
		found, all bool
	}{
		{"fixture", func(t *testing.T) site { return fixture(t) }, false, false},
		{"refuse-ft", siteMakers["refuse-ft"], true, true},
		{"torch211", func(t *testing.T) site { return torch211(t) }, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.site(t)
			c := &checker{files: newSiteFiles(s.dir)}
			line, all := ruleTL018{c}.freeThreadedCheck()
			if (line >= 0) != tc.found || all != tc.all {
				t.Fatalf("line %d, refuses every build %v; want found %v, every build %v", line+1, all, tc.found, tc.all)
			}
			if tc.found && !strings.Contains(c.files.text(fileTorchInit, line), `get_config_var("Py_GIL_DISABLED") == 1`) {
				t.Errorf("%s:%d is %q", fileTorchInit, line+1, c.files.text(fileTorchInit, line))
			}
		})
	}
}
