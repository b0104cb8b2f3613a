# TL020, fixed: the gradients set to None at every step (zero_grad), so
# no backward accumulates into an output of the one before.
import torch

layer = torch.nn.Linear(32, 64).bfloat16().cuda()
x = torch.randn(8, 32).bfloat16().cuda()
model = torch.compile(layer, mode="reduce-overhead")
try:
    for step in range(3):
        layer.zero_grad(set_to_none=True)
        res = model(x)
        res.mean().backward()
    torch.cuda.synchronize()
    print("verdict: no error, 3 steps, the gradients set to None at each")
except RuntimeError as e:
    print(f"verdict: hazard shown, step {step}: {str(e).splitlines()[0][:120]}")
