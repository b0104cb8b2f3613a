# TL013 with static shapes and fullgraph=True: past recompile_limit (8)
# torch raises FailOnRecompileLimitHit instead of running uncompiled.
import torch

w = torch.randn(16, 16, device="cuda")


def f(x):
    return torch.relu(x @ w)


g = torch.compile(f, dynamic=False, fullgraph=True)
for bs in range(1, 13):
    g(torch.randn(bs, 16, device="cuda"))
print("twelve sizes ran")
