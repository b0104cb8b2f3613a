package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestXrefCommands runs references, symbols, callers and callees on a
// real interpreter whose torch is the editors' fixture: from the user's
// file into torch's cudagraph_trees and compile_fx.
func TestXrefCommands(t *testing.T) {
	tmp := isolatedCLI(t)
	site, err := filepath.Abs(filepath.Join("..", "..", "editors", "testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", site)
	file := filepath.Join(tmp, "cg.py")
	text := "from torch._inductor import cudagraph_trees\n\n\ndef fresh_start():\n    return cudagraph_trees.get_container(0)\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	at := file + ":5:29" // get_container
	const trees = "/site/torch/_inductor/cudagraph_trees.py"
	const fx = "/site/torch/_inductor/compile_fx.py"
	target := func(rel string) string { return "  on the target: " + filepath.Join(site, rel) }

	code, out, errOut := cli(t, "references", "--quiet", "--python", debianPython, at)
	if code != 0 {
		t.Fatalf("references: %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		file + ":5:28\n",
		trees + ":24:5\n", target("torch/_inductor/cudagraph_trees.py") + ":24\n",
		trees + ":35:16\n", trees + ":36:12\n",
		fx + ":2:30\n", fx + ":7:16\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("references lack %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n") - strings.Count(out, "on the target"); n != 6 {
		t.Errorf("%d references, want 6:\n%s", n, out)
	}

	code, out, errOut = cli(t, "references", "--quiet", "--python", debianPython, "--format", "json", "--no-declaration", at)
	var refs []place
	if err := json.Unmarshal([]byte(out), &refs); code != 0 || err != nil || len(refs) != 5 {
		t.Errorf("references --format json: %d %v\n%s\n%s", code, err, out, errOut)
	}

	code, out, errOut = cli(t, "callers", "--quiet", "--python", debianPython, at)
	if code != 0 {
		t.Fatalf("callers: %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		file + ":4:5  function cg.fresh_start\n", "    call at " + file + ":5:28\n",
		trees + ":33:5  function torch._inductor.cudagraph_trees.get_manager\n",
		trees + ":35:16\n", trees + ":36:12\n",
		fx + ":5:5  function torch._inductor.compile_fx.cudagraphify\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("callers lack %q:\n%s", want, out)
		}
	}

	code, out, errOut = cli(t, "callees", "--quiet", "--python", debianPython, "--format", "json", at)
	var calls []callJSON
	if err := json.Unmarshal([]byte(out), &calls); code != 0 || err != nil {
		t.Fatalf("callees --format json: %d %v\n%s\n%s", code, err, out, errOut)
	}
	var names []string
	for _, c := range calls {
		names = append(names, c.Qualname)
	}
	if strings.Join(names, " ") != "torch._inductor.cudagraph_trees.get_obj torch._inductor.cudagraph_trees.TreeManagerContainer" {
		t.Errorf("callees of get_container: %q", names)
	}

	code, out, errOut = cli(t, "symbols", "--quiet", "--python", debianPython, "get_cont")
	if code != 0 || !strings.Contains(out, trees+":24:5  function torch._inductor.cudagraph_trees.get_container\n") {
		t.Errorf("symbols get_cont: %d\n%s\n%s", code, out, errOut)
	}
	if code, _, _ := cli(t, "symbols", "--quiet", "--python", debianPython, "--format", "yaml", "x"); code != 2 {
		t.Errorf("symbols --format yaml exited %d, want 2", code)
	}
}
