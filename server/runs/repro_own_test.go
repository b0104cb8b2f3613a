package runs

import (
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/source"
)

// TestOwnCodeOf reads from the document how the compiled object and its
// inputs are reached on the target.
func TestOwnCodeOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rel, src string
		want           ownCode
		wantErr        string
	}{
		{"top-level function and a factory", "pkg/train.py", "import torch\n\ndef step(x):\n    return x\n\n# torchlsp: inputs=make\nc = torch.compile(step)\n",
			ownCode{Module: "pkg.train", Rel: "pkg/train.py", Function: "pkg.train:step", Inputs: "pkg.train:make", Entry: "pkg/train.py"}, ""},
		{"a local model is captured", "train.py", "import torch\n\ndef main():\n    model = Net()\n    c = torch.compile(model, mode=\"reduce-overhead\")\n",
			ownCode{Module: "train", Rel: "train.py", Entry: "train.py"}, ""},
		{"factory elsewhere, another entry", "m.py", "import torch\nmodel = Net()\nc = torch.compile(model)  # torchlsp: inputs=data.batches:first entry=run.py\n",
			ownCode{Module: "m", Rel: "m.py", Function: "m:model", Inputs: "data.batches:first", Entry: "run.py"}, ""},
		{"decorator", "d.py", "import torch\n\n@torch.compile(mode=\"reduce-overhead\")\ndef f(x):\n    return x\n",
			ownCode{Module: "d", Rel: "d.py", Function: "d:f", Entry: "d.py"}, ""},
		{"package init", "pkg/__init__.py", "import torch\ndef f(x):\n    return x\nc = torch.compile(f)\n",
			ownCode{Module: "pkg", Rel: "pkg/__init__.py", Function: "pkg:f", Entry: "pkg/__init__.py"}, ""},
		{"bad directive", "m.py", "import torch\n# torchlsp: inputs\nc = torch.compile(f)\n", ownCode{}, "want inputs=NAME"},
		{"not a module name", "my-scripts/train.py", "import torch\nc = torch.compile(f)\n", ownCode{}, "not an importable module name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := "/w/" + tt.rel
			doc, err := source.NewStore(0, nil).Open(source.FileURI(path), "", 1, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			call, ok := compileCallNear(doc.Buffer(), strings.Count(tt.src, "\n"))
			if !ok {
				t.Fatal("no compile call")
			}
			got, err := ownCodeOf("/w", path, tt.src, call)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if _, err := ownCodeOf("/w", "/elsewhere/x.py", "", pybuf.Call{}); err == nil {
		t.Error("a file outside the workspace was accepted")
	}
}
