# torch.compile(mode="reduce-overhead") called from two threading.Thread workers.
import threading
import torch

def f(x, y):
    return torch.relu(x @ y) + 1

cf = torch.compile(f, mode="reduce-overhead")

def worker():
    x = torch.randn(16, 16, device="cuda")
    for _ in range(3):
        cf(x, x)

ts = [threading.Thread(target=worker) for _ in range(2)]
for t in ts:
    t.start()
for t in ts:
    t.join()
