# pytorch issue 135892's script: a module compiled with
# mode="max-autotune" (CUDA graphs on), first called under
# torch.inference_mode() and trained afterwards. On torch 2.11 it fails
# from the gradients accumulated across its steps (TL020), with or
# without the inference calls (docs/HAZARDS.md).
import traceback

import torch

layer = torch.nn.Linear(32, 64).bfloat16().cuda()
x = torch.randn(8, 32).bfloat16().cuda()
layer = torch.compile(layer, mode="max-autotune")
with torch.inference_mode():
    for _ in range(3):
        res = layer(x)
try:
    for step in range(3):
        res = layer(x)
        res.mean().backward()
    torch.cuda.synchronize()
    print("verdict: no error, 3 training steps after the inference calls")
except Exception as e:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/torch/" in f.filename]
    where = f"{frames[-1].filename.split('/torch/')[-1]}:{frames[-1].lineno}" if frames else "?"
    traceback.print_exc()
    print(f"verdict: hazard shown, step {step}: {type(e).__name__} at torch/{where}: {str(e).splitlines()[0][:140]}")
