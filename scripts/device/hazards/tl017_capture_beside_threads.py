# TL017, second shape: a manual CUDA graph capture in the default
# capture_error_mode ("global") while another thread runs compiled code:
# in that mode CUDA forbids unsafe calls (a synchronization, an
# allocation) in every thread while the capture runs, so the other
# thread's work, or the capture, fails ("operation not permitted when
# stream is capturing"). MODE selects the mode (the .fixed twin passes
# "thread_local").
import os
import threading
import time

import torch

MODE = os.environ.get("CAPTURE_MODE", "global")
step = torch.compile(torch.nn.Linear(256, 256).cuda())
step(torch.randn(64, 256, device="cuda"))  # compiled before the threads start
errors, stop = [], threading.Event()


def serve():
    # Not torch.randn on the GPU: its generator is the capture's too, and
    # a draw from another thread during a capture fails in either mode
    # ("Offset increment outside graph capture").
    x = torch.ones(64, 256, device="cuda")
    while not stop.is_set():
        try:
            step(x * 0.5).sum().item()  # allocates and synchronizes
        except Exception as e:
            errors.append(f"worker: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            return


worker = threading.Thread(target=serve)
worker.start()
eager = torch.nn.Linear(256, 256).cuda()
static_in = torch.randn(64, 256, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        eager(static_in)
torch.cuda.current_stream().wait_stream(side)
captures = 0
deadline = time.time() + 5
while time.time() < deadline and not errors:
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g, capture_error_mode=MODE):
            out = eager(static_in)
            for _ in range(50):
                out = torch.relu(out) * 0.5 + out
        captures += 1
    except Exception as e:
        errors.append(f"capture: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
stop.set()
worker.join()
if errors:
    print(f"verdict: hazard shown ({MODE}), {captures} captures before: {errors[0]}")
else:
    print(f"verdict: no failure ({MODE}), {captures} captures beside the worker")
