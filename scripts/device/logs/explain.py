# torch._dynamo.explain's report on a function with graph breaks.
import torch

def step(x):
    y = x.sin()
    print("value")
    return y.cos() + y.sum().item()

print(torch._dynamo.explain(step)(torch.randn(8)))
