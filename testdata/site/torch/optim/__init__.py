"""Optimizers."""
from .optimizer import Optimizer
from .adamw import AdamW
import torch.optim.adamw as _adamw_mod
