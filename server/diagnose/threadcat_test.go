package diagnose

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

const catalogueCases = "tl001_thread_catalogue.txtar"

// catalogueFiles reads the catalogue's case archive: file name → text.
func catalogueFiles(t *testing.T) map[string]string {
	t.Helper()
	for _, a := range readCases(t) {
		if filepath.Base(a.path) != catalogueCases {
			continue
		}
		out := map[string]string{}
		for _, f := range a.files {
			if _, dup := out[f.name]; dup {
				t.Errorf("%s: %s twice", catalogueCases, f.name)
			}
			out[f.name] = f.data
		}
		return out
	}
	t.Fatalf("no testdata/cases/%s", catalogueCases)
	return nil
}

// entryReach is what the starts a catalogue entry made in src reach.
func entryReach(s site, src, id string) (reach, int) {
	a := analyze(pybuf.Parse([]byte(src)), s.cat)
	var mine []threadStart
	for _, st := range append(append([]threadStart(nil), a.starts...), a.backwardStarts...) {
		if st.entry == id {
			mine = append(mine, st)
		}
	}
	return a.reachOf(mine), len(mine)
}

// Every entry of the catalogue says where the framework shows it, and has
// a case that must reach compiled code through it (<id>.py) and a near
// miss that must not (<id>_quiet.py): a new entry cannot land without
// both. The firing case's TL001 names how the thread was entered.
func TestThreadCatalogue(t *testing.T) {
	t.Parallel()
	s := fixture(t)
	files := catalogueFiles(t)
	ids := map[string]bool{}
	for i := range threadCatalogue {
		e := &threadCatalogue[i]
		if ids[e.id] {
			t.Errorf("entry %s twice", e.id)
		}
		ids[e.id] = true
		t.Run(e.id, func(t *testing.T) {
			if !strings.HasPrefix(e.ref, "https://") && !strings.Contains(e.ref, ".py ") {
				t.Errorf("reference %q is neither a URL nor a source file and function", e.ref)
			}
			fire, ok := files[e.id+".py"]
			if !ok {
				t.Fatalf("no %s.py in %s", e.id, catalogueCases)
			}
			quiet, ok := files[e.id+"_quiet.py"]
			if !ok {
				t.Fatalf("no %s_quiet.py in %s", e.id, catalogueCases)
			}
			if rc, n := entryReach(s, fire, e.id); len(rc.sites) == 0 {
				t.Errorf("%s.py: %d starts of the entry, none reaching compiled code", e.id, n)
			}
			if rc, n := entryReach(s, quiet, e.id); len(rc.sites) > 0 {
				t.Errorf("%s_quiet.py: %d starts of the entry reach compiled code", e.id, n)
			}
			if e.kind == entryBackward {
				return // autograd's threads matter to per-thread config (TL012), not to TL001
			}
			// An entry without words of its own is named by what the file
			// calls: threading.Thread, pool.submit.
			hows := []string{e.how}
			if e.how == "" {
				hows = append([]string(nil), e.quals...)
				for _, m := range e.methods {
					hows = append(hows, "."+m)
				}
			}
			ds := check(s, []byte(fire))
			named := false
			for _, d := range ds {
				for _, how := range hows {
					named = named || d.Code == CodeCudagraphsInThreads && strings.Contains(d.Message, how+", line ")
				}
			}
			if !named {
				t.Errorf("%s.py: no TL001 naming any of %q:\n%s", e.id, hows, render(ds))
			}
			if got := count(check(s, []byte(quiet)), CodeCudagraphsInThreads); got != 0 {
				t.Errorf("%s_quiet.py: %d × TL001", e.id, got)
			}
		})
	}
	// The archive holds the entries' cases, their variants (<id>_*.py)
	// and what has no entry on purpose (none_*.py), which no start may
	// reach.
	for name, src := range files {
		id, _, _ := strings.Cut(strings.TrimSuffix(name, ".py"), "_")
		switch {
		case id == "none":
			a := analyze(pybuf.Parse([]byte(src)), s.cat)
			if rc := a.threadReach(); len(rc.sites) > 0 || len(a.starts) > 0 {
				t.Errorf("%s: %d starts, reaching %d compile sites; it has no entry on purpose", name, len(a.starts), len(rc.sites))
			}
		case !ids[id]:
			t.Errorf("%s: no catalogue entry %q", name, id)
		}
	}
}

// A qual the file calls, or a class it derives from, leads to one entry:
// the first would otherwise hide the others.
func TestThreadCatalogueOneEntryPerName(t *testing.T) {
	t.Parallel()
	for what, index := range map[string]map[string][]int{"call": byQual, "base class": byBase} {
		for name, es := range index {
			if len(es) > 1 {
				t.Errorf("%s %s leads to %d entries", what, name, len(es))
			}
		}
	}
	for i := range threadCatalogue {
		if e := &threadCatalogue[i]; e.kind == entryPool && e.arg >= 0 {
			t.Errorf("%s: a pool's constructor takes no callable by position", e.id)
		}
	}
}
