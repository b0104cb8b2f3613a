# TL013 with static shapes: twelve batch sizes through a function compiled
# with dynamic=False: one graph per size, and past recompile_limit (8) the
# other sizes run uncompiled.
import torch

w = torch.randn(16, 16, device="cuda")


def f(x):
    return torch.relu(x @ w)


g = torch.compile(f, dynamic=False)
for bs in range(1, 13):
    g(torch.randn(bs, 16, device="cuda"))
print("twelve sizes ran")
