package diagnose

import (
	"testing"
)

// An options key that the target's torch.compile takes out of options
// itself (2.11's guard_filter_fn, popped in torch/__init__.py) is an
// option, though Inductor's config has no such flag; on a torch that does
// not pop it, Inductor rejects it.
func TestOptionsTorchCompileTakes(t *testing.T) {
	t.Parallel()
	const pop = "    if mode is not None and options is not None:\n"
	sites := map[string]site{
		"fixture": fixture(t),
		"pops": patchedSite(t, "pops", fixtureSite, "torch/__init__.py", pop,
			"    guard_filter_fn = None\n    if options and isinstance(options, dict):\n        guard_filter_fn = options.pop(\"guard_filter_fn\", None)\n"+pop),
	}
	for _, tc := range []struct {
		name, site, src string
		want            int // TL004 diagnostics
	}{
		{"popped key", "pops", "import torch\nf = torch.compile(lambda x: x, options={\"guard_filter_fn\": None})\n", 0},
		{"popped key, torch without it", "fixture", "import torch\nf = torch.compile(lambda x: x, options={\"guard_filter_fn\": None})\n", 1},
		{"other unknown key", "pops", "import torch\nf = torch.compile(lambda x: x, options={\"no_such_flag\": True})\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ds := check(sites[tc.site], []byte(tc.src))
			if got := count(ds, CodeUnknownFlag); got != tc.want {
				t.Errorf("%d TL004, want %d\n%s", got, tc.want, render(ds))
			}
		})
	}
}
