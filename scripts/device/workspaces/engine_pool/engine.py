import torch
from torch import nn


class Engine:
    def __init__(self):
        self.net = torch.compile(nn.Linear(64, 64).cuda(), mode="reduce-overhead")

    def predict(self, x):
        with torch.no_grad():
            y = self.net(x)
        torch.cuda.synchronize()
        return float(y.sum())
