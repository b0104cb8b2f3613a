"""Two worker threads, each compiling and calling the same model."""
import threading

import torch


def step(x):
    return torch.sin(x) + torch.cos(x)


compiled = torch.compile(step, mode="reduce-overhead")


def worker(n):
    for _ in range(n):
        compiled(torch.randn(8))


threads = [threading.Thread(target=worker, args=(10,)) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
