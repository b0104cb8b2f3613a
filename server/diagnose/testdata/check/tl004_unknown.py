import torch
from torch._inductor import config

config.triton.cudagraph_tree = False
config.max_autotun = True
fn = torch.compile(lambda x: x, options={"triton.cudagraphz": False}, mode=None)
with config.patch(max_autotunes=True):
    pass
torch.compile(lambda x: x, mode="reduce-overheads")
