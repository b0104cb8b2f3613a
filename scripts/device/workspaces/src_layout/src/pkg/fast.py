import torch
from torch import nn

step = torch.compile(nn.Linear(64, 64).cuda(), options={"triton.cudagraphs": True})
