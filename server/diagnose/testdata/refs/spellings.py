import os
import torch
import torch._inductor.config as inductor_config
from torch._inductor import config
from torch._inductor.config import triton as t

torch._inductor.config.triton.cudagraph_trees = False
inductor_config.triton.cudagraphs = True
print(t.cudagraphs, config.max_autotune)
config.triton.cudagraph_trees_history_recording = False
fn = torch.compile(lambda x: x, options={"triton.cudagraphs": False, "max_autotune": True})
with config.patch("triton.cudagraph_trees", True):
    pass
with config.patch({"max_autotune": False}):
    pass


@config.patch(max_autotune=True)
def f():
    pass


os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "1"
flag = os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE")
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
os.putenv("TORCHINDUCTOR_CUDAGRAPHS", "0")
setattr(config, "debug", True)
print(getattr(t, "cudagraph_trees"), hasattr(config, "max_autotune"))
config = {"not": "a config module"}
print(config["not"], os.environ.get("HOME"))


def test_env(monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CUDAGRAPHS", "1")
