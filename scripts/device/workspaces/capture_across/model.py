import torch


def load_fn():
    def f(x):
        return x.sin() * 2

    return torch.compile(f)
