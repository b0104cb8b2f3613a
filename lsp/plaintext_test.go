package lsp

import (
	"testing"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

func TestPlainText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, md, want string
	}{
		{
			name: "definition hover",
			md: "```python\ndef linear(input, weight, bias=None, **kwargs)\n```\n`torch.nn.functional.linear` · re-exported by torch.nn\n\n" +
				"Applies a linear transformation to the incoming data.\n\n---\n" +
				"Defined at `torch/nn/functional.py:1993` on target **t211** ([`functional.py:1993`](file:///c/torch%20cache/torch/nn/functional.py#L1993))  \n" +
				"torch 2.11.0\n",
			want: "def linear(input, weight, bias=None, **kwargs)\ntorch.nn.functional.linear · re-exported by torch.nn\n\n" +
				"Applies a linear transformation to the incoming data.\n\n" +
				"Defined at torch/nn/functional.py:1993 on target t211 (/c/torch cache/torch/nn/functional.py:1993)\n" +
				"torch 2.11.0\n",
		},
		{
			name: "flag hover list",
			md: "On target **gpu**: `True` (default `False`)  \n\nRead at 2 places in torch:\n" +
				"- [`torch/_inductor/compile_fx.py:1853`](file:///m/torch/_inductor/compile_fx.py#L1853) `if config.triton.cudagraph_trees:`\n" +
				"\n---\nDefined at `/opt/torch/_inductor/config.py:1514` on target **gpu**\n",
			want: "On target gpu: True (default False)\n\nRead at 2 places in torch:\n" +
				"- /m/torch/_inductor/compile_fx.py:1853 if config.triton.cudagraph_trees:\n\n" +
				"Defined at /opt/torch/_inductor/config.py:1514 on target gpu\n",
		},
		{
			name: "docstring markup that is not markdown stays",
			md:   "Takes *args and **kwargs, a_b__c and 2**3 ** 4.\n",
			want: "Takes *args and **kwargs, a_b__c and 2**3 ** 4.\n",
		},
		{
			name: "code spans keep their content, even markup",
			md:   "`**x**` and ``a ` b`` and **bold `code`**\n",
			want: "**x** and a ` b and bold code\n",
		},
		{
			name: "fenced lines are kept verbatim",
			md:   "~~~\n**not bold** [x](file:///y)\n---\n~~~\n# Title\n",
			want: "**not bold** [x](file:///y)\n---\nTitle\n",
		},
		{
			name: "web links keep their address",
			md:   "see [the issue](https://github.com/pytorch/pytorch/issues/123177) and [https://x.y](https://x.y)\n",
			want: "see the issue <https://github.com/pytorch/pytorch/issues/123177> and https://x.y\n",
		},
		{
			name: "unclosed markup is text",
			md:   "a `b and [c](d e) and **f\n",
			want: "a `b and [c](d e) and **f\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := plainText(tt.md); got != tt.want {
				t.Errorf("plainText(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
		})
	}
}

// FuzzPlainText checks that no Markdown makes plainText panic or loop.
func FuzzPlainText(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	f.Add("```python\ndef f()\n```\n**a** [`b`](file:///c#L1)\n")
	f.Add("[[x]](y) ``` ` ** __a__ ___")
	f.Fuzz(func(t *testing.T, md string) {
		deadline.Start(t, md)
		_ = plainText(md) // must not panic or loop
	})
}
