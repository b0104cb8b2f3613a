# fullgraph=True on code with a graph break: the Unsupported error's traceback.
import torch

@torch.compile(fullgraph=True)
def f(x):
    print("hi")
    return x + 1

f(torch.randn(3))
