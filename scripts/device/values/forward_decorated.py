# TL001: forward decorated with torch.compile; the instance is called in a thread.
import threading

import torch

from common import verdict


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    @torch.compile(mode="reduce-overhead")
    def forward(self, v):
        return self.lin(v)


net = Net().cuda()
x = torch.randn(8, 8, device="cuda")
serve_fn = net


def serve(v):
    for _ in range(3):
        serve_fn(v)


t = threading.Thread(target=serve, args=(x,))
t.start()
t.join()
verdict()
