package diagnose

import (
	"strings"
	"testing"
)

// Short programs and the diagnostic codes they must produce on the
// fixture torch, in order; an empty list means none at all.
func TestCheckSnippets(t *testing.T) {
	s := fixture(t)
	const head = "import threading\nimport torch\n"
	for _, tc := range []struct {
		name string
		src  string
		env  map[string]string
		want []string
	}{
		{"threads without compile", head + "def f():\n    pass\nthreading.Thread(target=f).start()\n", nil, nil},
		{"default mode in threads", head + "g = torch.compile(lambda x: x)\ndef f():\n    g(1)\nthreading.Thread(target=f).start()\n", nil, nil},
		{"cudagraphs not in threads", head + "g = torch.compile(lambda x: x, mode=\"reduce-overhead\")\ng(1)\n", nil, nil},
		{"config as a local dict", "import torch\ndef f():\n    config = {}\n    config[\"x\"] = 1\n    return config.get(\"y\")\n", nil, nil},
		{"config set before threads", head + "import torch._inductor.config as c\nc.max_autotune = True\ndef f():\n    pass\nthreading.Thread(target=f).start()\n", nil, nil},
		{"env before import", "import os\nos.environ[\"TORCHINDUCTOR_MAX_AUTOTUNE\"] = \"1\"\nimport torch\n", nil, nil},
		{"unrelated env after import", "import os\nimport torch\nos.environ[\"HOME\"] = \"/tmp\"\n", nil, nil},
		{"patch at module level", "import torch._inductor.config as c\nwith c.patch(max_autotune=True):\n    pass\n", nil, nil},
		{"mode None with options", "import torch\ntorch.compile(lambda x: x, mode=None, options={\"debug\": True})\n", nil, nil},
		{"config helpers are not flags", "import torch._inductor.config as c\nc.save_config()\nc.get_config_copy()\nc.triton\n", nil, nil},
		{
			"cudagraphs from the target's environment", head + "g = torch.compile(lambda x: x)\ndef f():\n    g(1)\nthreading.Thread(target=f).start()\n",
			map[string]string{"TORCHINDUCTOR_CUDAGRAPHS": "1"}, []string{CodeCudagraphsInThreads},
		},
		{
			"forced by the target's environment", "import torch._inductor.config as c\nc.fx_graph_cache = False\n",
			map[string]string{"TORCHINDUCTOR_FX_GRAPH_CACHE": "1"}, []string{CodeEnvForced},
		},
		{
			"submit through a lambda", head + "from concurrent.futures import ThreadPoolExecutor\ng = torch.compile(lambda x: x, mode=\"reduce-overhead\")\nex = ThreadPoolExecutor(2)\nex.submit(lambda: g(1))\n",
			nil, []string{CodeCudagraphsInThreads},
		},
		{
			"functools.partial target, two calls deep", head + "import functools\n@torch.compile(mode=\"reduce-overhead\")\ndef m(x):\n    return x\ndef a(x):\n    return b(x)\ndef b(x):\n    return m(x)\nthreading.Thread(target=functools.partial(a, 1)).start()\n",
			nil, []string{CodeCudagraphsInThreads},
		},
		{
			"compile inside the thread target", head + "def f():\n    g = torch.compile(lambda x: x, options={\"triton.cudagraphs\": True})\n    g(1)\nthreading.Thread(target=f).start()\n",
			nil, []string{CodeCudagraphsInThreads},
		},
		{
			"run_in_executor", head + "import asyncio\ng = torch.compile(lambda x: x, mode=\"max-autotune\")\nasync def main():\n    await asyncio.get_running_loop().run_in_executor(None, g, 1)\n",
			nil, []string{CodeCudagraphsInThreads},
		},
		{
			"setattr in a thread", head + "import torch._inductor.config as c\ndef f():\n    setattr(c, \"debug\", True)\nthreading.Thread(target=f).start()\n",
			nil, []string{CodeConfigInThread},
		},
		{
			"env set in a test after import", "import torch\ndef test_x(monkeypatch):\n    monkeypatch.setenv(\"TORCHINDUCTOR_CUDAGRAPHS\", \"1\")\n",
			nil, []string{CodeEnvAfterImport},
		},
		{
			"bool for a bool flag in options", "import torch\ntorch.compile(lambda x: x, options={\"debug\": \"yes\"})\n",
			nil, []string{CodeFlagType},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte(tc.src)
			buf := parse(src)
			ds := Check(buf, s.cat, Options{SiteDir: s.dir, Env: tc.env})
			var got []string
			for _, d := range ds {
				got = append(got, d.Code)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("codes %v, want %v\n%s", got, tc.want, render(ds))
			}
		})
	}
}

// Only the run method of the Thread subclass runs in a thread, not every
// method named run.
func TestThreadSubclassScope(t *testing.T) {
	s := fixture(t)
	src := []byte(`import threading
import torch

g = torch.compile(lambda x: x, mode="reduce-overhead")


class Runner:
    def run(self):
        return g(1)


class Worker(threading.Thread):
    def run(self):
        return 1
`)
	if ds := check(s, src); count(ds, CodeCudagraphsInThreads) != 0 {
		t.Errorf("Runner.run is not run in a thread:\n%s", render(ds))
	}
	src = []byte(strings.Replace(string(src), "return 1", "return g(1)", 1))
	if ds := check(s, src); count(ds, CodeCudagraphsInThreads) != 1 {
		t.Errorf("Worker.run calls compiled code with CUDA graphs:\n%s", render(ds))
	}
}

// @config.patch on a thread target changes the config while the thread
// runs it.
func TestPatchDecoratorInThread(t *testing.T) {
	s := fixture(t)
	src := []byte(`import threading
import torch._inductor.config as c


@c.patch(max_autotune=True)
def job():
    pass


threading.Thread(target=job).start()
`)
	if ds := check(s, src); count(ds, CodeConfigInThread) != 1 {
		t.Errorf("want one %s:\n%s", CodeConfigInThread, render(ds))
	}
}

// Check is safe for concurrent use on one buffer and catalog.
func TestCheckConcurrent(t *testing.T) {
	s := fixture(t)
	src := readFile(t, "testdata/check/tl001_mode.py")
	buf := parse(src)
	want := render(Check(buf, s.cat, Options{SiteDir: s.dir}))
	errs := make(chan string, 8)
	for range 8 {
		go func() {
			errs <- render(Check(buf, s.cat, Options{SiteDir: s.dir}))
		}()
	}
	for range 8 {
		if got := <-errs; got != want {
			t.Errorf("concurrent Check differs:\n%s\nwant\n%s", got, want)
		}
	}
}
