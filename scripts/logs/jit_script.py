# A TorchScript compile error: torch.jit's own frames, and the user's line
# it points at.
import torch

def scale(x: torch.Tensor, factor):
    return x * factor.missing

torch.jit.script(scale)
