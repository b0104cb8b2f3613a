import threading

import torch


def step(x):
    return x * 2


compiled = torch.compile(step, mode="reduce-overhead")


def worker(xs):
    for x in xs:
        run_one(x)


def run_one(x):
    return compiled(x)


threads = [threading.Thread(target=worker, args=([1, 2],)) for _ in range(2)]
for t in threads:
    t.start()
