# quiet: the later item assignment turns CUDA graphs off.
import threading

import torch

from common import verdict

opts = {}
opts["triton.cudagraphs"] = True
opts["triton.cudagraphs"] = False
model = torch.compile(torch.nn.Linear(8, 8).cuda(), options=opts)
x = torch.randn(8, 8, device="cuda")
serve_fn = model


def serve(v):
    for _ in range(3):
        serve_fn(v)


t = threading.Thread(target=serve, args=(x,))
t.start()
t.join()
verdict()
