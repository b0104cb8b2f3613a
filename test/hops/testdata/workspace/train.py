"""A training script, as torchlsp sees it in the editor."""
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return F.relu(checkpoint(self.proj, x))


def worker(model):
    compiled = torch.compile(model, mode="reduce-overhead")
    return compiled(torch.ones(2, 4))


def main():
    model = Model()
    threads = [threading.Thread(target=worker, args=(model,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return torch.cuda.is_available()
