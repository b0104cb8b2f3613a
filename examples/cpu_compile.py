"""A small model compiled on the CPU, with a graph break.

`torchlsp explain` runs it on the target with Dynamo's own reporting and
puts each graph break and recompile on the line that causes it; it needs
no GPU, only a torch 2.x (and a C++ compiler for Inductor).
"""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x).relu()
        print("norm", float(y.norm()))  # a graph break: Python reads a tensor's value
        return y * 2


model = Net()
compiled = torch.compile(model)


def main() -> None:
    for batch in (4, 8, 12):
        compiled(torch.randn(batch, 16))


if __name__ == "__main__":
    main()
