"""Worker threads, each compiling a model with CUDA graphs and calling it.

The pattern of examples/threaded_compile.py: CUDA graph trees keep their
state in the thread that first used them, so torch 2.x fails in the others.
"""
import threading

import torch
import torch.nn as nn


def worker(model: nn.Module) -> None:
    compiled = torch.compile(model, mode="reduce-overhead")
    compiled(torch.randn(8, 64, device="cuda"))


model = nn.Linear(64, 64).cuda()
threads = [threading.Thread(target=worker, args=(model,)) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
