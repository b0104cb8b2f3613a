package diagnose

import (
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax/syntaxtest"
)

func init() {
	// The fixture with the other spellings of a compile (testdata/hazards/README.md).
	siteMakers["spellings"] = func(t *testing.T) site {
		return overlaySite(t, "spellings", fixtureSite, "spellings")
	}
}

// valueShapes are buffers whose compiled callables are handed on many
// times: following each hand-over must cost its statement, not the number
// of sites or holders it reaches (a thousand h = load() of a loader of a
// thousand sites, a chain of aliases, a function called a thousand times
// with a compiled argument, one dict written a thousand times).
var valueShapes = []syntaxtest.Shape{
	{Name: "a chain of aliases", Gen: repeated("g0 = f\n", "g{next} = g{i}\n", "threading.Thread(target=g{i}).start()\n")},
	{Name: "many compiled values in one dict", Gen: repeated("models = {}\n", "models[{i}] = torch.compile(lambda x: x, mode=\"reduce-overhead\")\n", "def serve(k):\n    return models[k](1)\nthreading.Thread(target=serve, args=(0,)).start()\n")},
	{Name: "a loader of many sites called many times", Gen: func(size int) []byte {
		return repeated("def load():\n    d = {}\n"+repeatLines("    d[0] = torch.compile(lambda x: x, mode=\"reduce-overhead\")\n", size/200)+"    return d\n",
			"h = load()\n", "def serve():\n    return h[0](1)\nthreading.Thread(target=serve).start()\n")(size)
	}},
	{Name: "a function handed the compiled callable many times", Gen: repeated("def worker(fn, x):\n    return fn(x)\n", "threading.Thread(target=worker, args=(f, {i})).start()\nworker(f, {i})\n", "")},
	{Name: "a dispatch table of many handlers called many times", Gen: repeated("ROUTES = {}\n", "def h{i}(x):\n    return f(x)\nROUTES[{i}] = h{i}\ndef s{i}(k):\n    return ROUTES[k](1)\nthreading.Thread(target=s{i}, args=(0,)).start()\n", "")},
	{Name: "closures many levels deep", Gen: repeated("", "def o{i}(m):\n    def i1():\n        def i2():\n            def i3():\n                m(1)\n            i3()\n        i2()\n    threading.Thread(target=i1).start()\no{i}(f)\n", "")},
	{Name: "options written many times", Gen: repeated("opts = {}\n", "opts[\"triton.cudagraphs\"] = True\n", "m = torch.compile(lambda x: x, options=opts)\nthreading.Thread(target=m).start()\n")},
}

func repeatLines(line string, n int) string {
	out := ""
	for range max(n, 1) {
		out += line
	}
	return out
}

// Following values stays linear: each statement that hands a compiled
// callable on costs a bounded number of steps.
func TestValuesLinear(t *testing.T) {
	t.Parallel()
	s := fixture(t)
	for _, shape := range valueShapes {
		t.Run(shape.Name, func(t *testing.T) {
			t.Parallel()
			var work [2]int
			for k, size := range [2]int{4 << 10, 8 << 10} {
				buf := pybuf.Parse(shape.Gen(size))
				ds, w := checkWork(buf, s)
				work[k] = w
				if nodes := buf.Tree().Len(); w > 8*nodes+64 {
					t.Errorf("%d bytes: checking took %d steps for %d nodes", size, w, nodes)
				}
				t.Logf("%d bytes: %d steps, %d diagnostics", size, w, len(ds))
			}
			if r := float64(work[1]) / float64(max(work[0], 1)); r > 2.2 {
				t.Errorf("steps grew %.2fx for 2x the input (%v)", r, work)
			}
		})
	}
}
