# Run as `python3 -m runpy_main`: frames from <frozen runpy>, then torch's.
import torch

torch.ones(2).view(3)
