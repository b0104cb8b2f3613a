"""A user's training script, as torchlsp sees it in the editor."""
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._inductor import config as inductor_config
from torch.utils.checkpoint import checkpoint
from torch.optim import AdamW


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        label = "Größe ≥ 1 — 𝛼"; act = F.relu
        y = checkpoint(self.proj, x)
        return F.relu(y)


def worker(model):
    compiled = torch.compile(model, mode="reduce-overhead")
    return compiled(torch.add(torch.ones(2), 1))


def main():
    inductor_config.triton.cudagraph_trees = False
    model = Model()
    opt = AdamW(model.parameters())
    t = threading.Thread(target=worker, args=(model,))
    t.start()
    t.join()
    return torch.cuda.is_available(), opt, torch._C._is_key_in_tls("x")
