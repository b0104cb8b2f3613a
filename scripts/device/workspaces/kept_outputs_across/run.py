# TL011 across files: model.py compiles with reduce-overhead, this file
# keeps every output in a list across calls.
import sys

import torch
from model import load_step

step = load_step()
x = torch.randn(8, device="cuda")
outs = []
try:
    for _ in range(4):
        outs.append(step(x))
    print("kept outputs not failed: sum", float(sum(o.sum() for o in outs)))
except RuntimeError as e:
    print("kept outputs failed:", str(e).strip().splitlines()[0][:160])
    sys.exit(1)
