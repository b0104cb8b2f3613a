# TL019's fix: compile the function that calls checkpoint, so Dynamo
# wraps the checkpointed region in its higher-order op and the backward
# replays the compiled backward instead of running compiled code again on
# autograd's thread (torch/utils/checkpoint.py, "Note: [torch.compile and
# checkpoint]").
import logging

import torch
from torch.utils.checkpoint import CheckpointError, checkpoint

recompiles = []


class Catch(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if "Recompiling" in msg or "GLOBAL_STATE" in msg:
            recompiles.append(" ".join(msg.split()))


torch._logging.set_logs(recompiles=True)
logging.getLogger("torch").addHandler(Catch())

block = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()


@torch.compile
def run(x):
    return checkpoint(block, x, use_reentrant=False)


x = torch.randn(64, 256, device="cuda", requires_grad=True)
error = None
for step in range(3):
    try:
        y = run(x)
        y.sum().backward()
    except CheckpointError as e:
        error = f"step {step}: CheckpointError: {str(e).splitlines()[0]}"
        break
torch.cuda.synchronize()
if error:
    print(f"verdict: fix failed, {error}")
elif recompiles:
    print(f"verdict: fix recompiled ({len(recompiles)}): {recompiles[0][:160]}")
else:
    print("verdict: fixed, no recompile and no CheckpointError in 3 steps")
