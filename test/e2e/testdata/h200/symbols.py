import torch
import torch.nn as nn
import torch._inductor.compile_fx
import torch._inductor.config
from torch.utils.checkpoint import checkpoint

torch.compile
nn.Linear
torch._inductor.compile_fx.compile_fx
checkpoint
torch._inductor.config.triton.cudagraph_trees
