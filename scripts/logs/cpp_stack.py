# TORCH_SHOW_CPP_STACKTRACES=1: C++ frames after the Python ones.
import torch

torch.ones(2, 3) @ torch.ones(2, 3)
