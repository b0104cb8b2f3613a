package traceback

import (
	"fmt"
	"strings"
	"testing"
)

// stackString is a stack as the tables write it: "HEADER frames=N
// innermost=REF exception=TEXT", HEADER 1-based.
func stackString(s Stack) string {
	inner := s.Innermost()[0]
	out := fmt.Sprintf("%d frames=%d innermost=%s", s.Header+1, len(s.Frames), refString(inner))
	if s.Exception != "" {
		out += fmt.Sprintf(" exception@%d=%s", s.ExceptionLine+1, s.Exception)
	}
	return out
}

// TestStacks groups the captures' frames into the stacks they print, with
// each Python traceback's exception and its innermost frame.
func TestStacks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		{"torch113/threads.txt", []string{
			"2 frames=7 innermost=18 frame /usr/lib/python3/dist-packages/torch/nn/modules/linear.py:114 in forward exception@21=RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x8)",
		}},
		{"torch113/dataloader.txt", []string{
			"1 frames=5 innermost=12 frame /usr/lib/python3/dist-packages/torch/_utils.py:543 in reraise exception@14=ValueError: Caught ValueError in DataLoader worker process 0.",
			"15 frames=4 innermost=25 frame /tmp/tmp.WOJmxNDkJj/dataloader.py:11 in __getitem__ exception@27=ValueError: sample 2 is broken",
		}},
		{"torch113/anomaly.txt", []string{
			"3 frames=3 innermost=8 frame /usr/lib/python3/dist-packages/torch/fx/traceback.py:57 in format_stack",
			"12 frames=3 innermost=17 frame /usr/lib/python3/dist-packages/torch/autograd/__init__.py:197 in backward exception@19=RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.",
		}},
		// faulthandler prints the innermost call first, one stack a thread.
		{"torch113/faulthandler.txt", []string{
			"1 frames=5 innermost=2 faulthandler /usr/lib/python3.11/threading.py:320 in wait",
			"8 frames=3 innermost=9 faulthandler /tmp/tmp.WOJmxNDkJj/faulthandler_dump.py:8 in hook",
		}},
		{"torch113/runpy.txt", []string{
			"1 frames=3 innermost=4 frame /tmp/tmp.WOJmxNDkJj/runpy_main.py:4 in <module> exception@6=RuntimeError: shape '[3]' is invalid for input of size 2",
		}},
		{"torch113/cpp_stack.txt", []string{
			"1 frames=1 innermost=2 frame /tmp/tmp.WOJmxNDkJj/cpp_stack.py:4 in <module> exception@5=RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)",
		}},
		{"torch113/warnings.txt", nil},
		{"torch211/threads_assert.txt", []string{
			"4 frames=18 innermost=52 frame /opt/torch/.venv/lib/python3.12/site-packages/torch/_inductor/cudagraph_trees.py:359 in get_obj exception@55=AssertionError",
		}},
		// Dynamo's "from user code:" after the Unsupported error.
		{"torch211/fullgraph_break.txt", []string{
			"1 frames=2 innermost=4 frame /opt/torch/.venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py:1034 in compile_wrapper exception@7=torch._dynamo.exc.Unsupported: Failed to trace builtin operator",
			"17 frames=1 innermost=18 frame /tmp/tmp.Alywi7z6RG/fullgraph_break.py:6 in f",
		}},
		{"torch211/eval_with_key.txt", []string{
			"1 frames=4 innermost=11 frame <eval_with_key>.0 from /tmp/tmp.Alywi7z6RG/eval_with_key.py:6 in forward:5 in forward exception@14=RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)",
			"25 frames=3 innermost=31 frame /opt/torch/.venv/lib/python3.12/site-packages/torch/fx/graph_module.py:459 in __call__ exception@34=RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)",
		}},
		// TORCH_LOGS lines: the stacks are read through the log prefixes.
		{"torch211/graph_breaks.txt", []string{
			"7 frames=1 innermost=8 frame /tmp/tmp.Alywi7z6RG/graph_breaks.py:6 in step",
			"23 frames=2 innermost=26 frame /tmp/tmp.Alywi7z6RG/graph_breaks.py:6 in step",
			"42 frames=2 innermost=45 frame /tmp/tmp.Alywi7z6RG/graph_breaks.py:6 in step",
			"60 frames=2 innermost=63 frame /tmp/tmp.Alywi7z6RG/graph_breaks.py:7 in step",
			"82 frames=1 innermost=83 frame /tmp/tmp.Alywi7z6RG/graph_breaks.py:6 in torch_dynamo_resume_in_step_at_6",
		}},
		{"torch211/explain.txt", []string{
			"8 frames=1 innermost=9 frame /tmp/tmp.Alywi7z6RG/explain.py:7 in torch_dynamo_resume_in_step_at_6",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			res := Parse(readCapture(t, tc.file), 0)
			var got []string
			for _, s := range res.Stacks {
				got = append(got, stackString(s))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("stacks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestParseLimit(t *testing.T) {
	t.Parallel()
	text := readCapture(t, "torch211/threads_assert.txt")
	res := Parse(text, 5)
	if !res.Truncated || len(res.Refs) != 5 {
		t.Fatalf("Parse(limit 5): %d refs, truncated %v", len(res.Refs), res.Truncated)
	}
	refs, more := Refs(text, 100, 3)
	if !more || len(refs) != 3 || refs[0].Line != 100 {
		t.Fatalf("Refs(first line 100, limit 3): %d refs, more %v, first on line %d", len(refs), more, refs[0].Line)
	}
}

func TestLineBreaks(t *testing.T) {
	t.Parallel()
	// LSP's line breaks: "\n", "\r\n" and a lone "\r".
	text := "a.py:1\r\nb.py:2\rc.py:3\nd.py:4"
	refs, _ := Refs(text, 0, 0)
	var got []string
	for _, r := range refs {
		got = append(got, refString(r))
	}
	want := "1 colon a.py:1|2 colon b.py:2|3 colon c.py:3|4 colon d.py:4"
	if strings.Join(got, "|") != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestVersions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want string // "" for none
	}{
		{"torch 1.13.0a0 python 3.11.2 /usr/lib/python3/dist-packages/torch/__init__.py", "1.13.0a0"},
		{"torch 2.11.0+cu130 · device NVIDIA H200", "2.11.0+cu130"},
		{"PyTorch version: 2.11.0+cu130", "2.11.0+cu130"},
		{"torch==2.5.1", "2.5.1"},
		{"torch: 2.4.0", "2.4.0"},
		{"Torch version 2.3", "2.3"},
		{"torch/_inductor/config.py:1514", ""},
		{"torch.compile(x, 2.0)", ""},
		{"import torch 3", ""},
		{"nottorch 2.1.0", ""},
		{"torchvision 0.19.0", ""},
		{"torch 2 threads", ""},
	}
	for _, tc := range tests {
		var got string
		if vs := Versions(tc.line, 0); len(vs) > 0 {
			got = vs[0].Version
		}
		if got != tc.want {
			t.Errorf("Versions(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
	if vs := Versions(readCapture(t, "torch113/version.txt"), 0); len(vs) != 1 || vs[0].Version != "1.13.0a0" {
		t.Errorf("version.txt: %v", vs)
	}
}

func TestSameVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"2.11.0", "2.11.0", true},
		{"2.11.0", "2.11.0+cu130", true},
		{"2.11.0+cu128", "2.11.0+cu130", false},
		{"2.11.0", "2.10.0", false},
		{"1.13.0a0", "1.13.0", false},
	} {
		if got := SameVersion(tc.a, tc.b); got != tc.same {
			t.Errorf("SameVersion(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

// A single line of a log holding far more frames than the bound keeps
// only about the bound: the references past it are not scanned, so a
// 64 MiB line of frames costs the bound's memory, not the line's.
func TestParseBoundsALongLine(t *testing.T) {
	t.Parallel()
	const frame = `File "/opt/torch/x.py", line 12, in f `
	line := strings.Repeat(frame, 200_000)
	const max = 1000
	res := Parse(line, max)
	if len(res.Refs) != max || !res.Truncated {
		t.Fatalf("kept %d references (truncated %v), want %d and truncated", len(res.Refs), res.Truncated, max)
	}
	if cap(res.Refs) > 4*max {
		t.Errorf("the references' array holds %d, want at most %d: the line was scanned past the bound", cap(res.Refs), 4*max)
	}
	refs, more := Refs(line, 0, max)
	if len(refs) != max || !more || cap(refs) > 4*max {
		t.Errorf("Refs kept %d (cap %d, more %v), want %d, at most %d, more", len(refs), cap(refs), more, max, 4*max)
	}
}
