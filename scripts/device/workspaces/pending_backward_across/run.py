# TL016 across files: model.py compiles with reduce-overhead, this eval
# loop calls it without torch.no_grad() (model.eval() leaves grad on).
import sys
import warnings

import torch
from model import load_model

model = load_model()
model.eval()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(20):
        x = torch.randn(32, 256, device="cuda")
        out = model(x)
        total = out.sum().item()
    torch.cuda.synchronize()
pending = [str(w.message) for w in caught if "pending, uninvoked backwards" in str(w.message)]
print("fast path failed: " + pending[0][:120] if pending else "fast path not failed: no pending-backward warning")
sys.exit(1 if pending else 0)
