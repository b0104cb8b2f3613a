# TL017: the first call of a compiled function made inside a manual CUDA
# graph capture (pytorch issues 131782, 185074): torch.compile compiles on
# that call, which is not permitted while the stream captures.
import torch


@torch.compile
def f(x):
    return x.sin() * 2


x = torch.randn(64, device="cuda")
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        y = f(x)
    x.copy_(torch.randn(64, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    right = torch.allclose(y, x.sin() * 2)
    print("verdict:", "captured, replay right" if right else "hazard shown: captured, replay gives wrong results")
except Exception as e:  # the capture fails on the first call
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    # Dynamo wraps the backend's error: its last line is the cause.
    cause = lines[-1] if lines else ""
    print(f"verdict: hazard shown: {type(e).__name__}: {cause[:200]}")
