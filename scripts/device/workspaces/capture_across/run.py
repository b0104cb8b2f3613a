# TL017 across files: model.py compiles, this file makes the first call
# inside a manual CUDA graph capture.
import sys

import torch
from model import load_fn

f = load_fn()
x = torch.randn(64, device="cuda")
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        y = f(x)
    g.replay()
    torch.cuda.synchronize()
    print("capture not failed: replay right" if torch.allclose(y, x.sin() * 2) else "capture failed: replay gives wrong results")
except Exception as e:
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    print(f"capture failed: {type(e).__name__}: {(lines[-1] if lines else '')[:200]}")
    sys.exit(1)
