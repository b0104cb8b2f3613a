# TL001: a compiled model held in a dict, called by subscript in a thread.
import threading

import torch

from common import verdict

models = {"a": torch.compile(torch.nn.Linear(8, 8).cuda(), mode="reduce-overhead"), "b": torch.nn.Linear(8, 8)}
x = torch.randn(8, 8, device="cuda")


def serve(k, v):
    for _ in range(3):
        models[k](v)


t = threading.Thread(target=serve, args=("a", x))
t.start()
t.join()
verdict()
