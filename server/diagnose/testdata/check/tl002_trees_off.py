import threading

import torch
from torch._inductor import config

config.triton.cudagraph_trees = False

model = torch.compile(lambda x: x * 2, mode="reduce-overhead")


def worker():
    model(1)


threading.Thread(target=worker).start()
