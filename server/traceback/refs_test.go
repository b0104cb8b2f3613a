package traceback

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refString is a ref as the tables write it: "LINE FORMAT PATH:N[:C] [in FUNC]",
// LINE 1-based.
func refString(r Ref) string {
	s := fmt.Sprintf("%d %s %s:%d", r.Line+1, r.Format, r.Path, r.FileLine)
	if r.Column > 0 {
		s += fmt.Sprintf(":%d", r.Column)
	}
	if r.Func != "" {
		s += " in " + r.Func
	}
	return s
}

func readCapture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestCaptures reads every capture of real output and checks what it
// names: how many references, the ones that matter, that pseudo-files
// are marked, and each link's span covers exactly the path through the
// line number.
func TestCaptures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file   string
		refs   int      // every ref found
		pseudo int      // of them, pseudo-files
		want   []string // refs that must be among them (refString)
		absent []string // paths that must not be taken for refs
	}{
		{file: "torch113/threads.txt", refs: 7, want: []string{
			"3 frame /usr/lib/python3.11/threading.py:1038 in _bootstrap_inner",
			"7 frame /tmp/tmp.WOJmxNDkJj/threads.py:8 in worker",
			"18 frame /usr/lib/python3/dist-packages/torch/nn/modules/linear.py:114 in forward",
		}},
		{file: "torch113/string.txt", refs: 3, pseudo: 1, want: []string{"2 frame <string>:1 in <module>"}},
		{file: "torch113/runpy.txt", refs: 3, pseudo: 2, want: []string{
			"2 frame <frozen runpy>:198 in _run_module_as_main",
			"4 frame /tmp/tmp.WOJmxNDkJj/runpy_main.py:4 in <module>",
		}},
		{file: "torch113/eval_with_key.txt", refs: 6, pseudo: 1, want: []string{
			"8 frame <eval_with_key>.0:5 in forward",
			"23 frame /tmp/tmp.WOJmxNDkJj/eval_with_key.py:10 in <module>",
		}},
		{file: "torch113/faulthandler.txt", refs: 8, want: []string{
			"9 faulthandler /tmp/tmp.WOJmxNDkJj/faulthandler_dump.py:8 in hook",
			"10 faulthandler /usr/lib/python3/dist-packages/torch/nn/modules/module.py:1201 in _call_impl",
		}},
		{file: "torch113/anomaly.txt", refs: 8, want: []string{
			"1 colon /tmp/tmp.WOJmxNDkJj/anomaly.py:10",
			"3 colon /usr/lib/python3/dist-packages/torch/autograd/__init__.py:197",
			"8 frame /usr/lib/python3/dist-packages/torch/fx/traceback.py:57 in format_stack",
		}, absent: []string{"./torch/csrc/autograd/python_anomaly_mode.cpp"}},
		{file: "torch113/dataloader.txt", refs: 9, want: []string{
			"16 frame /usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py:302 in _worker_loop",
			"22 frame /usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py:58 in <listcomp>",
			"25 frame /tmp/tmp.WOJmxNDkJj/dataloader.py:11 in __getitem__",
		}},
		{file: "torch113/jit_script.txt", refs: 3, want: []string{
			"4 frame /usr/lib/python3/dist-packages/torch/jit/_script.py:1343 in script",
			"9 frame /tmp/tmp.WOJmxNDkJj/jit_script.py:6", // TorchScript's own frame: no function
		}},
		{file: "torch113/warnings.txt", refs: 3, want: []string{
			"1 colon /tmp/tmp.WOJmxNDkJj/warnings_torch.py:5",
			"3 colon /usr/lib/python3/dist-packages/torch/testing/_deprecated.py:35",
		}},
		{file: "torch113/unittest.txt", refs: 3, want: []string{"6 frame /tmp/tmp.WOJmxNDkJj/unittest_torch.py:7 in test_linear"}},
		// C++ frames and sources are no Python files: only the user's frame.
		{file: "torch113/cpp_stack.txt", refs: 1, want: []string{"2 frame /tmp/tmp.WOJmxNDkJj/cpp_stack.py:4 in <module>"},
			absent: []string{"./aten/src/ATen/native/LinearAlgebra.cpp", "/usr/bin/python3"}},
		{file: "torch113/version.txt", refs: 0},

		{file: "torch211/threads_assert.txt", refs: 19, want: []string{
			"1 colon /opt/torch/.venv/lib/python3.12/site-packages/torch/_inductor/compile_fx.py:322",
			"37 frame /tmp/torchinductor_root/ce/cce4psicqgrxdcabksamb4iqbwp2bcavcwcbd4dw2dkth7m3wtnl.py:115 in call",
			"52 frame /opt/torch/.venv/lib/python3.12/site-packages/torch/_inductor/cudagraph_trees.py:359 in get_obj",
		}},
		// fx's generated code names where the module was traced: that path
		// is taken from inside the pseudo-file's name.
		{file: "torch211/eval_with_key.txt", refs: 8, pseudo: 1, want: []string{
			"11 frame <eval_with_key>.0 from /tmp/tmp.Alywi7z6RG/eval_with_key.py:6 in forward:5 in forward",
			"11 colon /tmp/tmp.Alywi7z6RG/eval_with_key.py:6 in forward",
		}},
		{file: "torch211/faulthandler.txt", refs: 10, want: []string{
			"10 faulthandler /opt/torch/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1822 in inner",
		}},
		{file: "torch211/fullgraph_break.txt", refs: 3, want: []string{
			"4 frame /opt/torch/.venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py:1034 in compile_wrapper",
			"18 frame /tmp/tmp.Alywi7z6RG/fullgraph_break.py:6 in f",
		}},
		// The CUDA-graph overwrite error's message embeds a frame.
		{file: "torch211/overwritten.txt", refs: 3, want: []string{"8 frame /tmp/tmp.Alywi7z6RG/overwritten.py:6 in f"}},
		{file: "torch211/pytest.txt", refs: 1, want: []string{"9 colon test_pytest_torch.py:4"}},
		{file: "torch211/explain.txt", refs: 14, want: []string{
			"2 logprefix torch/_dynamo/variables/tensor.py:1379",
			"9 frame /tmp/tmp.Alywi7z6RG/explain.py:7 in torch_dynamo_resume_in_step_at_6",
			"28 framesummary /tmp/tmp.Alywi7z6RG/explain.py:6 in step",
			"38 framesummary /tmp/tmp.Alywi7z6RG/explain.py:7 in step",
		}},
		{file: "torch211/graph_breaks.txt", refs: 175, want: []string{
			"1 logprefix torch/_dynamo/variables/tensor.py:1379",
			"8 frame /tmp/tmp.Alywi7z6RG/graph_breaks.py:6 in step",
			"12 logprefix torch/_dynamo/symbolic_convert.py:5127",
			"12 colon /tmp/tmp.Alywi7z6RG/graph_breaks.py:6", // "Graph break in user code at …"
			"66 colon /tmp/tmp.Alywi7z6RG/graph_breaks.py:4", // "Recompiling function step in …"
			// torch's format_frame: relative to the torch package, and a
			// user path with its first character cut by shorten_filename.
			"117 short _dynamo/variables/tensor.py:1951 in evaluate_expr",
			"117 short mp/tmp.Alywi7z6RG/graph_breaks.py:7 in torch_dynamo_resume_in_step_at_7",
		}},
		{file: "torch211/recompiles_verbose.txt", refs: 121, want: []string{
			"12 logprefix torch/_dynamo/guards.py:4204",
			"16 short _dynamo/output_graph.py:964 in init_ambient_guards",
			"21 short mp/tmp.Alywi7z6RG/graph_breaks.py:5 in step",
			"59 colon /tmp/tmp.Alywi7z6RG/graph_breaks.py:4",
			"68 frame /tmp/tmp.Alywi7z6RG/graph_breaks.py:6 in torch_dynamo_resume_in_step_at_6", // "-   File …" in a guard failure
		}},
		{file: "torch211/version.txt", refs: 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			text := readCapture(t, tc.file)
			lines := strings.Split(text, "\n")
			refs, more := Refs(text, 0, 0)
			if more {
				t.Fatal("Refs says there were more, with no bound")
			}
			got := map[string]bool{}
			pseudo := 0
			for _, r := range refs {
				got[refString(r)] = true
				if r.Pseudo() {
					pseudo++
				}
				span := lines[r.Line][r.Start:r.End]
				if !strings.HasPrefix(span, r.Path) || !strings.HasSuffix(span, fmt.Sprint(r.FileLine)) && r.Column == 0 {
					t.Errorf("%s: span %q is not the path through the line number", refString(r), span)
				}
			}
			if len(refs) != tc.refs {
				t.Errorf("%d refs, want %d", len(refs), tc.refs)
			}
			if pseudo != tc.pseudo {
				t.Errorf("%d pseudo-files, want %d", pseudo, tc.pseudo)
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("missing %q", w)
				}
			}
			for _, a := range tc.absent {
				for _, r := range refs {
					if strings.Contains(r.Path, a) {
						t.Errorf("%q taken for a ref: %s", a, refString(r))
					}
				}
			}
			if t.Failed() {
				for _, r := range refs {
					t.Log(refString(r))
				}
			}
		})
	}
}

// TestScanLine covers the formats one line at a time, including the
// near misses that must not be taken.
func TestScanLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want []string // refString, line 1
	}{
		{`  File "/a/b.py", line 3, in f`, []string{"1 frame /a/b.py:3 in f"}},
		{`  File "/a/b.py", line 3 in f`, []string{"1 faulthandler /a/b.py:3 in f"}},
		{`  File "<frozen importlib._bootstrap>", line 1204, in _gcd_import`, []string{"1 frame <frozen importlib._bootstrap>:1204 in _gcd_import"}},
		{`  File "<stdin>", line 1, in <module>`, []string{"1 frame <stdin>:1 in <module>"}},
		{`  File "/a/b.py", line x, in f`, nil},
		{`  File "/a/b.py" line 3`, nil},
		{`  File "/a/b.py", line 0, in f`, nil},
		{`  File "/a/b.py", line 99999999999, in f`, nil},
		{`train.py:12:5: error: mode="reduce-overhead"`, []string{"1 colon train.py:12:5"}},
		{`tests/test_x.py:12: in test_shapes`, []string{"1 colon tests/test_x.py:12 in test_shapes"}},
		{`File /usr/lib/x/torch/nn/modules/module.py:1194, in Module._call_impl(self)`, []string{"1 colon /usr/lib/x/torch/nn/modules/module.py:1194 in Module._call_impl"}},
		{`see torch/_inductor/config.pyi:10 and (torch/x.py:3)`, []string{"1 colon torch/_inductor/config.pyi:10", "1 colon torch/x.py:3"}},
		{`[torch/_inductor/cudagraph_trees.py:359](mirror:torch/_inductor/cudagraph_trees.py#L359)`, []string{"1 colon torch/_inductor/cudagraph_trees.py:359"}},
		{`[rank0]:W1201 23:05:33.428000 565 torch/_dynamo/convert_frame.py:1040] [0/8] torch._dynamo hit config.recompile_limit (8)`, []string{"1 logprefix torch/_dynamo/convert_frame.py:1040"}},
		// Not Python files, not line numbers, nothing before the dot.
		{`[W TensorImpl.h:1788] Warning: Named tensors`, nil},
		{`Exception raised from meta at ./aten/src/ATen/native/LinearAlgebra.cpp:73 (most recent call first):`, nil},
		{`x.py: no line`, nil},
		{`.py:3`, nil},
		{`setup.py:`, nil},
		{`a.python:3`, nil},
		{`résumé/ü.py:7: Warning`, []string{"1 colon résumé/ü.py:7"}},
	}
	for _, tc := range tests {
		var got []string
		for _, r := range ScanLine(tc.line, 0, nil) {
			got = append(got, refString(r))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q:\n got %q\nwant %q", tc.line, got, tc.want)
		}
	}
}

func TestBody(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{
		`V1201 23:05:33.431000 565 torch/_dynamo/symbolic_convert.py:5127] [0/0] [__graph_breaks]   File "/tmp/x.py", line 13, in <module>`: `  File "/tmp/x.py", line 13, in <module>`,
		`W1201 23:05:33.428000 565 torch/_dynamo/variables/tensor.py:1379] [0/0] Graph break: from user code at:`:                           `Graph break: from user code at:`,
		`[rank3]: Traceback (most recent call last):`: `Traceback (most recent call last):`,
		`plain text`:                  `plain text`,
		`W1201 not a prefix: x.py:3]`: `W1201 not a prefix: x.py:3]`,
		`[rankx]: Traceback`:          `[rankx]: Traceback`,
	} {
		if got := body(line); got != want {
			t.Errorf("body(%q) = %q, want %q", line, got, want)
		}
	}
}
