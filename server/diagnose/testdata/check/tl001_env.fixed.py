import os

os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"

import threading

import torch


class Worker(threading.Thread):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def run(self):
        self.infer(1)

    def infer(self, x):
        return compiled(x)


compiled = torch.compile(lambda x: x + 1)
Worker(None).start()
