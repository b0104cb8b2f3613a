# TL001: @torch._dynamo.optimize(backend="cudagraphs").
import torch
import torch._dynamo
import threading

from common import verdict


@torch._dynamo.optimize(backend="cudagraphs")
def step(v):
    return v * 2 + 1


x = torch.randn(8, 8, device="cuda")
serve_fn = step


def serve(v):
    for _ in range(3):
        serve_fn(v)


t = threading.Thread(target=serve, args=(x,))
t.start()
t.join()
verdict()
