"""A training script whose torch lives only on the target."""

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.fc(x))


x = torch.zeros(2, 4)
flat = x.view(8)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
