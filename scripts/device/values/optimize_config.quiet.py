# quiet: torch._dynamo.optimize("inductor"), CUDA graphs left off.
import threading

import torch
import torch._dynamo
import torch._inductor.config

from common import verdict


fast = torch._dynamo.optimize("inductor")(torch.nn.Linear(8, 8).cuda())
x = torch.randn(8, 8, device="cuda")
serve_fn = fast


def serve(v):
    for _ in range(3):
        serve_fn(v)


t = threading.Thread(target=serve, args=(x,))
t.start()
t.join()
verdict()
