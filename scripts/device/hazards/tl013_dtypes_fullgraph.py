# TL013: nine dtypes through a fullgraph function: past recompile_limit (8)
# torch raises FailOnRecompileLimitHit.
import torch


@torch.compile(fullgraph=True)
def f(x):
    return x * 2


for dt in [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]:
    f(torch.ones(4, dtype=dt, device="cuda"))
print("all nine dtypes compiled")
