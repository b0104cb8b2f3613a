import torch

torch.nn.functional.
