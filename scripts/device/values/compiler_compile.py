# TL001: torch.compiler.compile(mode="reduce-overhead").
import threading

import torch

from common import verdict

model = torch.compiler.compile(torch.nn.Linear(8, 8).cuda(), mode="reduce-overhead")
x = torch.randn(8, 8, device="cuda")
serve_fn = model


def serve(v):
    for _ in range(3):
        serve_fn(v)


t = threading.Thread(target=serve, args=(x,))
t.start()
t.join()
verdict()
