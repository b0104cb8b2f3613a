# TL020: forwards and backwards of a module compiled with CUDA graphs, in
# a loop that never sets the gradients to None: each .grad is an output
# of the last backward's CUDA graph, which the next replay overwrites,
# and the next backward accumulates into it. The .fixed twin calls
# zero_grad(set_to_none=True) at every step.
import torch

layer = torch.nn.Linear(32, 64).bfloat16().cuda()
x = torch.randn(8, 32).bfloat16().cuda()
model = torch.compile(layer, mode="reduce-overhead")
try:
    for step in range(3):
        res = model(x)
        res.mean().backward()
    torch.cuda.synchronize()
    print("verdict: no error, 3 steps with the gradients accumulated")
except RuntimeError as e:
    print(f"verdict: hazard shown, step {step}: {str(e).splitlines()[0][:120]}")
