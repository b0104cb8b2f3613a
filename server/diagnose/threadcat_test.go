package diagnose

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax/syntaxtest"
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
	return threadFacts{a}.reachOf(mine), len(mine)
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
			if rc := (threadFacts{a}).threadReach(); len(rc.sites) > 0 || len(a.starts) > 0 {
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

// catalogueShapes are buffers in which the catalogue's entries multiply
// what the analysis follows: a name routed many times and defined many
// times, a servicer of many methods registered many times, many handler
// classes, endpoints and generators.
var catalogueShapes = []syntaxtest.Shape{
	{Name: "a name routed and defined many times", Gen: repeated("from fastapi import Depends, FastAPI\napp = FastAPI()\n",
		"def g(x):\n    return f(x)\napp.add_api_route('/', g)\nDepends(g)\n", "")},
	{Name: "a servicer of many methods registered many times", Gen: func(size int) []byte {
		n := max(1, size/90)
		var b strings.Builder
		b.WriteString("import grpc\nimport torch\nf = torch.compile(lambda x: x, mode=\"reduce-overhead\")\nserver = grpc.server(None)\nclass S:\n")
		for i := range n {
			fmt.Fprintf(&b, "    def m%d(self):\n        f(1)\n", i)
		}
		b.WriteString(strings.Repeat("pb.add_SServicer_to_server(S(), server)\n", n))
		return []byte(b.String())
	}},
	{Name: "many served handler classes", Gen: repeated("import socketserver\n",
		"class H{i}(socketserver.BaseRequestHandler):\n    def handle(self): f(1)\nsocketserver.ThreadingTCPServer(('', 1), H{i})\n", "")},
	{Name: "many endpoints", Gen: repeated("from fastapi import FastAPI\napp = FastAPI()\n", "@app.get('/{i}')\ndef e{i}():\n    return f(1)\n", "")},
	{Name: "many cached loaders under a stack of decorators", Gen: repeated("import streamlit as st\n",
		"@st.cache_resource\n@st.cache_resource(ttl=1)\ndef load():\n    return torch.compile(g, mode=\"reduce-overhead\")\n", "")},
	{Name: "a generator of one name defined and streamed many times", Gen: repeated("from starlette.responses import StreamingResponse\n",
		"def g():\n    yield f(1)\nStreamingResponse(g())\n", "")},
}

// The catalogue keeps the analysis linear in the buffer on the shapes
// that would multiply its work.
func TestThreadCatalogueLinear(t *testing.T) {
	t.Parallel()
	s := fixture(t)
	for _, shape := range catalogueShapes {
		t.Run(shape.Name, func(t *testing.T) {
			t.Parallel()
			var work [2]int
			for k, size := range [2]int{8 << 10, 16 << 10} {
				buf := pybuf.Parse(shape.Gen(size))
				ds, w := checkWork(buf, s)
				work[k] = w
				if nodes := buf.Tree().Len(); w > 8*nodes+64 {
					t.Errorf("%d bytes: checking took %d steps for %d nodes", size, w, nodes)
				}
				if count(ds, CodeCudagraphsInThreads) == 0 {
					t.Errorf("%d bytes: no TL001: the shape does not reach its entry", size)
				}
				t.Logf("%d bytes: %d steps, %d diagnostics", size, w, len(ds))
			}
			if r := float64(work[1]) / float64(max(work[0], 1)); r > 2.2 {
				t.Errorf("steps grew %.2fx for 2x the input (%v)", r, work)
			}
		})
	}
}
