"""An entry point that never calls what it compiles."""
import time

import torch


def f(x):
    return x + 1


g = torch.compile(f)
time.sleep(60)
