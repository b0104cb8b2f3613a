import torch
from torch._inductor import config

config.triton.cudagraph_trees = False
config.max_autotune = True
fn = torch.compile(lambda x: x, options={"triton.cudagraphs": False}, mode=None)
with config.patch(max_autotune=True):
    pass
torch.compile(lambda x: x, mode="reduce-overhead")
print(config.get_hash(), config.triton)
