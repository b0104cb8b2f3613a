# TL016: an eval loop over a module compiled with reduce-overhead, without
# torch.no_grad(): model.eval() leaves grad mode on, every forward leaves a
# backward pending, and CUDA graph trees record instead of replaying
# ("Unable to hit fast path of CUDAGraphs because of pending, uninvoked
# backwards", pytorch issue 176846).
import time
import warnings

import torch

model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256)).cuda()
compiled = torch.compile(model, mode="reduce-overhead")
model.eval()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    start = time.perf_counter()
    for _ in range(20):
        x = torch.randn(32, 256, device="cuda")
        out = compiled(x)
        total = out.sum().item()
    torch.cuda.synchronize()
    took = time.perf_counter() - start
pending = [str(w.message) for w in caught if "pending, uninvoked backwards" in str(w.message)]
if pending:
    print(f"verdict: hazard shown, 20 calls in {took:.2f} s: {pending[0][:90]}")
else:
    print(f"verdict: no pending-backward warning, 20 calls in {took:.2f} s")
