"""A batch server that keeps every output of its compiled step."""
import torch


@torch.compile(mode="reduce-overhead")
def step(x):
    return torch.sin(x) + torch.cos(x)


def serve(batches):
    outs = []
    for x in batches:
        outs.append(step(x))
    return outs
