# TL001: a compiled model handed to a worker's parameter with the thread's args.
import threading

import torch

from common import verdict

compiled = torch.compile(torch.nn.Linear(8, 8).cuda(), mode="max-autotune")
x = torch.randn(8, 8, device="cuda")


def worker(fn, v):
    for _ in range(3):
        fn(v)


t = threading.Thread(target=worker, args=(compiled, x))
t.start()
t.join()
verdict()
