# TL011: every output of a reduce-overhead function kept in a list across calls.
import torch


@torch.compile(mode="reduce-overhead")
def step(x):
    return x * 2


x = torch.randn(8, device="cuda")
outs = []
for _ in range(4):
    outs.append(step(x))
print("sum", float(sum(o.sum() for o in outs)))
