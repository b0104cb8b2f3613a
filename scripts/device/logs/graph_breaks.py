# Graph breaks (print, Tensor.item) and recompiles across shapes and dtypes.
import torch

def step(x):
    y = x.sin()
    print("value", y.sum().item())
    if y.sum().item() > 0:
        return y.cos()
    return y * 2

f = torch.compile(step)
for n in (4, 8, 16):
    f(torch.randn(n))
f(torch.randn(4, dtype=torch.float64))
