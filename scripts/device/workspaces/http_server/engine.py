import torch
from torch import nn


class Engine:
    def __init__(self):
        self.fast = torch.compile(nn.Linear(64, 64).cuda(), mode="reduce-overhead")

    def __call__(self, x):
        with torch.no_grad():
            y = self.fast(x)
        torch.cuda.synchronize()
        return float(y.sum())
