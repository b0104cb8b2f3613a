# A CUDA-graph output kept across the next call of the same compiled callable.
import torch

@torch.compile(mode="reduce-overhead")
def f(x):
    return x * 2

x = torch.randn(8, device="cuda")
outs = []
for _ in range(4):
    outs.append(f(x))
print(sum(o.sum() for o in outs))
