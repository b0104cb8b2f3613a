# Autograd's anomaly mode: the forward call's traceback printed as a warning,
# then the backward error.
import torch

def step(x):
    y = x.exp()
    return (y / y.sum()).log().sum()

x = torch.zeros(3, requires_grad=True)
with torch.autograd.detect_anomaly():
    x.data.fill_(float("inf"))
    step(x).backward()
