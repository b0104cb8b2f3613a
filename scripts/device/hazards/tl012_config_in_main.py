# TL012: an override set on the main thread, compiled code run by a worker
# thread. Where config overrides are per thread (a ContextVar), the worker
# reads the default; where they are process-wide (torch 2.11), it reads 64.
import threading

import torch
import torch._dynamo.config

torch._dynamo.config.recompile_limit = 64
seen = {}


@torch.compile
def step(x):
    return x + 1


def worker():
    seen["recompile_limit"] = torch._dynamo.config.recompile_limit
    step(torch.ones(2, device="cuda"))


t = threading.Thread(target=worker)
t.start()
t.join()
print("worker sees recompile_limit =", seen["recompile_limit"])
