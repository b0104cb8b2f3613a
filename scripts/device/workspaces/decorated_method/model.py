import torch


class Stepper:
    @torch.compile(mode="reduce-overhead")
    def step(self, x):
        return torch.relu(x * 2 + 1)
