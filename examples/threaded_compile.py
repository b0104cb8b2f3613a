"""Compile a model with CUDA graphs and call it from hand-made threads.

This is the pattern that fails on torch 2.x: CUDAGraph Trees keep their state
in thread-local storage filled only in the thread that imported them.
"""
import threading

import torch
import torch.nn as nn
from torch._inductor import config as inductor_config
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return checkpoint(self.proj, x, use_reentrant=False)


def worker(model: nn.Module, results: list, index: int) -> None:
    compiled = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(8, 64, device="cuda")
    results[index] = compiled(x)


def main() -> None:
    inductor_config.triton.cudagraph_trees = True
    model = Block(64).cuda()
    results = [None, None]
    threads = [threading.Thread(target=worker, args=(model, results, i)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
