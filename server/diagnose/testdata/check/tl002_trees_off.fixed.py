import threading

import torch
from torch._inductor import config

config.triton.cudagraphs = False

model = torch.compile(lambda x: x * 2)


def worker():
    model(1)


threading.Thread(target=worker).start()
