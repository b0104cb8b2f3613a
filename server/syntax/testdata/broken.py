import torch
from torch import (nn,
def f(x:
    return torch.nn.functional.
class C(
    x = "unterminated
    y = f"{x!r:>10} {
lambda: (1, [2, {3: 4
@decorator
