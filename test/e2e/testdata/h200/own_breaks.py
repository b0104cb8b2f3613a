"""A step with two deliberate graph breaks, on the lines marked."""
import torch


def make_x(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 8, generator=g)
    return (x.cuda() if torch.cuda.is_available() else x,)


def step(x):
    y = torch.sin(x) * 2
    print("step", tuple(y.shape))  # graph break 1
    s = y.sum().item()  # graph break 2
    return y + s


# torchlsp: inputs=make_x
compiled_step = torch.compile(step)
