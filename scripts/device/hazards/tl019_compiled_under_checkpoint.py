# TL019: a compiled block run under activation checkpointing. The forward
# runs the compiled code on the main thread; the recomputation runs it
# again on autograd's backward thread, where Dynamo's guards on global
# state (num_threads) fail and it recompiles; a recompiled graph may save
# other tensors than the forward did: "torch.utils.checkpoint: A
# different number of tensors was saved during the original forward and
# recomputation" (pytorch issue 166926, anemoi-core 1330).
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
compiled = torch.compile(block)
x = torch.randn(64, 256, device="cuda", requires_grad=True)
error = None
for step in range(3):
    try:
        y = checkpoint(compiled, x, use_reentrant=False)
        y.sum().backward()
    except CheckpointError as e:
        error = f"step {step}: CheckpointError: {str(e).splitlines()[0]}"
        break
torch.cuda.synchronize()
if error:
    print(f"verdict: hazard shown, {error}")
elif recompiles:
    print(f"verdict: hazard shown, the recomputation recompiled ({len(recompiles)}): {recompiles[0][:160]}")
else:
    print("verdict: no recompile in the recomputation, no CheckpointError")
