# TL017 for the repro: the first call of a compiled function made inside a
# manual CUDA graph capture, as scripts/device/hazards/
# tl017_first_call_in_capture.py, with the decorator called: a bare
# @torch.compile is no call the repro can take its settings from.
import torch


@torch.compile()
def f(x):
    return x.sin() * 2


x = torch.randn(64, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = f(x)
g.replay()
torch.cuda.synchronize()
print("replayed", bool(torch.allclose(y, x.sin() * 2)))
