package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/internal/torch26"
)

// The command line against a real torch 2.6 in an LXC container entered
// with pct, as users reach theirs. Every expected line comes from the
// container's own files, asked in the test, never written down: the
// answers must be that torch's, whatever its lines are.
func TestTorch26(t *testing.T) {
	ct := torch26.Start(t)
	tmp := isolatedCLI(t)
	exec, _ := json.Marshal(ct.Exec())
	writeFile(t, filepath.Join(tmp, "config", "torchlsp", "config.toml"),
		"default = \"ct200\"\n\n[targets.ct200]\nexec = "+string(exec)+"\npython = \""+torch26.Python+"\"\n")
	ws := filepath.Join(tmp, "ws")
	hazards := filepath.Join(ws, "hazards.py")
	writeFile(t, hazards, torch26Hazards)
	// Where the container's torch says things are.
	facts := strings.Fields(ct.Run(t, torch26.Python, "-c", `
import inspect, torch, torch.nn
root = torch.__path__[0]
def line_of(rel, text):
    with open(root + "/" + rel) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    return 0
print(torch.__version__.split("+")[0])
print(inspect.getsourcelines(torch.compile)[1])
print(inspect.getsourcelines(torch.nn.Linear)[1])
print(line_of("_inductor/cudagraph_trees.py", "assert torch._C._is_key_in_tls(attr_name)"))
print(line_of("_inductor/compile_fx.py", "if config.triton.cudagraph_trees:"))
print(line_of("_inductor/cudagraph_trees.py", "overwritten by a subsequent run"))
print(line_of("_dynamo/config.py", "cache_size_limit = "))
print(int(hasattr(torch._dynamo.config, "recompile_limit")))
print(line_of("_dynamo/eval_frame.py", "self._orig_mod = mod"))
`))
	if len(facts) != 9 {
		t.Fatalf("the container's torch said %q", facts)
	}
	version, compileLine, linearLine, assertLine, gateLine, overwrittenLine, cacheLimitLine, hasRecompileLimit := facts[0], facts[1], facts[2], facts[3], facts[4], facts[5], facts[6], facts[7] == "1"
	origModLine := facts[8]
	if !strings.HasPrefix(version, "2.") {
		t.Fatalf("the container's torch is %s, not a torch 2.x", version)
	}

	t.Run("definitions land on the container's lines", func(t *testing.T) {
		for _, tt := range []struct {
			needle string
			off    int
			file   string
			line   string
		}{
			{"torch.compile(nn", len("torch."), "torch/__init__.py", compileLine},
			{"nn.Linear(", len("nn."), "torch/nn/modules/linear.py", linearLine},
		} {
			code, out, errOut := cli(t, "definition", "--quiet", hazards+":"+lineColOf(t, hazards, tt.needle, tt.off))
			want := "/usr/lib/python3/dist-packages/" + tt.file + ":" + tt.line
			if code != 0 || !strings.Contains(out, "on the target: "+want) {
				t.Errorf("definition of %s: %d\n%s\n%s\nwant %s", tt.needle, code, out, errOut, want)
			}
		}
	})

	t.Run("gates list the container's read of the flag", func(t *testing.T) {
		code, out, errOut := cli(t, "gates", "--quiet", "triton.cudagraph_trees")
		if code != 0 || !strings.Contains(out, "torch/_inductor/compile_fx.py:"+gateLine+":") || !strings.Contains(out, "torch "+version) {
			t.Errorf("gates: %d\n%s\n%s\nwant compile_fx.py:%s", code, out, errOut, gateLine)
		}
	})

	t.Run("check cites the container's lines", func(t *testing.T) {
		code, out, errOut := cli(t, "check", "--quiet", "--format", "json", hazards)
		var findings []struct {
			Line    int      `json:"line"`
			Code    string   `json:"code"`
			Message string   `json:"message"`
			Related []string `json:"related"`
		}
		if code != 1 || json.Unmarshal([]byte(out), &findings) != nil {
			t.Fatalf("check: %d\n%s\n%s", code, out, errOut)
		}
		cites := map[string]string{}
		for _, f := range findings {
			cites[f.Code] += f.Message + "\n" + strings.Join(f.Related, "\n") + "\n"
		}
		limitName := "cache_size_limit"
		if hasRecompileLimit {
			limitName = "recompile_limit"
		}
		for code, want := range map[string][]string{
			"TL001 cudagraphs-in-threads":        {"torch/_inductor/cudagraph_trees.py:" + assertLine + ":", "torch " + version},
			"TL011 cudagraph-output-overwritten": {"torch/_inductor/cudagraph_trees.py:" + overwrittenLine + ":"},
			"TL013 recompile-limit":              {"torch._dynamo.config." + limitName, "torch/_dynamo/config.py:" + cacheLimitLine + ":"},
		} {
			for _, w := range want {
				if !strings.Contains(cites[code], w) {
					t.Errorf("%s lacks %q:\n%s\nall findings:\n%s", code, w, cites[code], out)
				}
			}
		}
		if _, ok := cites["TL012 config-per-thread"]; ok {
			t.Errorf("TL012 on a torch whose config is process-wide:\n%s", out)
		}
	})

	t.Run("check follows values across files with the container's lines", func(t *testing.T) {
		across := filepath.Join(tmp, "across")
		for name, text := range torch26Across {
			writeFile(t, filepath.Join(across, name), text)
		}
		code, out, errOut := cli(t, "check", "--quiet", "--format", "json", across)
		var findings []struct {
			File    string   `json:"file"`
			Line    int      `json:"line"`
			Code    string   `json:"code"`
			Related []string `json:"related"`
		}
		if code != 1 || json.Unmarshal([]byte(out), &findings) != nil {
			t.Fatalf("check: %d\n%s\n%s", code, out, errOut)
		}
		got := map[string]string{}
		for _, f := range findings {
			got[fmt.Sprintf("%s:%d %s", filepath.Base(f.File), f.Line, strings.Fields(f.Code)[0])] = strings.Join(f.Related, "\n")
		}
		for place, want := range map[string]string{
			"model.py:6 TL001":      "torch/_inductor/cudagraph_trees.py:" + assertLine + ":",
			"server.py:7 TL001":     "server.py:11: the thread starts here: threading.Thread",
			"checkpoint.py:5 TL015": "torch/_dynamo/eval_frame.py:" + origModLine + ":",
		} {
			if !strings.Contains(got[place], want) {
				t.Errorf("%s: related %q, want %q among them; all findings:\n%s", place, got[place], want, out)
			}
		}
	})

	t.Run("hover says the flag's value in the container", func(t *testing.T) {
		code, out, errOut := cli(t, "hover", "--quiet", hazards+":"+lineColOf(t, hazards, "cudagraph_trees = True", 0))
		if code != 0 || !strings.Contains(out, "On target **ct200**: `True`") {
			t.Errorf("hover of the flag: %d\n%s\n%s", code, out, errOut)
		}
	})
}

// torch26Hazards holds a spelling of each hazard whose verdict 2.6's
// source decides (TL001, TL011, TL013), a config write that TL012 would
// flag on a torch with per-thread config, and a flag to hover.
const torch26Hazards = `import threading

import torch
import torch.nn as nn
from torch._inductor import config as inductor_config

inductor_config.triton.cudagraph_trees = True
model = torch.compile(nn.Linear(4, 4).cuda(), mode="reduce-overhead")


def worker():
    torch._dynamo.config.suppress_errors = True
    model(torch.randn(2, 4, device="cuda"))


threading.Thread(target=worker).start()


def collect(x):
    outs = []
    for _ in range(4):
        outs.append(model(x))
    return outs


double = torch.compile(lambda x: x * 2, dynamic=False)
for n in range(1, 20):
    double(torch.randn(n, device="cuda"))
`

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// torch26Across is a workspace whose hazards lie across files: a loader
// compiles with CUDA graphs and a server's threads call it; a training
// script hands a compiled module to a save function of another module.
var torch26Across = map[string]string{
	"model.py": `import torch
from torch import nn


def load():
    return torch.compile(nn.Linear(4, 4), mode="reduce-overhead")
`,
	"server.py": `import threading
from model import load

MODEL = load()

def handle(x):
    return MODEL(x)


for r in range(2):
    threading.Thread(target=handle, args=(r,)).start()
`,
	"checkpoint.py": `import torch


def save(model, path):
    torch.save(model.state_dict(), path)
`,
	"train.py": `import torch
from checkpoint import save

net = torch.compile(torch.nn.Linear(2, 2))
save(net, "ckpt.pt")
`,
}
