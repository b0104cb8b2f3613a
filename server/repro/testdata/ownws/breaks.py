"""A step with two deliberate graph breaks."""
import torch


def make_x(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4 + seed % 2, 8, generator=g),)


def step(x):
    y = torch.sin(x) * 2
    print("step", tuple(y.shape))
    s = y.sum().item()
    return y + s

# torchlsp: inputs=make_x
compiled_step = torch.compile(step)
